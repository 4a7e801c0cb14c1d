"""The fine-tuning frameworks of the plug-and-play study (arXiv 2608.18521 §3.3, Table 2, Table A4, App. D.2), each
with its global contrastive term swappable between InfoNCE (γ = 0) and L_HN (γ = 0.5 for all, no per-framework
tuning) and everything else of the framework kept.

==============  ===========================================  =======================================
name            what trains, with which loss                 module
==============  ===========================================  =======================================
``longclip``    all weights; the global term (default)       :mod:`.base`
``lora``        peft LoRA adapters (r = 16), backbone frozen  :mod:`.adapters`
``dora``        peft DoRA adapters (r = 16), backbone frozen  :mod:`.adapters`
``goal``        all weights; global + GOAL's segment terms    :mod:`.goal`
``structxlip``  all weights; global + 3 structural losses     :mod:`.structxlip`
``finelip``     all weights + token refiners; global + hinge  :mod:`.finelip`
==============  ===========================================  =======================================

How the objective combines with a framework: the trainer's loss (γ = 0: InfoNCE, γ > 0: L_HN; λ > 0 adds λ·L_tok)
takes the place of the framework's global (image, caption) contrastive term, and the
framework's auxiliary terms are added unchanged. The plug-and-play study compares ``clip`` with ``hn``.

Frameworks with auxiliary terms (goal, structxlip, finelip) train with ``accumulation="naive"`` in one process;
the paper's recipes for them use no accumulation across micro-batches beyond that.
"""

from __future__ import annotations

from functools import partial

from ..toy.synthetic import SYNTHETIC_DATASETS
from .adapters import ADAPTER_LR, AdapterFramework
from .augment import CaptionAugmentation
from .base import Framework, TrainingView

__all__ = ["FRAMEWORKS", "ADAPTER_LR", "Framework", "TrainingView", "build_framework"]

FRAMEWORKS = ("longclip", "lora", "dora", "goal", "structxlip", "finelip")
#: Frameworks that read segments (GOAL's local pairs; StructXLIP's edge crops).
SEGMENT_FRAMEWORKS = ("goal", "structxlip")


def build_framework(name: str, dataset: str = "synthetic", segment_file: str | None = None,
                    caption_augmentation: str = "none", seed: int = 0) -> Framework:
    """The :class:`Framework` called ``name`` (the trainer's hooks: ``train(config, hooks=framework)``), with the
    caption augmentation ``caption_augmentation`` (:mod:`.augment`, seeded by ``seed``). GOAL and StructXLIP read
    segments of the training pairs from ``segment_file`` (GOAL's JSON format) if given, else from the synthetic
    benchmark's metadata for ``synthetic``/``synthetic-alt``; GOAL needs them, StructXLIP trains its local term
    only with them."""
    if name not in FRAMEWORKS:
        raise ValueError(f"unknown framework {name!r}; choose one of {FRAMEWORKS}")
    if segment_file is not None and name not in SEGMENT_FRAMEWORKS:
        raise ValueError(f"segment_file is read by the frameworks {SEGMENT_FRAMEWORKS} only, not {name!r}")
    augmentation = None
    if caption_augmentation != "none":
        augmentation = CaptionAugmentation(caption_augmentation, None, seed)  # the tokenizer comes with the data
    if name == "longclip":
        return Framework(augmentation)
    if name in ("lora", "dora"):
        return AdapterFramework(use_dora=name == "dora", augmentation=augmentation)
    if name == "finelip":
        from .finelip import FineLIPFramework

        return FineLIPFramework(augmentation)
    read_segments = partial(_segments, name, dataset=dataset, segment_file=segment_file)
    if name == "goal":
        from .goal import GoalFramework

        return GoalFramework(read_segments, augmentation)
    from .structxlip import StructXLIPFramework

    return StructXLIPFramework(read_segments, augmentation)


def _segments(name: str, pairs, dataset: str, segment_file: str | None):
    from .segments import read_goal_segments, read_synthetic_segments, segments_for_pairs

    if segment_file is not None:
        return segments_for_pairs(pairs, read_goal_segments(segment_file), segment_file)
    if dataset in SYNTHETIC_DATASETS and pairs:
        root = pairs[0].image_path.parent.parent
        return segments_for_pairs(pairs, read_synthetic_segments(root), root)
    if name == "goal":
        raise ValueError(
            f"framework 'goal' on dataset {dataset!r} needs segment_file: a JSON file in GOAL's format "
            "(see hnclip_core.frameworks.segments)"
        )
    return None
