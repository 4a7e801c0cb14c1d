"""The embedded toy Long-CLIP: the shipped file, and the pretraining that rebuilds it (toy.py, pretrain.py)."""

import dataclasses
import hashlib

import pytest
import torch

import hnclip_core.toy.pretrain as pretrain_module
from hnclip_core.longclip import KEEP_POSITIONS, LONG_CONTEXT, load_longclip, stretch_positional_embedding
from hnclip_core.toy import TOY_ARCHITECTURE, TOY_RECIPE, ensure_toy_model, shipped_toy_path
from hnclip_core.toy.pretrain import PretrainRecipe, checkpoint_record, pretrain

MICRO = PretrainRecipe(TOY_ARCHITECTURE, clip_steps=3, long_steps=3, batch_size=8, warmup_steps=1)


def test_shipped_toy_matches_its_record_and_loads_strictly():
    path = ensure_toy_model()
    assert path == shipped_toy_path() and path.stat().st_size < 25 * 2**20
    record = checkpoint_record(path)
    assert hashlib.sha256(path.read_bytes()).hexdigest() == record["sha256"]
    assert record["recipe"] == TOY_RECIPE.as_dict() and record["recipe_digest"] == TOY_RECIPE.digest()
    assert len(record["long_stage_losses"]) == TOY_RECIPE.long_steps
    assert len(record.get("token_stage_losses", [])) == TOY_RECIPE.token_steps
    model, _, tokenizer = load_longclip(path)  # strict: a missing or extra tensor raises
    assert tokenizer.context_length == LONG_CONTEXT
    assert all(p.dtype == torch.float32 for p in model.parameters())
    # s is stored in fp32: exactly the value the last probe of the pretraining measured
    assert model.logit_scale.exp().item() == pytest.approx(record["probes"][-1]["logit_scale"], rel=1e-6)


def test_a_corrupted_shipped_toy_is_refused(monkeypatch, tmp_path):
    path = shipped_toy_path()
    fake = tmp_path / path.name
    fake.write_bytes(b"version https://git-lfs.github.com/spec/v1\n")
    fake.with_suffix(".json").write_text(path.with_suffix(".json").read_text())
    monkeypatch.setattr("hnclip_core.toy.model.ASSETS", tmp_path)
    with pytest.raises(ValueError, match="SHA-256"):
        ensure_toy_model()


def _weights(path):
    return torch.load(path, weights_only=True)


@pytest.mark.slow
def test_micro_recipe_is_deterministic_resumable_and_long_clip_shaped(tmp_path):
    path = pretrain(MICRO, tmp_path / "toy.pt", save_every=2, progress=False)
    model, _, tokenizer = load_longclip(path)
    assert tokenizer.context_length == LONG_CONTEXT and model.visual.image_size == (64, 64)
    report = checkpoint_record(path)
    assert len(report["clip_stage_losses"]) == 3 and len(report["long_stage_losses"]) == 3
    clip_stage, _, short_tokenizer = load_longclip(tmp_path / "toy-clip-stage.pt")
    assert short_tokenizer.context_length == 77
    # rows 0-19 were trained in the CLIP stage, then frozen (as Long-CLIP keeps OpenAI's); rows 20+ moved
    stage1, stage2 = clip_stage.positional_embedding.detach(), model.positional_embedding.detach()
    assert torch.equal(stage2[:KEEP_POSITIONS], stage1[:KEEP_POSITIONS])
    assert not torch.equal(stage2[KEEP_POSITIONS:], stretch_positional_embedding(stage1)[KEEP_POSITIONS:])

    again = pretrain(MICRO, tmp_path / "again.pt", save_every=2, progress=False)
    first, second = _weights(path), _weights(again)
    assert all(torch.equal(first[k], second[k]) for k in first)  # deterministic on the CPU

    # interrupted in the Long-CLIP stage, then resumed: the same weights as an uninterrupted run
    original = pretrain_module.scene_batch

    def interrupt(recipe, stage, step, preprocess):
        if (stage, step) == (2, 2):
            raise KeyboardInterrupt
        return original(recipe, stage, step, preprocess)

    pretrain_module.scene_batch = interrupt
    try:
        with pytest.raises(KeyboardInterrupt):
            pretrain(MICRO, tmp_path / "resumed.pt", save_every=1, progress=False)
    finally:
        pretrain_module.scene_batch = original
    resumed = _weights(pretrain(MICRO, tmp_path / "resumed.pt", save_every=1, progress=False))
    assert all(torch.equal(first[k], resumed[k]) for k in first)


def test_a_saved_state_of_another_recipe_is_not_resumed(tmp_path):
    pretrain(MICRO, tmp_path / "toy.pt", progress=False)
    with pytest.raises(ValueError, match="another recipe"):
        pretrain(dataclasses.replace(MICRO, seed=1), tmp_path / "toy.pt", progress=False)


