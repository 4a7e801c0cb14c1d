"""When does InfoNCE stop learning, and how does the boost change which negatives it learns from?
(arXiv 2608.18521 §2.1, §2.4; App. B.2, Eq. 4.)

Two halves:

* **Floating-point saturation** (§2.1, §2.4). The gradient of Eq. 1 w.r.t. a negative logit is the softmax
  posterior p_ij ("each negative j is repelled with force proportional to its posterior", §2.1). When the
  positive leads every negative by a logit gap s·Δ, p_neg ≈ exp(−s·Δ) and the loss ≈ (B−1)·exp(−s·Δ). The
  paper reports that the loss falls below 1e-3 ("solved") and that the fp32 gradient becomes *exactly*
  zero. :func:`margin_sweep` and :func:`saturation_thresholds` measure where each happens with the very
  cross-entropy the losses use, in any dtype: in fp32 the loss rounds to exactly 0 long before the
  negatives' gradient does, because the loss is a difference of two numbers of size s·Δ (or a log of
  1 + tiny) while the gradient p_neg is a small number in its own right and only vanishes when it drops
  below fp32's smallest subnormal (≈1.4e-45).
* **Gradient concentration** (App. B.2, Eq. 4). With boosted logits z_ij = s(S_ij + γḠ_ij) the row term's
  gradient is ∂L_i/∂S_ij = s·p_ij, and for two negatives
  p_ij / p_ik = exp(s(S_ij − S_ik)) · exp(sγ(Ḡ_ij − Ḡ_ik)): the boost re-weights relative repulsion by
  exp(sγΔḠ). :func:`boost_reweighting` computes both posteriors and the re-weighting for a batch, and
  :func:`hardness_concentration` summarises how much of a row's push goes to its most caption-similar
  negatives.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F

from ..losses import SOLVED_LOSS_THRESHOLD, caption_margin

__all__ = [
    "THRESHOLDS",
    "margin_sweep",
    "saturation_thresholds",
    "boost_reweighting",
    "hardness_concentration",
]

#: The saturation events :func:`saturation_thresholds` locates, with a plain-language description.
THRESHOLDS = {
    "solved": f"loss below {SOLVED_LOSS_THRESHOLD:g} ('solved')",
    "loss_zero": "loss exactly 0",
    "negative_grad_zero": "negative's gradient exactly 0",
    "positive_grad_zero": "positive's gradient exactly 0",
}


class _Point(NamedTuple):
    logit_gap: float
    loss: float
    negative_grad: float
    positive_grad: float


@contextmanager
def _one_cpu_thread() -> Iterator[None]:
    """Run torch's CPU ops on one thread for the duration (restored afterwards).

    The sweeps evaluate hundreds of tiny B × B cross-entropies; on a machine whose cores are busy, torch's
    intra-op thread pool made each of them about 100× slower than a single thread does.
    """
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(threads)


def _evaluate(margin: float, logit_scale: float, batch_size: int, dtype: torch.dtype, device) -> _Point:
    """Symmetric InfoNCE of a ``batch_size`` batch whose positives lead every negative by s·Δ, with autograd.

    The logit matrix has 0 off the diagonal and s·Δ on it (formed in float64, then rounded once to
    ``dtype``); it is one leaf, used as the image→text logits and, transposed, as the text→image logits,
    exactly as open_clip's ``ClipLoss`` uses s·VTᵀ and s·TVᵀ. The returned gradients are those of
    the (mean-reduced) loss w.r.t. the logits of one negative, (0, 1), and of one positive, (0, 0).
    """
    logits = torch.zeros(batch_size, batch_size, dtype=torch.float64, device=device)
    logits.diagonal().fill_(logit_scale * margin)
    logits = logits.to(dtype).requires_grad_(True)
    targets = torch.arange(batch_size, device=device)
    loss = (F.cross_entropy(logits, targets) + F.cross_entropy(logits.t(), targets)) / 2
    loss.backward()
    grad = logits.grad
    return _Point(
        logit_gap=float(logits[0, 0].item()) - float(logits[0, 1].item()),
        loss=float(loss.item()),
        negative_grad=float(grad[0, 1].item()),
        positive_grad=float(grad[0, 0].item()),
    )


def margin_sweep(
    margins,
    logit_scale: float = 100.0,
    batch_size: int = 16,
    dtype: torch.dtype = torch.float32,
    device=None,
) -> dict[str, np.ndarray]:
    """Loss and logit gradients of Eq. 1 on batches that are solved by a cosine margin Δ (§2.1, §2.4).

    For each Δ in ``margins``, a batch of ``batch_size`` pairs in which every positive logit leads each of
    the B−1 negatives by s·Δ (logit matrix built directly in ``dtype``) goes through
    ``torch.nn.functional.cross_entropy`` as in :mod:`hnclip_core.losses`, and autograd gives the gradient of
    the symmetric, batch-averaged loss w.r.t. one negative logit (= p_neg / B, image→text and text→image
    halves together) and the positive logit (= (p_pos − 1) / B).

    Returns float64 arrays ``margin``, ``logit_gap`` (s·Δ as represented in ``dtype``), ``loss``,
    ``negative_grad``, ``positive_grad``, holding the values exactly as computed in ``dtype``: a value
    that underflowed is exactly 0.0. Results can depend on the device's kernels (CPU vs CUDA) as well as on
    the dtype; ``device`` selects where to compute. Torch's CPU ops run on one thread meanwhile (restored
    afterwards): the matrices are tiny, and a busy thread pool made each evaluation ~100× slower.
    """
    if batch_size < 2:
        raise ValueError(f"a batch needs at least one negative, got batch_size={batch_size}")
    margins = np.asarray(margins, dtype=np.float64).reshape(-1)
    with _one_cpu_thread():
        points = [_evaluate(float(m), float(logit_scale), batch_size, dtype, device) for m in margins]
    columns = {"margin": margins}
    for name in _Point._fields:
        columns[name] = np.array([getattr(p, name) for p in points], dtype=np.float64)
    return columns


_PROPERTIES = {
    "solved": lambda p: p.loss < SOLVED_LOSS_THRESHOLD,
    "loss_zero": lambda p: p.loss == 0.0,
    "negative_grad_zero": lambda p: p.negative_grad == 0.0,
    "positive_grad_zero": lambda p: p.positive_grad == 0.0,
}


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def saturation_thresholds(
    logit_scale: float = 100.0,
    batch_size: int = 16,
    dtype: torch.dtype = torch.float32,
    device=None,
    logit_step: float = 0.5,
    max_logit_gap: float = 1000.0,
) -> dict:
    """The smallest cosine margins Δ at which a batch saturates, found numerically (§2.1, §2.4).

    For each event of :data:`THRESHOLDS` — (a) ``solved``: loss < 1e-3
    (:data:`hnclip_core.losses.SOLVED_LOSS_THRESHOLD`), (b) ``loss_zero``: loss exactly 0.0,
    (c) ``negative_grad_zero``: a negative logit's gradient exactly 0.0, and (d) ``positive_grad_zero``:
    the positive logit's gradient exactly 0.0 — the logit gap is scanned in steps of ``logit_step`` up to
    ``max_logit_gap``, and the first step at which the event holds is refined by bisection on Δ until the
    bracket is two adjacent float64 numbers, every evaluation being the computation of :func:`margin_sweep`.
    So at ``<event>_margin`` the event holds and at the next smaller float64 it does not. A warning is
    raised if an event, once reached, fails again further along the scan (the threshold would then not
    separate the margins cleanly).

    Returns ``{"<event>_margin": Δ, "<event>_logit_gap": s·Δ as represented in dtype, ...}`` for every event
    (NaN if it never happens below ``max_logit_gap``), plus ``dtype`` (name), ``logit_scale``,
    ``batch_size`` and ``device``. Like :func:`margin_sweep`, it runs torch's CPU ops on one thread.
    """
    if batch_size < 2:
        raise ValueError(f"a batch needs at least one negative, got batch_size={batch_size}")
    scale = float(logit_scale)
    if not scale > 0:
        raise ValueError(f"logit_scale must be positive, got {logit_scale}")

    def evaluate(margin: float) -> _Point:
        return _evaluate(margin, scale, batch_size, dtype, device)

    with _one_cpu_thread():
        return _locate_thresholds(evaluate, scale, batch_size, dtype, device, logit_step, max_logit_gap)


def _locate_thresholds(evaluate, scale, batch_size, dtype, device, logit_step, max_logit_gap) -> dict:
    """Scan, then bisect each event of :data:`THRESHOLDS` (the body of :func:`saturation_thresholds`)."""
    first: dict[str, int] = {}
    relapsed: set[str] = set()
    steps = int(math.floor(max_logit_gap / logit_step))
    for k in range(steps + 1):
        point = evaluate(k * logit_step / scale)
        for name, holds in _PROPERTIES.items():
            if name not in first:
                if holds(point):
                    first[name] = k
            elif not holds(point):
                relapsed.add(name)
        if len(first) == len(_PROPERTIES):
            break
    if relapsed:
        warnings.warn(
            f"saturation events {sorted(relapsed)} stop holding again at a larger margin "
            f"({_dtype_name(dtype)}, s={scale:g}, B={batch_size}); their thresholds are the first crossing",
            RuntimeWarning,
            stacklevel=3,
        )

    result: dict = {"dtype": _dtype_name(dtype), "logit_scale": scale, "batch_size": batch_size,
                    "device": str(device or "cpu")}
    for name, holds in _PROPERTIES.items():
        if name not in first:
            result[f"{name}_margin"] = math.nan
            result[f"{name}_logit_gap"] = math.nan
            continue
        k = first[name]
        hi = k * logit_step / scale
        if k > 0:
            lo = (k - 1) * logit_step / scale  # invariant: the event does not hold at lo, holds at hi
            while True:
                mid = 0.5 * (lo + hi)
                if mid <= lo or mid >= hi:
                    break
                if holds(evaluate(mid)):
                    hi = mid
                else:
                    lo = mid
        result[f"{name}_margin"] = hi
        result[f"{name}_logit_gap"] = evaluate(hi).logit_gap
    return result


def boost_reweighting(
    image_features: torch.Tensor,
    text_features: torch.Tensor,
    logit_scale,
    gamma: float,
    text_sim: torch.Tensor | None = None,
) -> dict[str, torch.Tensor]:
    """Standard vs boosted image→text posteriors and gradient weights of one batch (App. B.2, Eq. 4).

    ``image_features`` and ``text_features`` are L2-normalised ``[B, D]`` with row i of each forming a pair;
    ``text_sim`` optionally replaces T Tᵀ as the source of Ḡ, as the frozen Ḡ of :class:`hnclip_core.losses.HNClipLoss`
    (pass ``text_features @ text_features.T`` with the two feature sets swapped to get the text→image rows).
    The logits are formed exactly as ``HNClipLoss`` forms its image→text logits. Returns ``[B, B]``
    tensors (no autograd history):

    * ``similarity``: S = V Tᵀ (image–text cosines);
    * ``caption_similarity``: Ḡ = stopgrad(T Tᵀ) with a zero diagonal (:func:`caption_margin` with γ = 1);
    * ``posterior``: p = softmax_j(s·S_i,:) (γ = 0); ``posterior_boosted``: p̃ = softmax_j(s·(S + γḠ)_i,:);
    * ``weight`` / ``weight_boosted``: ∂L_i/∂S_ij of the row term L_i = CE(z_i,:, i), i.e. s·p_ij on the
      negatives (the force pushing negative j away) and s·(p_ii − 1) on the diagonal (the positive's pull).
      These are autograd's gradients of a sum-reduced cross-entropy; the batch-mean loss divides them by B,
      and the symmetric Eq. 1/2 adds the text→image half and halves the total;
    * ``reweighting``: (p̃_ij / p̃_ii) / (p_ij / p_ii), computed from the posteriors in log space — by how
      much negative j's repulsion grew relative to the positive's unboosted entry (Ḡ_ii = 0). For two
      negatives j, k, ``reweighting[i, j] / reweighting[i, k]`` is the change of their relative repulsion
      p_ij / p_ik, which Eq. 4 says is exp(sγ(Ḡ_ij − Ḡ_ik)); so ``reweighting`` itself equals exp(sγḠ_ij).
      It can overflow to inf in fp32 when sγḠ > 88; ``log_reweighting`` is its logarithm;
    * ``logit_scale``, ``gamma``: the scalars used (0-dim tensors).
    """
    with torch.no_grad():
        image_features = image_features.detach()
        text_features = text_features.detach()
        if isinstance(logit_scale, torch.Tensor):
            logit_scale = logit_scale.detach()
        similarity = image_features @ text_features.t()
        if text_sim is None:
            caption_similarity = caption_margin(text_features, text_features, 1.0)
            margin = caption_margin(text_features, text_features, gamma)
        else:
            caption_similarity = text_sim.detach().clone()
            caption_similarity.fill_diagonal_(0.0)
            margin = gamma * text_sim.detach().clone()
            margin.fill_diagonal_(0.0)
        logits = logit_scale * image_features @ text_features.t()
        logits_boosted = logits + (logit_scale * margin).to(logits.dtype) if gamma != 0 else logits
        posterior = F.softmax(logits, dim=1)
        posterior_boosted = F.softmax(logits_boosted, dim=1)
        log_p = F.log_softmax(logits, dim=1)
        log_p_boosted = F.log_softmax(logits_boosted, dim=1)
        log_reweighting = (log_p_boosted - log_p_boosted.diagonal()[:, None]) - (log_p - log_p.diagonal()[:, None])
        eye = torch.eye(similarity.shape[0], dtype=similarity.dtype, device=similarity.device)
        scale = torch.as_tensor(logit_scale, dtype=similarity.dtype, device=similarity.device)
        return {
            "similarity": similarity,
            "caption_similarity": caption_similarity,
            "posterior": posterior,
            "posterior_boosted": posterior_boosted,
            "weight": scale * (posterior - eye),
            "weight_boosted": scale * (posterior_boosted - eye),
            "reweighting": log_reweighting.exp(),
            "log_reweighting": log_reweighting,
            "logit_scale": scale.clone(),
            "gamma": torch.tensor(float(gamma), dtype=similarity.dtype, device=similarity.device),
        }


def hardness_concentration(weights, caption_similarity, top: int = 1) -> float:
    """Share of a row's negative gradient weight that goes to its ``top`` most caption-similar negatives.

    ``weights`` ``[B, B]`` are per-negative gradient weights (e.g. ``weight`` or ``weight_boosted`` of
    :func:`boost_reweighting`; only the off-diagonal entries are used, the positive sits on the diagonal),
    ``caption_similarity`` the matching Ḡ. For each row, the ``top`` negatives with the largest Ḡ are
    picked and their weight is divided by the row's total negative weight; the shares are averaged over
    rows. Rows whose negative weight is exactly zero (fully saturated) have no share and are skipped; NaN
    if all are. This is the "gradient concentrates on near-twins" number of App. B.2: compare γ = 0 with
    γ = 0.5 on the same batch.
    """
    weights = torch.as_tensor(weights).detach().to(torch.float64).cpu()
    similarity = torch.as_tensor(caption_similarity).detach().to(torch.float64).cpu()
    if weights.ndim != 2 or weights.shape[0] != weights.shape[1] or weights.shape != similarity.shape:
        shapes = f"{tuple(weights.shape)} and {tuple(similarity.shape)}"
        raise ValueError(f"expected two square matrices of the same shape, got {shapes}")
    batch = weights.shape[0]
    if not 1 <= top <= batch - 1:
        raise ValueError(f"top must be between 1 and the number of negatives ({batch - 1}), got {top}")
    negative = ~torch.eye(batch, dtype=torch.bool)
    negative_weights = weights.masked_fill(~negative, 0.0)
    hardest = similarity.masked_fill(~negative, -math.inf).topk(top, dim=1).indices
    total = negative_weights.sum(dim=1)
    share = negative_weights.gather(1, hardest).sum(dim=1) / total
    share = share[total > 0]
    return float(share.mean()) if share.numel() else math.nan
