"""The embedded default: a synthetic dense-caption benchmark and a toy Long-CLIP pretrained on scenes like it.

With no real data or weights on a machine, this is what the chapters fine-tune: the benchmark
(:mod:`.synthetic`, written in DOCCI's format and read by the real DOCCI reader) has families of
near-duplicate scenes whose captions differ in a word or two, and the toy (:mod:`.model`, pretrained by
:mod:`.pretrain` in caption voices from :mod:`.voices`) is shipped as a Long-CLIP-format checkpoint.
:mod:`.regime` measures whether an initialisation is in the paper's regime (§2.1: most random batches
already solved, the errors on near-twins).

:func:`register_datasets` makes the benchmark ``synthetic`` (and ``synthetic-alt``, the same scenes with
``dense-alt`` captions) a dataset name of :func:`hnclip_core.data.load_pairs`.
"""

from .model import (
    TOY_ARCHITECTURE,
    TOY_FINETUNE,
    TOY_RECIPE,
    ensure_toy_model,
    pretrain_toy,
    ship_toy,
    shipped_toy_path,
    shipped_toy_record,
)
from .synthetic import register_datasets

__all__ = [
    "TOY_ARCHITECTURE", "TOY_FINETUNE", "TOY_RECIPE", "ensure_toy_model", "pretrain_toy", "register_datasets",
    "ship_toy", "shipped_toy_path", "shipped_toy_record",
]
