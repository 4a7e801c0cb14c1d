"""The plug-and-play frameworks (hnclip_core/frameworks): each loss against a naive reference with explicit loops
(and a deliberately wrong variant that must differ), adapters that train only themselves, and every framework
training, evaluating, saving and reloading on the synthetic benchmark and on real-format (DOCCI + GOAL JSON) data."""

import dataclasses
import json
import math

import open_clip
import pytest
import torch
import torch.nn.functional as F

from hnclip_core.data import load_pairs
from hnclip_core.frameworks import FRAMEWORKS, build_framework
from hnclip_core.frameworks.finelip import cross_modal_scores, hinge_loss
from hnclip_core.frameworks.goal import box_patch_mask, goal_total, masked_mean, region_alignment_loss
from hnclip_core.frameworks.segments import SegmentFileError, read_goal_segments
from hnclip_core.frameworks.structxlip import (
    annealed_weight,
    filter_visual_terms,
    local_structure_loss,
    rgb_structure_loss,
    word_windows,
)
from hnclip_core.longclip import LONG_CONTEXT, load_longclip_state_dict
from hnclip_core.replication.experiment import Experiment, run_directory
from hnclip_core.toy.synthetic import METADATA_FILE, SyntheticConfig, write_synthetic_benchmark
from hnclip_core.train import TrainConfig, train

TOKENIZER = open_clip.SimpleTokenizer(context_length=LONG_CONTEXT)


def tiny_config(checkpoint, data_root, tmp_path, **changes):
    values = dict(
        checkpoint=str(checkpoint), dataset="synthetic", data_root=str(data_root), epochs=1, micro_batch_size=4,
        accumulation_steps=2, lr=1e-3, warmup_steps=1, eval_batch_size=16, eval_ks=(1, 5), gamma=0.5,
        token_weight=0.0, output_dir=str(tmp_path / "run"), progress=False, device="cpu",
    )
    values.update(changes)
    return TrainConfig(**values)


def train_with(config, framework="longclip", segment_file=None, caption_augmentation="none", **kwargs):
    """``train`` with a framework's hooks, as ``Experiment.run`` builds them."""
    hooks = build_framework(framework, config.dataset, segment_file, caption_augmentation, config.seed)
    return train(config, hooks=hooks, **kwargs)


# ---------------------------------------------------------------------------------------------- references
def test_goal_terms_match_loops():
    torch.manual_seed(0)
    # box → patches: a 40×20 image is resized to 64×32 (short side 32) and centre-cropped to 32×32
    mask = box_patch_mask((10, 0, 30, 9), (40, 20), input_size=32, patch_size=8).view(4, 4)
    scale, left = 32 / 20, (40 * 32 / 20 - 32) / 2
    expected = torch.zeros(4, 4, dtype=torch.bool)
    for row in range(4):
        for col in range(4):
            x0, y0 = col * 8, row * 8  # does the patch overlap the box mapped into the crop?
            bx1, bx2 = 10 * scale - left, 30 * scale - left
            by1, by2 = 0 * scale, 9 * scale
            expected[row, col] = x0 < bx2 and x0 + 8 > bx1 and y0 < by2 and y0 + 8 > by1
    assert torch.equal(mask, expected)

    states, spans = torch.randn(3, 6, 5), torch.rand(3, 6) > 0.5
    spans[:, 0] = True
    pooled = masked_mean(states, spans)
    for b in range(3):
        rows = [states[b, i] for i in range(6) if spans[b, i]]
        torch.testing.assert_close(pooled[b], sum(rows) / len(rows))

    a, t = torch.randn(4, 8), torch.randn(4, 8)
    naive = sum((sum(a[i, k] * t[i, k] for k in range(8)) / (a[i].norm() * t[i].norm()) - 1) ** 2 for i in range(4)) / 4
    torch.testing.assert_close(region_alignment_loss(a, t), naive)
    wrong = sum((1 - sum(a[i, k] * t[i, k] for k in range(8)) / (a[i].norm() * t[i].norm())) for i in range(4)) / 4
    assert not torch.isclose(region_alignment_loss(a, t), wrong)
    assert goal_total(1.0, 2.0, 3.0, 4.0) == 1.0 + 0.5 * 2.0 + 3.0 + 4.0


