"""The embedded toy Long-CLIP: a small CLIP pretrained here, in the two stages the real one went through
(arXiv 2608.18521 App. D.1 uses Long-CLIP-L; Long-CLIP itself = OpenAI CLIP + a long-caption stage).

1. **"CLIP" stage** — an open_clip ``CLIP`` with QuickGELU and a 77-token context is trained from
   scratch with InfoNCE on *short* alt-text captions of synthetic scenes (web-like supervision).
2. **"Long-CLIP" stage** — the text positional table is stretched 77 → 248 with Long-CLIP's
   :func:`~hnclip_core.longclip.stretch_positional_embedding`, the temperature is reset to s = 100
   (Long-CLIP's initialisation), and training continues on long captions written in a *different* voice
   (``dense-alt``) about other random scenes — as Long-CLIP's ShareGPT4V data differs from DOCCI.

The CLIP-stage model is kept beside the result (``…-clip-stage.pt``, 77 positions, also loadable
with ``load_longclip``) so the two stages can be compared. The result is saved with
:func:`~hnclip_core.longclip.save_longclip` and read back only through
:func:`~hnclip_core.longclip.load_longclip`, so the tutorial runs the real checkpoint path. The
pretraining scenes come from seeds disjoint from the fine-tuning benchmark's and contain no
near-duplicate families; the benchmark itself (``SyntheticConfig()``, ``dense`` captions) is never seen.

The checkpoint is cached under ``cache_dir()/toy`` (``$HNCLIP_CACHE``) with a hash of the recipe in
its name; ``python -m hnclip_core pretrain-toy`` builds it explicitly.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import math
import time
from dataclasses import dataclass
from pathlib import Path

import open_clip
import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from .cache import cache_dir
from .data.synthetic import SyntheticConfig, iter_examples
from .features import encode_texts
from .longclip import (
    LONG_CONTEXT,
    ClipArchitecture,
    build_clip,
    keep_first_positions_frozen,
    longclip_param_groups,
    save_longclip,
    stretch_positional_embedding,
)
from .losses import clip_loss
from .train import TrainConfig, cosine_with_warmup

__all__ = [
    "ToyRecipe",
    "TOY_ARCHITECTURE",
    "toy_checkpoint_path",
    "clip_stage_checkpoint_path",
    "ensure_toy_model",
    "pretrain_toy",
    "TOY_FINETUNE",
    "toy_train_config",
]

log = logging.getLogger(__name__)

#: The toy's sizes at the CLIP stage (context 77); the Long-CLIP stage only changes the context to 248.
TOY_ARCHITECTURE = ClipArchitecture(
    embed_dim=128, image_size=64, patch_size=8, vision_width=128, vision_layers=3, vision_mlp_ratio=4.0,
    context_length=77, vocab_size=49408, text_width=128, text_layers=3, text_mlp_ratio=4.0,
)


@dataclass(frozen=True)
class ToyRecipe:
    """Everything that determines the toy checkpoint (same recipe → same file name and weights)."""

    seed: int = 0
    clip_scenes: int = 6000
    clip_epochs: int = 12
    clip_lr: float = 1e-3
    clip_logit_scale: float | None = 100.0  #: initial s of the CLIP stage; None = open_clip's 1/0.07
    long_scenes: int = 3000
    long_epochs: int = 6
    long_lr: float = 2e-4
    long_logit_scale: float = 100.0
    batch_size: int = 128
    weight_decay: float = 0.1
    warmup_steps: int = 50
    min_objects: int = 3
    max_objects: int = 5

    def digest(self) -> str:
        payload = json.dumps({"recipe": dataclasses.asdict(self), "arch": TOY_ARCHITECTURE.as_dict()}, sort_keys=True)
        return hashlib.sha256(payload.encode()).hexdigest()[:10]


#: How the toy is fine-tuned: the paper's recipe (App. D.1: AdamW, cosine decay, 16 × 8 accumulation,
#: γ = 0.5, λ = 1) except the learning rate and the number of epochs. The paper's 2e-6 over ~740 steps
#: suits a 428 M-parameter Long-CLIP-L; the 7.6 M-parameter toy has ~15 steps per epoch and barely moves
#: at that rate. The values were chosen by the calibration runs recorded in ``results/calibration.json``.
TOY_FINETUNE = {"lr": 2e-4, "epochs": 5}


def toy_train_config(**overrides) -> TrainConfig:
    """The fine-tuning configuration of the embedded default: toy Long-CLIP on the synthetic benchmark."""
    return TrainConfig.from_dict({**TOY_FINETUNE, **overrides})


def toy_checkpoint_path(recipe: ToyRecipe | None = None) -> Path:
    recipe = recipe or ToyRecipe()
    return cache_dir() / "toy" / f"toy-longclip-{recipe.digest()}.pt"


def clip_stage_checkpoint_path(path: str | Path) -> Path:
    """Where the 77-token CLIP-stage model is kept next to the final toy checkpoint."""
    path = Path(path)
    return path.with_name(f"{path.stem}-clip-stage{path.suffix}")


def _scene_data(recipe: ToyRecipe, stage_seed: int, scenes: int, style: str, preprocess, tokenizer):
    """Images and token ids of ``scenes`` random synthetic scenes (no near-duplicate families)."""
    config = SyntheticConfig(
        seed=stage_seed, num_train_families=scenes, num_test_families=0, family_size=1,
        image_size=TOY_ARCHITECTURE.image_size, min_objects=recipe.min_objects, max_objects=recipe.max_objects,
        caption_style=style,
    )
    size = TOY_ARCHITECTURE.image_size
    images = torch.empty(scenes, 3, size, size)  # filled in place: no second copy from torch.stack
    captions = []
    for i, example in enumerate(iter_examples(config, "train")):  # one at a time: only tensors are kept
        images[i] = preprocess(example.image)
        captions.append(example.caption)
    return images, tokenizer(captions)


def _train_stage(model, images, tokens, epochs, lr, recipe: ToyRecipe, seed: int, desc: str, progress: bool):
    optimizer = torch.optim.AdamW(longclip_param_groups(model, recipe.weight_decay), lr=lr)
    steps_per_epoch = len(images) // recipe.batch_size
    total = steps_per_epoch * epochs
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, cosine_with_warmup(recipe.warmup_steps, total))
    generator = torch.Generator().manual_seed(seed)
    model.train()
    bar = tqdm(total=total, desc=desc, disable=not progress, leave=False)
    losses = []
    for _ in range(epochs):
        order = torch.randperm(len(images), generator=generator)
        for start in range(0, steps_per_epoch * recipe.batch_size, recipe.batch_size):
            batch = order[start : start + recipe.batch_size]
            image_features = F.normalize(model.encode_image(images[batch]), dim=-1)
            text_features = F.normalize(encode_texts(model, tokens[batch])[0], dim=-1)
            loss = clip_loss(image_features, text_features, model.logit_scale.exp())
            optimizer.zero_grad(set_to_none=True)
            loss.backward()
            optimizer.step()
            scheduler.step()
            with torch.no_grad():
                model.logit_scale.clamp_(0, math.log(100))
            losses.append(loss.item())
            bar.update()
            bar.set_postfix(loss=f"{loss.item():.3f}")
    bar.close()
    return losses


def pretrain_toy(
    path: str | Path | None = None, recipe: ToyRecipe | None = None, progress: bool = True, low_memory: bool = False
) -> Path:
    """Build the toy Long-CLIP (both stages) and save it in Long-CLIP's format; returns the path.

    Deterministic for a recipe on the CPU. A JSON report with the stages' loss traces and timings is
    written next to the checkpoint. ``low_memory`` recomputes transformer activations in the backward
    pass (open_clip's gradient checkpointing): the same weights bit for bit, ~0.6 GB less peak memory
    (for 1–2 GB machines such as Binder), ~30 % more time.
    """
    recipe = recipe or ToyRecipe()
    path = Path(path) if path is not None else toy_checkpoint_path(recipe)
    torch.manual_seed(recipe.seed)
    started = time.perf_counter()
    preprocess = open_clip.image_transform(TOY_ARCHITECTURE.image_size, is_train=False)

    # Stage 1: CLIP from scratch on short captions, context 77.
    model = build_clip(TOY_ARCHITECTURE)
    model.set_grad_checkpointing(low_memory)
    if recipe.clip_logit_scale is not None:
        with torch.no_grad():
            model.logit_scale.fill_(math.log(recipe.clip_logit_scale))
    short_tokenizer = open_clip.SimpleTokenizer(context_length=TOY_ARCHITECTURE.context_length)
    images, tokens = _scene_data(recipe, 10_000 + recipe.seed, recipe.clip_scenes, "short", preprocess, short_tokenizer)
    clip_losses = _train_stage(
        model, images, tokens, recipe.clip_epochs, recipe.clip_lr, recipe, recipe.seed, "toy CLIP stage", progress
    )
    clip_seconds = time.perf_counter() - started
    clip_stage_path = save_longclip(model.eval(), clip_stage_checkpoint_path(path))

    # Stage 2: stretch to 248 positions and train on long captions of other scenes, s reset to 100.
    long_model = build_clip(dataclasses.replace(TOY_ARCHITECTURE, context_length=LONG_CONTEXT))
    state = model.state_dict()
    state["positional_embedding"] = stretch_positional_embedding(state["positional_embedding"])
    state["logit_scale"] = torch.tensor(math.log(recipe.long_logit_scale))
    long_model.load_state_dict(state)
    long_model.set_grad_checkpointing(low_memory)
    keep_first_positions_frozen(long_model)
    long_tokenizer = open_clip.SimpleTokenizer(context_length=LONG_CONTEXT)
    images, tokens = _scene_data(
        recipe, 20_000 + recipe.seed, recipe.long_scenes, "dense-alt", preprocess, long_tokenizer
    )
    long_losses = _train_stage(
        long_model, images, tokens, recipe.long_epochs, recipe.long_lr, recipe, recipe.seed + 1,
        "toy Long-CLIP stage", progress,
    )
    long_model.eval()
    save_longclip(long_model, path)
    report = {
        "recipe": dataclasses.asdict(recipe),
        "architecture": TOY_ARCHITECTURE.as_dict(),
        "clip_stage": {"seconds": clip_seconds, "final_loss": clip_losses[-1], "losses": clip_losses},
        "long_stage": {
            "seconds": time.perf_counter() - started - clip_seconds,
            "final_loss": long_losses[-1],
            "losses": long_losses,
        },
        "clip_stage_checkpoint": str(clip_stage_path),
        "logit_scale": long_model.logit_scale.exp().item(),
        "parameters": sum(p.numel() for p in long_model.parameters()),
    }
    path.with_suffix(".json").write_text(json.dumps(report, indent=2))
    log.info("toy Long-CLIP written to %s in %.0f s", path, time.perf_counter() - started)
    return path


def ensure_toy_model(recipe: ToyRecipe | None = None, progress: bool = True, low_memory: bool = False) -> Path:
    """Path of the cached toy checkpoint, pretraining it first if it is not there yet."""
    path = toy_checkpoint_path(recipe)
    if not path.is_file():
        log.warning("the embedded toy Long-CLIP is not cached yet; pretraining it (a few minutes on a CPU)")
        pretrain_toy(path, recipe, progress=progress, low_memory=low_memory)
    return path
