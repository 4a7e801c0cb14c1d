"""What every fine-tuning framework of the plug-and-play study provides to the trainer (arXiv 2608.18521 §3.3,
Table 2, App. D.2: "we replace the global contrastive term of each framework with L_HN and change nothing else").

A :class:`Framework` has four hooks, all optional:

* :meth:`Framework.prepare_model` — change the model before the optimizer is built: wrap it with peft
  adapters and freeze the backbone (LoRA/DoRA), or attach the framework's own modules as sub-modules of the
  model (FineLIP's token aggregators), so that the optimizer, gradient averaging and the saved training state
  include them with no further code;
* :meth:`Framework.sample_extras` — per-pair inputs the framework's loss needs besides (image, caption):
  segment crops and boxes (GOAL), edge maps and filtered captions (StructXLIP). :class:`TrainingView` collects
  them in the dataset, so DataLoader workers build them in parallel;
* :meth:`Framework.loss` — the loss of one micro-batch: the global term (``objective``, InfoNCE or L_HN,
  optionally with L_tok) on the original pairs plus the framework's auxiliary terms, untouched;
* :meth:`Framework.start_step` / :meth:`Framework.after_optimizer_step` — schedules that depend on the
  step (FineLIP's warm-up, StructXLIP's annealed weights) and post-step rules (StructXLIP's temperature
  clamp).

Frameworks without auxiliary terms (Long-CLIP, LoRA, DoRA) leave :attr:`Framework.has_auxiliary_loss` False
and train through :func:`hnclip_core.objective.accumulated_losses` unchanged, with every accumulation mode.
"""

from __future__ import annotations

import torch

from ..data.augment import CaptionAugmentation
from ..data.pairs import ImageCaptionPair, PairDataset
from ..longclip import longclip_param_groups
from ..objective import MicroBatch, Objective

__all__ = ["Framework", "TrainingView"]


class Framework:
    """Plain Long-CLIP full fine-tuning (the default): every hook is the identity."""

    name = "longclip"
    #: True when :meth:`loss` adds terms to the global objective (then accumulation is ``naive`` only).
    has_auxiliary_loss = False
    #: True when :meth:`sample_extras` returns something (the training set is then a :class:`TrainingView`).
    needs_extras = False

    def prepare_model(self, model: torch.nn.Module) -> torch.nn.Module:
        """The model to train (may be ``model`` itself, changed in place, or a wrapper around it)."""
        return model

    def param_groups(self, model: torch.nn.Module, weight_decay: float) -> list[dict]:
        """AdamW parameter groups over the trainable parameters (Long-CLIP's rule by default)."""
        return longclip_param_groups(model, weight_decay)

    def sample_extras(self, index: int, pair: ImageCaptionPair, caption: str, token_ids: torch.Tensor) -> dict:
        """Extra tensors of one training pair (``caption``/``token_ids`` after any caption augmentation)."""
        return {}

    def start_step(self, epoch: int, step: int, steps_per_epoch: int) -> None:
        """Called before each optimizer step (``epoch`` from 1, ``step`` counted over the whole run from 0)."""

    def loss(self, model, micro: MicroBatch, objective: Objective, logit_scale: torch.Tensor,
             margin_text_features: torch.Tensor | None = None) -> torch.Tensor:
        """The loss of one micro-batch (only called when :attr:`has_auxiliary_loss`)."""
        raise NotImplementedError(f"{self.name} trains through the standard objective")

    def after_optimizer_step(self, model: torch.nn.Module) -> None:
        """Called after each optimizer step."""

    def unwrap_for_inference(self, model: torch.nn.Module) -> torch.nn.Module:
        """The trained model as a plain open_clip ``CLIP`` for evaluation elsewhere (adapters merged)."""
        return model


class TrainingView(torch.utils.data.Dataset):
    """The training items of a :class:`~hnclip_core.data.pairs.PairDataset` with a caption augmentation and a
    framework's per-pair extras: ``(image, token ids, extras)``.

    Set :attr:`epoch` before building each epoch's DataLoader; the augmentation depends on (seed, epoch, index).
    """

    def __init__(self, pairs: PairDataset, framework: Framework, augmentation: CaptionAugmentation | None = None):
        self.pairs = pairs
        self.framework = framework
        self.augmentation = augmentation
        self.epoch = 1

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, index: int):
        pixels, token_ids = self.pairs[index]
        pair = self.pairs.pairs[index]
        caption = pair.caption
        if self.augmentation is not None and self.augmentation.name != "none":
            caption, token_ids = self.augmentation(caption, self.epoch, index)
        return pixels, token_ids, self.framework.sample_extras(index, pair, caption, token_ids)