def test_structxlip_terms_match_loops():
    torch.manual_seed(1)
    batch, top_k, dim = 3, 2, 6
    crops, valid = torch.randn(batch * top_k, dim), torch.tensor([[True, True], [True, False], [False, False]])
    windows = [torch.randn(4, dim), torch.randn(2, dim), torch.randn(3, dim)]
    scale = 10.0

    def cos(u, v):
        return sum(u[k] * v[k] for k in range(dim)) / (u.norm() * v.norm())

    per_image = []
    all_valid = [c for c in range(batch * top_k) if valid.view(-1)[c]]
    for b in range(batch):
        own = [b * top_k + k for k in range(top_k) if valid[b, k]]
        if not own:
            continue
        terms = []
        for w in windows[b]:
            log_all = math.log(sum(math.exp(scale * cos(w, crops[c])) for c in all_valid))
            log_own = math.log(sum(math.exp(scale * cos(w, crops[c])) for c in own))
            terms.append(-(log_own - log_all))
        per_image.append(sum(terms) / len(terms))
    reference = sum(per_image) / len(per_image)
    assert local_structure_loss(windows, crops, valid, scale).item() == pytest.approx(reference, rel=1e-5)
    # wrong variant: every crop of the batch counted as a positive → a different (zero) loss
    assert local_structure_loss(windows, crops, torch.ones_like(valid), scale).item() != pytest.approx(reference)

    a, e = torch.randn(4, dim), torch.randn(4, dim)
    assert rgb_structure_loss(a, e).item() == pytest.approx(sum(1 - cos(a[i], e[i]).item() for i in range(4)) / 4)
    # StructXLIP's schedule: full weight in epochs 0-1, cosine down to the floor at epoch 8, flat after
    assert annealed_weight(0.25, 0, 0.7) == annealed_weight(0.25, 1, 0.7) == 0.25
    assert annealed_weight(0.25, 8, 0.7) == pytest.approx(0.175) == annealed_weight(0.25, 11, 0.7)
    assert annealed_weight(0.25, 4, 0.7) == pytest.approx(0.25 * (0.7 + 0.3 * 0.5 * (1 + math.cos(math.pi * 3 / 7))))


def test_structxlip_text_views():
    assert filter_visual_terms("A large red circle and a pale blue square, both small.") == (
        "A large circle and a square, both small."
    )
    assert filter_visual_terms("red blue") == "red blue"  # nothing meaningful would remain: kept as is
    text = "A large circle sits left. It is small, round"
    ids = TOKENIZER([text])[0].tolist()
    windows = word_windows(text, TOKENIZER)
    decoded = [TOKENIZER.decode(ids[s:e]).strip() for s, e in windows]
    # sentence 1 has 5 words (window 3), "It is small" 3 words (window 2), "round" 1 word (no window)
    assert decoded == ["a large circle", "large circle sits", "circle sits left", "it is", "is small"]


def test_finelip_terms_match_loops():
    torch.manual_seed(2)
    images, texts = torch.randn(3, 4, 5), torch.randn(3, 6, 5)
    scores = cross_modal_scores(images, texts)
    for i in range(3):
        for j in range(3):
            sim = [[F.leaky_relu(F.cosine_similarity(images[i, p], texts[j, t], dim=0), 0.1) for t in range(6)]
                   for p in range(4)]
            text_side = sum(max(sim[p][t] for p in range(4)) for t in range(6)) / 6
            image_side = sum(max(sim[p][t] for t in range(6)) for p in range(4)) / 4
            assert scores[i, j].item() == pytest.approx((text_side + image_side).item(), rel=1e-5)
    s = torch.randn(4, 4)
    naive = sum(max(0.0, 0.2 + s[i, j] - s[i, i]) + max(0.0, 0.2 + s[j, i] - s[i, i])
                for i in range(4) for j in range(4) if i != j)
    assert hinge_loss(s).item() == pytest.approx(float(naive), rel=1e-5)
    hardest_only = sum(max(max(0.0, 0.2 + s[i, j] - s[i, i]) for j in range(4) if j != i) for i in range(4))
    assert hinge_loss(s).item() != pytest.approx(float(hardest_only))


