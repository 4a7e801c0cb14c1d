"""The embedded toy Long-CLIP goes through Long-CLIP's two stages and the real loader (toy.py)."""

import json

import torch

from hnclip_core.longclip import KEEP_POSITIONS, LONG_CONTEXT, load_longclip, stretch_positional_embedding
from hnclip_core.toy import (
    ToyRecipe,
    clip_stage_checkpoint_path,
    ensure_toy_model,
    pretrain_toy,
    toy_checkpoint_path,
)

MICRO = ToyRecipe(clip_scenes=64, clip_epochs=1, long_scenes=64, long_epochs=1, batch_size=32, warmup_steps=1)


def test_micro_recipe_builds_a_long_clip_checkpoint(tmp_path):
    path = pretrain_toy(tmp_path / "toy.pt", MICRO, progress=False)
    model, preprocess, tokenizer = load_longclip(path)
    assert tokenizer.context_length == LONG_CONTEXT and model.visual.image_size == (64, 64)
    report = json.loads(path.with_suffix(".json").read_text())
    assert len(report["clip_stage"]["losses"]) == 2 and len(report["long_stage"]["losses"]) == 2
    assert report["logit_scale"] <= 100.0 + 1e-3
    clip_stage, _, short_tokenizer = load_longclip(clip_stage_checkpoint_path(path))
    assert short_tokenizer.context_length == 77
    # rows 0-19 were trained in the CLIP stage and then kept frozen, as Long-CLIP keeps OpenAI's;
    # rows 20+ started from the stretch of the CLIP-stage table and were trained
    stage1, stage2 = clip_stage.positional_embedding.detach(), model.positional_embedding.detach()
    assert torch.equal(stage2[:KEEP_POSITIONS], stage1[:KEEP_POSITIONS])
    stretched = stretch_positional_embedding(stage1)
    assert stretched.shape == stage2.shape and not torch.equal(stage2[KEEP_POSITIONS:], stretched[KEEP_POSITIONS:])

    again = pretrain_toy(tmp_path / "again.pt", MICRO, progress=False, low_memory=True)
    first, second = torch.load(path, weights_only=True), torch.load(again, weights_only=True)
    # deterministic on the CPU, and gradient checkpointing (low_memory) does not change a bit
    assert all(torch.equal(first[k], second[k]) for k in first)


def test_cache_path_depends_on_recipe(monkeypatch, tmp_path):
    monkeypatch.setenv("HNCLIP_CACHE", str(tmp_path))
    assert toy_checkpoint_path(MICRO) != toy_checkpoint_path(ToyRecipe())
    assert toy_checkpoint_path(MICRO).parent == tmp_path / "toy"
    path = ensure_toy_model(MICRO, progress=False)
    assert path.is_file() and ensure_toy_model(MICRO, progress=False) == path
