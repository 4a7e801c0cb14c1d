"""The embedded default: a synthetic dense-caption benchmark and a toy Long-CLIP pretrained on scenes like it.

With no real data or weights on a machine, this is what the chapters fine-tune: the benchmark
(:mod:`.synthetic`, written in DOCCI's format and read by the real DOCCI reader) has families of
near-duplicate scenes whose captions differ in a word or two, and the toy (:mod:`.model`, pretrained by
:mod:`.pretrain` in caption voices from :mod:`.voices`) is shipped as a Long-CLIP-format checkpoint.
:mod:`.regime` measures whether an initialisation is in the paper's regime (§2.1: most random batches
already solved, the errors on near-twins).

Importing this package registers the datasets ``synthetic`` and ``synthetic-alt`` (the same scenes with
``dense-alt`` captions) with :func:`hnclip_core.data.load_pairs`.
"""

from functools import partial

from ..data import register_dataset
from .model import (
    TOY_ARCHITECTURE,
    TOY_FINETUNE,
    TOY_RECIPE,
    ensure_toy_model,
    pretrain_toy,
    ship_toy,
    shipped_toy_path,
)
from .synthetic import SPLITS, load_synthetic_pairs

__all__ = [
    "TOY_ARCHITECTURE", "TOY_FINETUNE", "TOY_RECIPE", "ensure_toy_model", "pretrain_toy", "ship_toy",
    "shipped_toy_path",
]

register_dataset("synthetic", SPLITS, partial(load_synthetic_pairs, caption_style="dense"))
register_dataset("synthetic-alt", SPLITS, partial(load_synthetic_pairs, caption_style="dense-alt"))