# ---------------------------------------------------------------------------------------------- adapters
@pytest.mark.parametrize("name", ["lora", "dora"])
def test_adapters_train_only_themselves(tiny_checkpoint, tiny_benchmark, tmp_path, name):
    from hnclip_core.longclip import load_longclip

    model = build_framework(name).prepare_model(load_longclip(tiny_checkpoint)[0])
    trainable = [n for n, p in model.named_parameters() if p.requires_grad]
    assert trainable and all("lora_" in n for n in trainable)
    assert any("lora_magnitude_vector" in n for n in trainable) == (name == "dora")
    assert all(".mlp.c_fc." in n or ".mlp.c_proj." in n for n in trainable)

    train_with(tiny_config(tiny_checkpoint, tiny_benchmark, tmp_path), name)
    state = torch.load(tmp_path / "run" / "training_state.pt", weights_only=True)["model"]
    initial = load_longclip_state_dict(tiny_checkpoint)
    adapters = {k: v for k, v in state.items() if "lora_" in k}
    untouched = {k.removeprefix("base_model.model.").replace(".base_layer.", "."): v
                 for k, v in state.items() if "lora_" not in k}
    assert set(untouched) == set(initial) and all(torch.equal(untouched[k], initial[k]) for k in initial)
    moved = [k for k, v in adapters.items() if "lora_B" in k and v.abs().sum() > 0]  # lora_B starts at zero
    assert moved


# ---------------------------------------------------------------------------------------------- training
@pytest.fixture(scope="module")
def real_format(tmp_path_factory):
    """A DOCCI-format folder (read as dataset "docci": no synthetic metadata used) and a GOAL-format segment
    file with crop images, as GOAL's preprocessing writes them."""
    root = write_synthetic_benchmark(tmp_path_factory.mktemp("docci") / "docci",
                                     SyntheticConfig(seed=5, num_train_families=6, num_test_families=3,
                                                     num_val_families=3, image_size=32))
    metadata = [json.loads(line) for line in (root / METADATA_FILE).read_text().splitlines()]
    (root / METADATA_FILE).unlink()
    captions = {p.image_path.name: p.caption for p in load_pairs("docci", root, "train")}
    crops = root.parent / "crops"
    crops.mkdir()
    records = []
    for row in metadata:
        name = f"{row['example_id']}.png"
        if name not in captions:
            continue
        segments = []
        for k, obj in enumerate(o for o in row["objects"] if o["sentence"]):
            crop = crops / f"{row['example_id']}_{k}.png"
            from PIL import Image

            with Image.open(root / "images" / name) as image:
                image.convert("RGB").crop(tuple(obj["bbox"])).save(crop)
            x1, y1, x2, y2 = obj["bbox"]
            segments.append({"filename": f"crops/{crop.name}", "caption": obj["sentence"], "similarity_score": 20 + k,
                             "bbox_coordinates": {"x1": x1, "y1": y1, "x2": x2, "y2": y2,
                                                  "width": x2 - x1, "height": y2 - y1}})
        records.append({"original_filename": f"../DOCCI/images/{name}", "original_caption": captions[name],
                        "segment": segments})
    segment_file = root.parent / "docci_segments.json"
    segment_file.write_text(json.dumps(records))
    return root, segment_file


@pytest.mark.parametrize("framework", FRAMEWORKS)
def test_every_framework_trains_and_evaluates_on_both_formats(tiny_checkpoint, tiny_benchmark, real_format, tmp_path,
                                                              framework):
    synthetic = train_with(tiny_config(tiny_checkpoint, tiny_benchmark, tmp_path / "s"), framework)
    root, segment_file = real_format
    real = train_with(tiny_config(tiny_checkpoint, root, tmp_path / "r", dataset="docci", gamma=0.0), framework,
                      segment_file=str(segment_file) if framework in ("goal", "structxlip") else None)
    for result in (synthetic, real):
        assert [row["epoch"] for row in result["history"]] == [0, 1]
        assert math.isfinite(result["last"]["train_loss"]) and 0 <= result["last"]["mean_r1"] <= 100


