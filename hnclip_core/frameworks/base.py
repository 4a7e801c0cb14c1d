"""What every fine-tuning framework of the plug-and-play study changes in the trainer (arXiv 2608.18521 §3.3,
Table 2, App. D.2: "we replace the global contrastive term of each framework with L_HN and change nothing else").

A :class:`Framework` is the trainer's :class:`~hnclip_core.train.TrainingHooks` with three more, all optional:

* :meth:`Framework.prepare_model` — change the model before the optimizer is built: wrap it with peft
  adapters and freeze the backbone (LoRA/DoRA), or attach the framework's own modules as sub-modules of the
  model (FineLIP's token aggregators), so that the optimizer, DDP and the saved training state include them;
* :meth:`Framework.attach` — read what the framework needs of the training pairs (GOAL's segments);
* :meth:`Framework.sample_extras` — per-pair inputs the framework's loss needs besides (image, caption):
  segment crops and boxes (GOAL), edge maps and filtered captions (StructXLIP). :class:`TrainingView` collects
  them in the dataset, so DataLoader workers build them in parallel, after the caption augmentation.

Frameworks without auxiliary terms (Long-CLIP, LoRA, DoRA) leave :attr:`has_auxiliary_loss` False and train
through the trainer's own accumulation, with every accumulation mode.
"""

from __future__ import annotations

import dataclasses

import torch

from ..data.pairs import ImageCaptionPair, PairDataset
from ..train import TrainingHooks
from .augment import CaptionAugmentation

__all__ = ["Framework", "TrainingView"]


class Framework(TrainingHooks):
    """Plain Long-CLIP full fine-tuning (the default), optionally with a caption augmentation."""

    name = "longclip"
    #: True when :meth:`sample_extras` returns something (the training set is then a :class:`TrainingView`).
    needs_extras = False

    def __init__(self, augmentation: CaptionAugmentation | None = None):
        self.augmentation = augmentation
        self.view: TrainingView | None = None

    def prepare(self, model: torch.nn.Module, train_set: PairDataset):
        self.attach(train_set)
        model = self.prepare_model(model)
        augmenting = self.augmentation is not None and self.augmentation.name != "none"
        if augmenting:
            self.augmentation = dataclasses.replace(self.augmentation, tokenizer=train_set.tokenizer)
        if self.needs_extras or augmenting:
            self.view = TrainingView(train_set, self, self.augmentation)
            return model, self.view
        return model, train_set

    def start_epoch(self, epoch: int) -> None:
        if self.view is not None:
            self.view.epoch = epoch

    def attach(self, train_set: PairDataset) -> None:
        """Read what the framework needs of the training pairs (in training-set order)."""

    def prepare_model(self, model: torch.nn.Module) -> torch.nn.Module:
        """The model to train (may be ``model`` itself, changed in place, or a wrapper around it)."""
        return model

    def sample_extras(self, index: int, pair: ImageCaptionPair, caption: str, token_ids: torch.Tensor) -> dict:
        """Extra tensors of one training pair (``caption``/``token_ids`` after any caption augmentation)."""
        return {}

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
