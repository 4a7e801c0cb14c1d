"""How one effective batch becomes micro-batch losses (arXiv 2608.18521 App. D.1: "micro-batch 16 with 8×
accumulation"), in one process or across several.

"Effective batch 128 = micro-batch 16 × 8" admits two readings:

* ``naive``: each micro-batch is its own contrastive batch; the 8 micro-batch losses are averaged. A
  caption meets only 15 negatives and Ḡ is 16 × 16. This is what a literal accumulation loop does.
* ``cached``: the features of all 8 micro-batches are first computed without gradient; then each
  micro-batch is re-encoded with gradient and the loss of the *whole* 128 × 128 batch is evaluated with
  the other micro-batches' cached features (open_clip's ``accum_freq``). The summed gradients equal
  those of one 128-batch step, at the cost of one extra forward pass per step.

Across processes (``torchrun``), each process encodes its shard of every micro-batch and the loss gathers
the shards, as it does inside open_clip's own trainer: :class:`~hnclip_core.losses.HNClipTokenLoss` built with
``rank``, ``world_size`` and ``gather_with_grad=True`` all-gathers the features and Ḡ's captions through open_clip's
``gather_features`` and the token tensors in one packed differentiable ``all_gather``
(:meth:`~hnclip_core.losses.HNClipTokenLoss.gather_tokens`), so every process evaluates the loss of the whole global
micro-batch
(InfoNCE's negatives, Ḡ and L_tok's negatives span all processes, exactly as in one process with the large
batch). The gather's backward sums, over processes, the gradients that reach each shard, and
``DistributedDataParallel`` averages parameter gradients over processes: together the single-process gradient
of the global loss (tested in ``tests/test_distributed.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .features import EncodedBatch
from .losses import HNClipTokenLoss

__all__ = ["ACCUMULATION_MODES", "MicroBatch", "batch_loss", "accumulated_losses"]

ACCUMULATION_MODES = ("naive", "cached")

#: ``encode(images, token_ids, with_tokens)`` → :class:`EncodedBatch` (the model, or its DDP wrapper).
Encoder = Callable[[torch.Tensor, torch.Tensor, bool], EncodedBatch]


@dataclass
class MicroBatch:
    """Model inputs of one micro-batch and the dataset indices of its pairs; ``extras`` holds a fine-tuning
    framework's per-pair inputs (:mod:`hnclip_core.frameworks`), keyed by name, batch first."""

    images: torch.Tensor
    token_ids: torch.Tensor
    indices: torch.Tensor
    extras: dict | None = None


def batch_loss(loss: HNClipTokenLoss, batch: EncodedBatch, logit_scale: torch.Tensor,
               margin_text_features: torch.Tensor | None = None) -> torch.Tensor:
    """``loss`` of one contrastive batch of unnormalised features; ``margin_text_features`` (normalised)
    replace the live captions as the source of Ḡ (the ``frozen`` variant of Table 3c)."""
    return loss(
        F.normalize(batch.image_features, dim=-1), F.normalize(batch.text_features, dim=-1), logit_scale,
        margin_text_features=margin_text_features,
        image_tokens=batch.image_tokens, text_tokens=batch.text_tokens, text_ids=batch.text_ids,
    )


def _concat(parts: Sequence[EncodedBatch]) -> EncodedBatch:
    """Stack encoded micro-batches; text token tensors are right-padded to a common length (id 0)."""
    if parts[0].text_tokens is None:
        return EncodedBatch(torch.cat([p.image_features for p in parts]), torch.cat([p.text_features for p in parts]))
    length = max(p.text_ids.shape[1] for p in parts)
    return EncodedBatch(
        torch.cat([p.image_features for p in parts]),
        torch.cat([p.text_features for p in parts]),
        torch.cat([p.image_tokens for p in parts]),
        torch.cat([F.pad(p.text_tokens, (0, 0, 0, length - p.text_tokens.shape[1])) for p in parts]),
        torch.cat([F.pad(p.text_ids, (0, length - p.text_ids.shape[1])) for p in parts]),
    )


def accumulated_losses(
    encode: Encoder,
    logit_scale: torch.nn.Parameter,
    micro_batches: Sequence[MicroBatch],
    loss: HNClipTokenLoss,
    accumulation: str = "naive",
    margin_features: Callable[[torch.Tensor], torch.Tensor | None] | None = None,
    micro_loss: Callable[[MicroBatch], torch.Tensor] | None = None,
) -> Iterator[torch.Tensor]:
    """Yield one loss per micro-batch; backpropagating each in turn accumulates exactly the gradient of the
    effective batch under the chosen :data:`ACCUMULATION_MODES` reading. Each micro-batch's forward pass runs
    when its loss is drawn, so a caller can draw and backpropagate it inside ``DistributedDataParallel.no_sync``.

    ``logit_scale`` is the model's log-temperature parameter; in ``cached`` mode only the last micro-batch's
    loss is differentiated with respect to it, so the temperature receives its gradient once per effective
    batch. ``margin_features(indices)`` optionally returns the caption features Ḡ is built from (Table 3c).
    ``micro_loss(micro)`` replaces a micro-batch's loss under ``naive`` accumulation: a fine-tuning framework's
    objective with terms of its own (:meth:`hnclip_core.train.TrainingHooks.loss`), which encodes the micro-batch
    itself and so cannot be evaluated against cached features.
    """
    if accumulation not in ACCUMULATION_MODES:
        raise ValueError(f"unknown accumulation {accumulation!r}; choose one of {ACCUMULATION_MODES}")
    if micro_loss is not None and accumulation != "naive":
        raise ValueError("a micro-batch loss of its own accumulates only under accumulation='naive'")
    with_tokens = bool(getattr(loss, "token_weight", 0))
    margins = margin_features or (lambda indices: None)

    def encoded(micro: MicroBatch) -> EncodedBatch:
        return encode(micro.images, micro.token_ids, with_tokens)

    def naive_loss(micro: MicroBatch) -> torch.Tensor:
        return batch_loss(loss, encoded(micro), logit_scale.exp(), margins(micro.indices))

    if accumulation == "naive":
        for micro in micro_batches:
            yield (micro_loss or naive_loss)(micro) / len(micro_batches)
        return

    with torch.no_grad():
        cached = [encoded(m) for m in micro_batches]
    all_margins = margins(torch.cat([m.indices for m in micro_batches]))
    last = len(micro_batches) - 1
    for j, micro in enumerate(micro_batches):
        parts = list(cached)
        parts[j] = encoded(micro)
        scale = logit_scale.exp() if j == last else logit_scale.detach().exp()
        yield batch_loss(loss, _concat(parts), scale, all_margins)
