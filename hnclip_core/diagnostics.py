"""Gradient dynamics of InfoNCE vs the boosted loss during fine-tuning (arXiv 2608.18521 §2.4, Fig. 4;
App. C, Fig. A8).

Every ``every`` optimizer steps the trainer hands the current effective batch to
:meth:`GradientMonitor.measure`, which evaluates L_CLIP (Eq. 1) and L_HN (Eq. 2) on it, computes both
losses' gradients with respect to *all* trainable parameters in fp32, and records their norms, whether
each is exactly zero, their cosine, and whether each loss is below the paper's "solved" threshold 1e-3.
It uses ``torch.autograd.grad``, so parameter ``.grad`` fields, the optimizer and the random state are
untouched and the training trajectory is the same with or without the monitor.

Cost: two extra forward + backward passes of the effective batch on measured steps only (three with
``cached`` accumulation's extra feature pass), i.e. roughly ×3 the time of those steps; nothing on the
others. With ``every=5`` (the paper's setting) that is about +40 % training time.

fp32 arithmetic worth knowing when reading the numbers (DESIGN-NOTES): the loss of a batch whose
positives lead by s·Δ ≳ 17 logits rounds to exactly 0, but a negative's softmax weight exp(−s·Δ) only
underflows to exactly 0 beyond s·Δ ≈ 104 — a cosine margin above 1 at s = 100. An exactly-zero fp32
gradient is therefore far rarer than a zero loss; half-precision logits underflow from s·Δ ≈ 17.5.
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

import numpy as np
import torch

from .accumulation import accumulated_losses
from .features import encode_batch
from .files import write_atomically
from .losses import PAPER_GAMMA, SOLVED_LOSS_THRESHOLD, HNClipTokenLoss

__all__ = ["GradientMeasurement", "GradientMonitor", "batch_gradient"]


@dataclass
class GradientMeasurement:
    """One measurement on one batch (a point of Fig. 4's traces)."""

    step: int
    epoch: int
    loss_clip: float
    loss_hn: float
    grad_norm_clip: float
    grad_norm_hn: float
    grad_zero_clip: bool
    grad_zero_hn: bool
    grad_cosine: float  # NaN when either gradient is exactly zero
    solved_clip: bool  # L_CLIP < 1e-3 on the effective batch (the mean over its micro-batches, naive)
    solved_hn: bool
    #: share of the step's micro-batches whose own loss is < 1e-3 (naive accumulation: each micro-batch is a
    #: contrastive batch of its own, the batches of the paper's Fig. 4; cached: the effective batch's verdict)
    micro_solved_clip: float = math.nan
    micro_solved_hn: float = math.nan


def batch_gradient(model, micro_batches, loss_fn: HNClipTokenLoss, accumulation: str, margin_features=None):
    """(loss, flat fp32 gradient over all trainable parameters, per-micro-batch losses) of ``loss_fn`` on one
    effective batch, accumulated exactly as the trainer accumulates it, without touching ``param.grad``."""
    params = [p for p in model.parameters() if p.requires_grad]
    total = [torch.zeros_like(p, dtype=torch.float32) for p in params]
    micro_losses = []
    encode = partial(encode_batch, model)
    for loss in accumulated_losses(encode, model.logit_scale, micro_batches, loss_fn, accumulation, margin_features):
        grads = torch.autograd.grad(loss, params, allow_unused=True)
        for acc, grad in zip(total, grads, strict=True):
            if grad is not None:
                acc += grad.float()
        # naive: each yielded loss is its micro-batch's loss / number of micro-batches; cached: the full loss
        micro_losses.append(loss.item() * (len(micro_batches) if accumulation == "naive" else 1))
    loss_value = sum(micro_losses) / len(micro_losses)
    return loss_value, torch.cat([g.flatten() for g in total]), micro_losses


class GradientMonitor:
    """Records :class:`GradientMeasurement` every ``every`` optimizer steps and summarises per epoch."""

    def __init__(self, every: int = 5, gamma: float = PAPER_GAMMA):
        if every < 1:
            raise ValueError(f"every must be at least 1, got {every}")
        self.every = every
        self.clip = HNClipTokenLoss(gamma=0.0, token_weight=0.0)  # L_CLIP, Eq. 1
        self.hn = HNClipTokenLoss(gamma=gamma, token_weight=0.0)  # L_HN, Eq. 2
        self.measurements: list[GradientMeasurement] = []
        #: P, the number of trainable parameters the gradients span (set by :meth:`measure`): two random directions
        #: in P dimensions meet at a cosine of mean 0 and spread 1/√P, positive half of the time.
        self.parameters: int | None = None

    def due(self, step: int) -> bool:
        return step % self.every == 0

    def measure(self, model, micro_batches, step: int, epoch: int, accumulation: str = "naive", margin_features=None):
        device_type = next(model.parameters()).device.type
        with torch.autocast(device_type, enabled=False):
            loss_clip, grad_clip, micro_clip = batch_gradient(model, micro_batches, self.clip, accumulation)
            loss_hn, grad_hn, micro_hn = batch_gradient(model, micro_batches, self.hn, accumulation, margin_features)
        self.parameters = grad_clip.numel()
        norm_clip, norm_hn = grad_clip.norm().item(), grad_hn.norm().item()
        zero_clip, zero_hn = norm_clip == 0.0, norm_hn == 0.0
        cosine = math.nan if zero_clip or zero_hn else torch.nn.functional.cosine_similarity(
            grad_clip.double(), grad_hn.double(), dim=0
        ).item()
        measurement = GradientMeasurement(
            step, epoch, loss_clip, loss_hn, norm_clip, norm_hn, zero_clip, zero_hn, cosine,
            loss_clip < SOLVED_LOSS_THRESHOLD, loss_hn < SOLVED_LOSS_THRESHOLD,
            float(np.mean([m < SOLVED_LOSS_THRESHOLD for m in micro_clip])),
            float(np.mean([m < SOLVED_LOSS_THRESHOLD for m in micro_hn])),
        )
        self.measurements.append(measurement)
        return measurement

    def summary(self) -> list[dict]:
        """Per epoch: fraction of batches solved by each loss, fraction of exactly-zero gradients, the
        median ‖∇L_HN‖ / ‖∇L_CLIP‖ where the standard gradient is non-zero, and the gradient cosine's
        mean, standard deviation, median and share of positive values over the ``cosines`` measurements that have
        one (Fig. 4a–b and its caption; §2.4 observations i–ii; App. C reports the median and the positive share),
        beside ``parameters``, the P that sets the cosine of random directions (mean 0, spread 1/√P)."""
        by_epoch: dict[int, list[GradientMeasurement]] = defaultdict(list)
        for m in self.measurements:
            by_epoch[m.epoch].append(m)
        rows = []
        for epoch, ms in sorted(by_epoch.items()):
            ratios = [m.grad_norm_hn / m.grad_norm_clip for m in ms if not m.grad_zero_clip]
            cosines = [m.grad_cosine for m in ms if not math.isnan(m.grad_cosine)]
            rows.append({
                "epoch": epoch,
                "measurements": len(ms),
                "solved_clip": float(np.mean([m.solved_clip for m in ms])),
                "solved_hn": float(np.mean([m.solved_hn for m in ms])),
                "micro_solved_clip": float(np.mean([m.micro_solved_clip for m in ms])),
                "micro_solved_hn": float(np.mean([m.micro_solved_hn for m in ms])),
                "grad_zero_clip": float(np.mean([m.grad_zero_clip for m in ms])),
                "grad_zero_hn": float(np.mean([m.grad_zero_hn for m in ms])),
                "median_grad_ratio": float(np.median(ratios)) if ratios else math.nan,
                "median_loss_clip": float(np.median([m.loss_clip for m in ms])),
                "median_loss_hn": float(np.median([m.loss_hn for m in ms])),
                "cosine_mean": float(np.mean(cosines)) if cosines else math.nan,
                "cosine_std": float(np.std(cosines)) if cosines else math.nan,
                "cosine_median": float(np.median(cosines)) if cosines else math.nan,
                "cosine_positive": float(np.mean([c > 0 for c in cosines])) if cosines else math.nan,
                "cosines": len(cosines),
                "parameters": self.parameters,
            })
        return rows

    def write_csv(self, path: str | Path) -> None:
        names = list(GradientMeasurement.__dataclass_fields__)

        def write(tmp: Path) -> None:
            with open(tmp, "w", newline="") as handle:
                writer = csv.DictWriter(handle, fieldnames=names)
                writer.writeheader()
                writer.writerows(asdict(m) for m in self.measurements)

        write_atomically(path, write)

    def state_dict(self) -> dict:
        return {"every": self.every, "parameters": self.parameters,
                "measurements": [asdict(m) for m in self.measurements]}

    def load_state_dict(self, state: dict) -> None:
        self.every = state["every"]
        self.parameters = state["parameters"]
        self.measurements = [GradientMeasurement(**m) for m in state["measurements"]]