@pytest.mark.parametrize("framework", ["finelip", "lora", "structxlip"])
def test_resume_and_trained_model_reload(tiny_checkpoint, tiny_benchmark, tmp_path, monkeypatch, framework):
    from hnclip_core import train as train_module

    full = train_with(tiny_config(tiny_checkpoint, tiny_benchmark, tmp_path / "full", epochs=2), framework)
    full["config"]["framework"] = framework  # as Experiment.run records it
    killed = tiny_config(tiny_checkpoint, tiny_benchmark, tmp_path / "cut", epochs=2)
    original = train_module._Run.train_epoch

    def dies_in_epoch_2(self, epoch):
        if epoch == 2:
            raise KeyboardInterrupt("simulated kill")
        return original(self, epoch)

    monkeypatch.setattr(train_module._Run, "train_epoch", dies_in_epoch_2)
    with pytest.raises(KeyboardInterrupt):
        train_with(killed, framework)
    monkeypatch.setattr(train_module._Run, "train_epoch", original)
    resumed = train_with(killed, framework, resume=True)
    strip = [{k: v for k, v in row.items() if k != "seconds"} for row in full["history"]]
    assert strip == [{k: v for k, v in row.items() if k != "seconds"} for row in resumed["history"]]

    experiment = Experiment(backbone=str(tiny_checkpoint), dataset="synthetic", data_root=str(tiny_benchmark),
                            device="cpu", progress=False, output_dir=str(tmp_path / "exp"))
    model, _, _ = experiment.load_trained_model({**full, "run_dir": str(tmp_path / "full" / "run")})
    assert type(model).__name__ == "CLIP" and not hasattr(model, "finelip_head")
    row = experiment.evaluate_on("synthetic", str(tiny_benchmark), {**full, "run_dir": str(tmp_path / "full" / "run")})
    assert row["mean_r1"] == pytest.approx(full["last"]["mean_r1"], abs=1e-6 if framework != "lora" else 10)


def test_augmentation_trains_with_any_framework(tiny_checkpoint, tiny_benchmark, tmp_path):
    for framework in ("longclip", "goal"):
        result = train_with(tiny_config(tiny_checkpoint, tiny_benchmark, tmp_path / framework, token_weight=1.0),
                            framework, caption_augmentation="debias")
        assert math.isfinite(result["last"]["train_loss"])


# ---------------------------------------------------------------------------------------------- identity, errors
def test_the_framework_is_part_of_a_run_identity():
    settings = {**dataclasses.asdict(TrainConfig(checkpoint="x.pt")), "objective": "hn+tok", "framework": "longclip",
                "caption_augmentation": "none", "segment_file": None}
    lora = {**settings, "framework": "lora"}
    assert run_directory("runs", lora).name.startswith("lora-hn_tok-")
    assert run_directory("runs", settings).name.startswith("hn_tok-")
    assert run_directory("runs", settings) != run_directory("runs", lora)


def test_configuration_and_segment_errors(tiny_checkpoint, real_format, tmp_path):
    with pytest.raises(ValueError, match="unknown framework"):
        build_framework("clip-adapter")
    with pytest.raises(ValueError, match="segment_file is read by"):
        build_framework("lora", segment_file="s.json")
    root, segment_file = real_format
    with pytest.raises(ValueError, match="accumulation='naive'"):
        train_with(tiny_config(tiny_checkpoint, root, tmp_path, dataset="docci", accumulation="cached"), "goal",
                   segment_file=str(segment_file))
    with pytest.raises(ValueError, match="needs segment_file"):
        train_with(tiny_config(tiny_checkpoint, root, tmp_path, dataset="docci"), "goal")
    broken = tmp_path / "broken.json"
    broken.write_text(json.dumps([{"original_filename": "a.png", "segment": [{"caption": "x"}]}]))
    with pytest.raises(SegmentFileError, match=r"broken.json: record 0, segment 0: missing fields"):
        read_goal_segments(broken)
    partial = tmp_path / "partial.json"
    partial.write_text(json.dumps(json.loads(segment_file.read_text())[1:]))
    with pytest.raises(SegmentFileError, match=r"partial.json: 1 of \d+ training images have no segment"):
        train_with(tiny_config(tiny_checkpoint, root, tmp_path, dataset="docci"), "goal", segment_file=str(partial))