def test_every_step_draws_new_scenes_in_many_voices():
    preprocess = lambda image: torch.zeros(1)  # noqa: E731 - images are not looked at here
    _, first = pretrain_module.scene_batch(MICRO, 2, 0, preprocess)
    _, second = pretrain_module.scene_batch(MICRO, 2, 1, preprocess)
    _, repeat = pretrain_module.scene_batch(MICRO, 2, 0, preprocess)
    assert first == repeat and not set(first) & set(second)
    assert all(len(c.split()) > 40 for c in first)


@pytest.mark.slow
def test_the_shipped_toy_measures_as_its_record_says():
    """The fp16 file reproduces the zero-shot regime its fp32 weights were probed at (up to a query or two), on the
    benchmark through the camera it was probed through."""
    from hnclip_core.toy.regime import benchmark_tensors, zero_shot_regime
    from hnclip_core.toy.synthetic import SyntheticConfig

    path = ensure_toy_model()
    record = checkpoint_record(path)
    probe = record["probes"][-1]
    model, _, tokenizer = load_longclip(path)
    probed = SyntheticConfig(camera=record.get("probe_camera", "plain"))  # records before the field: plain
    measured = zero_shot_regime(model, benchmark_tensors("train", probed), benchmark_tensors("test", probed),
                                tokenizer)
    for key in ("solved_share", "solved_share_without_twins", "twin_error_share", "own_family_top1",
                "mean_pairwise", "mean_hardest"):
        assert measured[key] == pytest.approx(probe[key], abs=2e-3), key
    for key in ("t2i_r1", "i2t_r1"):
        assert measured[key] == pytest.approx(probe[key], abs=0.2), key  # 0.1 point is one of 1,000 queries
    assert probe["solved_share"] >= 0.5 and probe["own_family_top1"] >= 0.95  # the strong initialisation


def test_the_detail_gap_leaves_sizes_places_and_relations_unsaid():
    """At detail_rate 0 no pretraining caption names a size, a grid place or a relation; shape, colour and
    background are still named. At rate 1 the captions are those the shipped toy was pretrained on."""
    import numpy as np

    from hnclip_core.toy.synthetic import SyntheticConfig, sample_scene
    from hnclip_core.toy.voices import REGION_NOUNS, SIZE_WORDS, varied_long_caption, varied_short_caption

    unsaid = {w for words in SIZE_WORDS.values() for w in words} | {"above", "below", "left", "right"}
    unsaid |= {n for nouns in REGION_NOUNS.values() for n in nouns if n not in ("center", "middle")}
    for seed in range(30):
        scene = sample_scene(np.random.default_rng(seed), SyntheticConfig())
        for caption in (varied_long_caption(scene, np.random.default_rng(seed), 0.0),
                        varied_short_caption(scene, np.random.default_rng(seed), 0.0)):
            padded = f" {caption.lower().replace(',', ' ').replace('.', ' ')} "
            assert not [w for w in unsaid if f" {w} " in padded], caption
            assert any(o.shape in caption and o.colour in caption for o in scene.objects)
        full = varied_long_caption(scene, np.random.default_rng(seed), 1.0)
        assert full == varied_long_caption(scene, np.random.default_rng(seed))
        assert all(o.shape in full and o.colour in full for o in scene.objects)


def test_a_recipe_using_no_later_field_keeps_its_digest_and_a_fixed_s_stays_put(tmp_path):
    assert not {"detail_rate", "long_detail_rate"} & set(TOY_RECIPE.as_dict())
    assert shipped_toy_path().name.endswith(f"{TOY_RECIPE.digest()}.pt")
    gap = dataclasses.replace(MICRO, detail_rate=0.1, learn_logit_scale=False)
    assert gap.as_dict()["detail_rate"] == 0.1 and gap.digest() != MICRO.digest()
    model, _, _ = load_longclip(pretrain(gap, tmp_path / "toy.pt", progress=False))
    assert model.logit_scale.exp().item() == pytest.approx(100.0)


def test_token_alignment_measures_both_rankings_and_leaves_the_model_as_it_was(tiny_checkpoint):
    from hnclip_core.features import encode_batch
    from hnclip_core.toy.regime import benchmark_tensors, token_alignment
    from hnclip_core.toy.synthetic import SyntheticConfig

    data = benchmark_tensors("train", SyntheticConfig(seed=3, num_train_families=2, num_test_families=1,
                                                      num_val_families=1, image_size=32))
    model, _, tokenizer = load_longclip(tiny_checkpoint)
    before = {k: v.clone() for k, v in model.state_dict().items()}
    reading = token_alignment(model, data, tokenizer, micro_batch=8, num_batches=1)

    rows = torch.randperm(len(data.captions), generator=torch.Generator().manual_seed(0))[:8]
    with torch.no_grad():
        batch = encode_batch(model.train(), data.images[rows], tokenizer([data.captions[i] for i in rows]))
    scores = torch.nn.functional.normalize(batch.image_features, dim=-1) @ torch.nn.functional.normalize(
        batch.text_features, dim=-1).t()
    others = scores.masked_fill(torch.eye(8, dtype=torch.bool), float("-inf")).max(dim=1).values
    assert reading["global_top1"] == pytest.approx(float((scores.diag() > others).float().mean()))
    assert reading["global_margin"] == pytest.approx(float((scores.diag() - others).mean()), abs=1e-6)
    for key in ("token_i2t_top1", "token_t2i_top1"):
        assert 0 <= reading[key] <= 1
    assert reading["grad_norm_ratio"] > 0 and -1 <= reading["grad_cosine"] <= 1 and reading["loss_tok"] > 0
    assert all(p.grad is None for p in model.parameters())
    assert all(torch.equal(before[k], v) for k, v in model.state_dict().items())


