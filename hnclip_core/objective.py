"""The training objectives of the paper's ablations and how a batch's loss is split for gradient
accumulation (arXiv 2608.18521 §2, Eq. 1–3, Table 3b; App. D.1 "micro-batch 16 with 8× accumulation").

Objectives (Table 3b's four rows):

=========  ==============================  =======================
name       loss                            paper
=========  ==============================  =======================
``clip``   L_CLIP                          Eq. 1 (plain fine-tuning)
``tok``    L_CLIP + λ·L_tok                Table 3b, L_tok only
``hn``     L_HN                            Eq. 2
``hn+tok`` L_HN + λ·L_tok                  Eq. 3 (HN-CLIP)
=========  ==============================  =======================

Gradient accumulation — "effective batch 128 = micro-batch 16 × 8" admits two readings:

* ``naive``: each micro-batch is its own contrastive batch; the 8 micro-batch losses are averaged. A
  caption meets only 15 negatives and Ḡ is 16 × 16. This is what a literal accumulation loop does.
* ``cached``: the features of all 8 micro-batches are first computed without gradient; then each
  micro-batch is re-encoded with gradient and the loss of the *whole* 128 × 128 batch is evaluated with
  the other micro-batches' cached features (open_clip's ``accum_freq``). The summed gradients equal
  those of one 128-batch step, at the cost of one extra forward pass per step.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass

import torch
import torch.nn.functional as F

from .distributed import DistributedContext, gather_encoded, gather_indices
from .features import EncodedBatch, encode_batch
from .losses import clip_loss, hn_clip_loss, token_loss, valid_text_token_mask

__all__ = ["OBJECTIVES", "ACCUMULATION_MODES", "Objective", "MicroBatch", "accumulated_losses", "concat_encoded"]

OBJECTIVES = ("clip", "tok", "hn", "hn+tok")
ACCUMULATION_MODES = ("naive", "cached")


@dataclass(frozen=True)
class Objective:
    """One of :data:`OBJECTIVES` with its hyperparameters (γ of Eq. 2, λ of Eq. 3)."""

    name: str = "hn+tok"
    gamma: float = 0.5
    token_weight: float = 1.0

    def __post_init__(self):
        if self.name not in OBJECTIVES:
            raise ValueError(f"unknown objective {self.name!r}; choose one of {OBJECTIVES}")

    @property
    def uses_boost(self) -> bool:
        return self.name.startswith("hn")

    @property
    def uses_tokens(self) -> bool:
        return self.name.endswith("tok")

    def __call__(
        self, batch: EncodedBatch, logit_scale: torch.Tensor, margin_text_features: torch.Tensor | None = None
    ) -> torch.Tensor:
        """The loss of one contrastive batch. ``margin_text_features`` (normalised) replace the live
        caption features as the source of Ḡ (the ``frozen`` variant of Table 3c)."""
        images = F.normalize(batch.image_features, dim=-1)
        texts = F.normalize(batch.text_features, dim=-1)
        if self.uses_boost:
            margin_sim = None if margin_text_features is None else margin_text_features @ margin_text_features.t()
            loss = hn_clip_loss(images, texts, logit_scale, gamma=self.gamma, text_sim=margin_sim)
        else:
            loss = clip_loss(images, texts, logit_scale)
        if self.uses_tokens:
            mask = valid_text_token_mask(batch.text_ids)
            loss = loss + self.token_weight * token_loss(batch.image_tokens, batch.text_tokens, mask, logit_scale)
        return loss


@dataclass
class MicroBatch:
    """Model inputs of one micro-batch and the dataset indices of its pairs; ``extras`` holds a fine-tuning
    framework's per-pair inputs (:mod:`hnclip_core.frameworks`), keyed by name, batch first."""

    images: torch.Tensor
    token_ids: torch.Tensor
    indices: torch.Tensor
    extras: dict | None = None


def concat_encoded(parts: Sequence[EncodedBatch]) -> EncodedBatch:
    """Stack encoded micro-batches; text token tensors are right-padded to a common length (id 0)."""
    with_tokens = parts[0].text_tokens is not None
    if not with_tokens:
        return EncodedBatch(torch.cat([p.image_features for p in parts]), torch.cat([p.text_features for p in parts]))
    length = max(p.text_ids.shape[1] for p in parts)
    text_tokens = torch.cat([F.pad(p.text_tokens, (0, 0, 0, length - p.text_tokens.shape[1])) for p in parts])
    text_ids = torch.cat([F.pad(p.text_ids, (0, length - p.text_ids.shape[1])) for p in parts])
    return EncodedBatch(
        torch.cat([p.image_features for p in parts]),
        torch.cat([p.text_features for p in parts]),
        torch.cat([p.image_tokens for p in parts]),
        text_tokens,
        text_ids,
    )


def accumulated_losses(
    model,
    micro_batches: Sequence[MicroBatch],
    objective: Objective,
    accumulation: str = "naive",
    margin_features: Callable[[torch.Tensor], torch.Tensor] | None = None,
    context: DistributedContext | None = None,
) -> Iterator[torch.Tensor]:
    """Yield one loss per micro-batch; backpropagating each (in turn) accumulates exactly the gradient
    of the effective batch under the chosen :data:`ACCUMULATION_MODES` reading.

    ``margin_features(indices)`` optionally returns the caption features Ḡ is built from (Table 3c,
    frozen source). The learned temperature receives its gradient once per effective batch: in
    ``cached`` mode only the first micro-batch's loss is differentiated with respect to it. With a
    distributed ``context`` each process passes its shard of every micro-batch and the loss is that of
    the gathered global micro-batch (:mod:`hnclip_core.distributed`).
    """
    context = context or DistributedContext()

    def encode(micro: MicroBatch) -> EncodedBatch:
        return gather_encoded(encode_batch(model, micro.images, micro.token_ids, with_tokens), context)

    if accumulation not in ACCUMULATION_MODES:
        raise ValueError(f"unknown accumulation {accumulation!r}; choose one of {ACCUMULATION_MODES}")
    with_tokens = objective.uses_tokens

    def margins(indices):
        return None if margin_features is None else margin_features(indices)

    if accumulation == "naive":
        for micro in micro_batches:
            global_indices = gather_indices(micro.indices, context)
            yield objective(encode(micro), model.logit_scale.exp(), margins(global_indices)) / len(micro_batches)
        return

    with torch.no_grad():
        cached = [encode(m) for m in micro_batches]
    all_margins = margins(torch.cat([gather_indices(m.indices, context) for m in micro_batches]))
    for j, micro in enumerate(micro_batches):
        parts = list(cached)
        parts[j] = encode(micro)
        scale = model.logit_scale.exp() if j == 0 else model.logit_scale.detach().exp()
        yield objective(concat_encoded(parts), scale, all_margins)
