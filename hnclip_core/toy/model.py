"""The embedded toy Long-CLIP: pretrained once (:mod:`hnclip_core.toy.pretrain`), shipped in the package.

A fresh machine never pretrains. :func:`ensure_toy_model` returns the shipped checkpoint
(``hnclip_core/toy/assets/toy-longclip-<recipe digest>.pt``, Long-CLIP's format, read back only through
:func:`~hnclip_core.longclip.load_longclip` like the real ``longclip-L.pt``) after checking its SHA-256
against the record beside it. The record (``….json``) holds the recipe, the training report (loss traces,
zero-shot probes during training, wall time, machine) and the hash.

Weights are stored in fp16 (the file would be 30 MB in fp32); ``load_longclip`` restores fp32, and every
number this project reports is computed from these stored weights. ``logit_scale`` stays fp32 (fp16
would round s = 100 up to 100.03).

``python -m hnclip_core pretrain-toy`` rebuilds it from :data:`TOY_RECIPE` into the cache (resumable;
``--ship`` replaces the shipped file).
"""

from __future__ import annotations

import json
import logging
from functools import partial
from pathlib import Path

import torch

from ..files import file_sha256, write_atomically, write_text_atomically
from ..longclip import ClipArchitecture, load_longclip, longclip_state_dict
from ..train import TrainConfig
from .cache import cache_dir
from .pretrain import FP32_KEYS, PretrainRecipe, checkpoint_record, pretrain
from .synthetic import register_datasets

__all__ = [
    "TOY_ARCHITECTURE", "TOY_RECIPE", "TOY_FINETUNE", "shipped_toy_path", "shipped_toy_record", "ensure_toy_model",
    "pretrain_toy", "ship_toy", "toy_train_config",
]

log = logging.getLogger(__name__)

#: The toy's sizes at the CLIP stage (context 77); the Long-CLIP stage only changes the context to 248.
TOY_ARCHITECTURE = ClipArchitecture(
    embed_dim=128, image_size=64, patch_size=8, vision_width=128, vision_layers=3, vision_mlp_ratio=4.0,
    context_length=77, vocab_size=49408, text_width=128, text_layers=3, text_mlp_ratio=4.0,
)

#: The recipe of the shipped toy (how it was chosen is recorded in ``results/README.md``): the two stages of
#: Long-CLIP, then 300 steps with the token term L_tok at weight 0.3, so that the toy starts fine-tuning with its
#: word tokens and patches aligned, as a large CLIP does.
TOY_RECIPE = PretrainRecipe(TOY_ARCHITECTURE, token_steps=300, token_weight=0.3)

#: How the toy is fine-tuned: the paper's recipe (App. D.1: AdamW, cosine decay, 16 × 8 accumulation,
#: γ = 0.5, λ = 1) except the learning rate and the number of epochs, which suit a 7.6 M-parameter model
#: with ~15 steps per epoch (the paper: 2e-6 over ~740 steps for the 428 M-parameter Long-CLIP-L). The rate is
#: the one at which the baseline, InfoNCE, ends best on the default benchmark (a sweep of 3e-5 … 1e-4, seed 0,
#: recorded in ``results/README.md``), so that no gain of HN-CLIP comes from a rate that harms InfoNCE.
TOY_FINETUNE = {"lr": 5e-5, "epochs": 3}

ASSETS = Path(__file__).parent / "assets"


def toy_train_config(**overrides) -> TrainConfig:
    """The fine-tuning configuration of the embedded default: toy Long-CLIP on the synthetic benchmark (registered
    with :func:`~hnclip_core.data.load_pairs` here, as the configuration names it)."""
    register_datasets()
    defaults = {"checkpoint": str(ensure_toy_model()), "dataset": "synthetic", **TOY_FINETUNE}
    return TrainConfig.from_dict({**defaults, **overrides})


def shipped_toy_path(recipe: PretrainRecipe = TOY_RECIPE) -> Path:
    return ASSETS / f"toy-longclip-{recipe.digest()}.pt"


def shipped_toy_record() -> dict:
    """The shipped toy's record: its file, SHA-256, recipe, pretraining losses and regime probes."""
    return checkpoint_record(shipped_toy_path())


def ensure_toy_model() -> Path:
    """The shipped toy checkpoint, after checking it against its recorded SHA-256 (no pretraining, ever)."""
    path = shipped_toy_path()
    record_path = path.with_suffix(".json")
    if not path.is_file() or not record_path.is_file():
        raise FileNotFoundError(
            f"the shipped toy Long-CLIP {path.name} (and its record .json) is missing from {ASSETS}; "
            "reinstall the package, or rebuild it with `python -m hnclip_core pretrain-toy --ship`"
        )
    expected = checkpoint_record(path)["sha256"]
    if file_sha256(path) != expected:
        raise ValueError(
            f"{path} does not match its recorded SHA-256 {expected[:12]}… (a Git LFS pointer or a partial "
            "download?); restore it from the repository or rebuild it with `python -m hnclip_core pretrain-toy --ship`"
        )
    return path


def pretrain_toy(output: str | Path | None = None, resume: bool = True, progress: bool = True,
                 recipe: PretrainRecipe = TOY_RECIPE, probe_every: int = 0,
                 continue_from: str | Path | None = None) -> Path:
    """Rebuild the toy from ``recipe`` (default: the shipped one's) into ``output`` (default: the cache);
    ``continue_from`` a toy of its first two stages runs only its token stage (:func:`.pretrain.pretrain`)."""
    output = Path(output) if output else cache_dir() / "toy" / f"toy-longclip-{recipe.digest()}-fp32.pt"
    return pretrain(recipe, output, resume=resume, probe_every=probe_every, progress=progress,
                    continue_from=continue_from)


def ship_toy(trained: str | Path, recipe: PretrainRecipe = TOY_RECIPE) -> Path:
    """Write ``trained`` (a fp32 checkpoint from :func:`pretrain_toy`) as the shipped fp16 file and its record."""
    trained = Path(trained)
    model, _, _ = load_longclip(trained)
    state = {k: v if k in FP32_KEYS else v.half() for k, v in longclip_state_dict(model).items()}
    path = shipped_toy_path(recipe)
    path.parent.mkdir(parents=True, exist_ok=True)
    for old in path.parent.glob("toy-longclip-*"):
        old.unlink()
    write_atomically(path, partial(torch.save, state))
    report = checkpoint_record(trained)
    record = {"file": path.name, "sha256": file_sha256(path), "storage": "fp16 (logit_scale fp32)",
              "recipe_digest": recipe.digest(), **report}
    write_text_atomically(path.with_suffix(".json"), json.dumps(record, indent=1))
    return path