def test_the_token_stage_continues_a_toy_of_the_first_two_stages_as_a_run_from_scratch_would(tmp_path):
    tokens = dataclasses.replace(MICRO, token_steps=2, token_weight=0.3, token_warmup_steps=1)
    assert tokens.without_token_stage() == MICRO and tokens.digest() != MICRO.digest()
    scratch = pretrain(tokens, tmp_path / "scratch.pt", save_every=1, progress=False)
    report = checkpoint_record(scratch)
    assert len(report["token_stage_losses"]) == 2 and all(len(pair) == 2 for pair in report["token_stage_losses"])
    # the first two stages alone, then the token stage from their file (as from the toy shipped before it)
    base = pretrain(MICRO, tmp_path / "base.pt", progress=False)
    continued = pretrain(tokens, tmp_path / "continued.pt", progress=False, continue_from=base)
    first, second = _weights(scratch), _weights(continued)
    assert all(torch.equal(first[k], second[k]) for k in first)
    assert checkpoint_record(continued)["continued_from"]["file"] == "base.pt"
    held, before = load_longclip(continued)[0].logit_scale, load_longclip(base)[0].logit_scale
    assert torch.equal(held, before)  # s is held through the token stage
    moved = _weights(base)
    assert any(not torch.equal(moved[k], second[k]) for k in moved)
    with pytest.raises(ValueError, match="stages 1–2"):
        pretrain(dataclasses.replace(tokens, seed=1), tmp_path / "other.pt", progress=False, continue_from=base)


CONED = dataclasses.replace(MICRO, caption_cone=0.75, learn_logit_scale=False)


@pytest.mark.slow
def test_the_caption_cone_is_held_in_plain_clip_weights(tmp_path):
    """A toy pretrained under a caption cone is a plain CLIP in Long-CLIP's format (strict load) whose captions put
    α² of their squared norm on an axis no image uses, so images meet captions at β·cos and captions crowd."""
    from hnclip_core.toy.pretrain import scene_batch

    model, preprocess, tokenizer = load_longclip(pretrain(CONED, tmp_path / "toy.pt", progress=False))
    images, captions = scene_batch(CONED, 2, 0, preprocess)
    with torch.no_grad():
        texts = torch.nn.functional.normalize(model.encode_text(tokenizer(captions)), dim=-1)
        image_features = torch.nn.functional.normalize(model.encode_image(images), dim=-1)
    shares = texts[:, -1] ** 2
    assert shares.mean().item() == pytest.approx(0.75, abs=0.03) and shares.min() > 0.6
    assert torch.all(image_features[:, -1] == 0)
    off_diagonal = (texts @ texts.t()).masked_select(~torch.eye(len(texts), dtype=torch.bool))
    assert off_diagonal.min() > 0.6  # every caption pair shares the cone's α²
    assert model.logit_scale.exp().item() == pytest.approx(100.0)  # s held at CLIP's clamp
    plain = pretrain(MICRO, tmp_path / "plain.pt", progress=False)
    assert _weights(plain).keys() == _weights(tmp_path / "toy.pt").keys()


def test_the_long_clip_stage_stops_at_the_first_probe_that_meets_the_targets(tmp_path, monkeypatch):
    import hnclip_core.toy.regime as regime

    readings = iter([{"solved_share": 0.3}, {"solved_share": 0.6}])
    monkeypatch.setattr(regime, "benchmark_tensors", lambda split: split)
    monkeypatch.setattr(regime, "zero_shot_regime", lambda model, train, test, tokenizer: next(readings))
    monkeypatch.setattr(regime, "meets_regime_targets", lambda probe: probe["solved_share"] >= 0.5)
    recipe = dataclasses.replace(MICRO, long_steps=6, target_probe_every=2)
    report = checkpoint_record(pretrain(recipe, tmp_path / "toy.pt", progress=False))
    assert report["stopped_on_targets"] == {"stage": 2, "step": 4}
    assert len(report["long_stage_losses"]) == 4
    assert [p["step"] for p in report["validation_probes"]] == [2, 4]


def test_regime_targets_test_every_reading_they_name():
    from hnclip_core.toy.regime import REGIME_TARGETS, meets_regime_targets

    inside = {name: (low + high) / 2 for name, (low, high) in REGIME_TARGETS.items()}
    assert meets_regime_targets(inside)
    for name, (low, _) in REGIME_TARGETS.items():
        assert not meets_regime_targets({**inside, name: low - 0.01}), name
