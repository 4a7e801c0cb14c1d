"""Chapter 2's own helpers: a constructed "strong-initialisation" batch, the saturation arithmetic of InfoNCE,
the boost's re-weighting of the negatives (Eq. 4), and the chapter's figures (arXiv 2608.18521 §2.1–2.4,
Eq. 1, 2, 4, Fig. 4, App. B.2).

Kept beside the notebooks (as rasbt keeps ``previous_chapters.py``): they are used by several cells of
chapter 2 and by its exercise solutions, and nowhere else, so they do not belong in ``hnclip_core``. The
losses themselves are not here: the chapter writes them out, that is the lesson.

By section of ``02_saturation``:

* §1–2, the constructed batch: :func:`strong_init_batch`, :func:`twin_margin`, :func:`batch_summary`,
  :func:`plot_batch_matrices`, :func:`plot_twin_dynamics`;
* §3, where fp32/bf16/fp16 round the loss and the gradient to zero: :func:`margin_sweep`,
  :func:`saturation_thresholds`, :func:`plot_fp32_saturation`;
* §4, many real batches: :func:`plot_real_batches`;
* §5, Eq. 4: :func:`boost_reweighting`, :func:`hardness_concentration`, :func:`plot_boost_posteriors` and
  its interactive explorer (:func:`boost_explorer_widget`);
* §6, Fig. 4: :func:`plot_gradient_dynamics` and the chapter's closing reading of the run,
  :func:`reading_the_dynamics`.

**The constructed batch** (:func:`strong_init_batch`) mimics what §2.1 describes for Long-CLIP on dense
captions: every image already beats its easy negatives by a wide cosine margin, and a single pair of
near-twin captions (cosine 0.95) is separated only narrowly. It is built from orthonormal directions, so
its numbers are exact and independent of any model:

* captions ``t_k = σ_k·style + scene_k`` — a shared "style" direction (dense captions resemble each other,
  Ḡ ≈ 0.2–0.45 between unrelated ones) plus a scene of their own;
* images ``v_k = scene_k + ρ_k·noise_k`` — the scene, blurred by a random direction;
* the twins (pairs 0 and 1) show the same scene and differ in one detail: ``t_k = σ·style + scene_0 + δ·detail_k``
  with δ chosen for the caption cosine, ``v_k = scene_0 + κ·detail_k + ρ·noise`` with κ chosen (by bisection)
  so that each twin image leads the other twin's caption by exactly ``twin_margin``.

**Floating-point saturation** (§2.1, §2.4). The gradient of Eq. 1 w.r.t. a negative logit is the softmax
posterior p_ij ("each negative j is repelled with force proportional to its posterior", §2.1). When the
positive leads every negative by a logit gap s·Δ, p_neg ≈ exp(−s·Δ) and the loss ≈ (B−1)·exp(−s·Δ). The
paper reports that the loss falls below 1e-3 ("solved") and that the fp32 gradient becomes *exactly* zero.
:func:`margin_sweep` and :func:`saturation_thresholds` measure where each happens with the very cross-entropy
the losses use, in any dtype: in fp32 the loss rounds to exactly 0 long before the negatives' gradient does,
because the loss is a difference of two numbers of size s·Δ (or a log of 1 + tiny) while the gradient p_neg is
a small number in its own right and only vanishes when it drops below fp32's smallest subnormal (≈1.4e-45).

**Gradient concentration** (App. B.2, Eq. 4). With boosted logits z_ij = s(S_ij + γḠ_ij) the row term's
gradient is ∂L_i/∂S_ij = s·p_ij, and for two negatives p_ij / p_ik = exp(s(S_ij − S_ik)) · exp(sγ(Ḡ_ij − Ḡ_ik)):
the boost re-weights relative repulsion by exp(sγΔḠ). :func:`boost_reweighting` computes both posteriors and
the re-weighting for a batch, and :func:`hardness_concentration` summarises how much of a row's push goes to its
most caption-similar negatives.

The figures are plain :class:`matplotlib.figure.Figure` objects, not built through ``pyplot``: nothing is
registered globally, so they work headless with any backend, need no closing, and a notebook (or an
``ipywidgets.interact`` callback) displays the returned figure exactly once.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import asdict, fields, is_dataclass
from typing import NamedTuple

import numpy as np
import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle
from matplotlib.ticker import MaxNLocator

from hnclip_core.diagnostics import GradientMeasurement
from hnclip_core.losses import SOLVED_LOSS_THRESHOLD, caption_margin
from hnclip_core.replication.plots import METHOD_COLOURS, show
from hnclip_core.replication.scorecard import ACTIVE_SHARE, SATURATED_SHARE, alignment

__all__ = [
    "TWIN", "strong_init_batch", "twin_margin", "batch_summary",
    "THRESHOLDS", "margin_sweep", "saturation_thresholds", "boost_reweighting", "hardness_concentration",
    "plot_batch_matrices", "plot_twin_dynamics", "plot_real_batches", "plot_fp32_saturation", "plot_boost_posteriors",
    "boost_explorer_figure", "boost_explorer_widget", "plot_gradient_dynamics", "reading_the_dynamics",
]

# --------------------------------------------------------------------------------------------------------
# §1–2: the constructed batch
# --------------------------------------------------------------------------------------------------------

#: (image, caption) index of the twin's negative logit: image 0 against caption 1 (and, by symmetry, 1 against 0).
TWIN = (0, 1)


def _twin_gap(images: torch.Tensor, texts: torch.Tensor) -> torch.Tensor:
    """Smallest lead of a twin's positive over the other twin, image→text and text→image."""
    S = images @ texts.T
    return torch.stack([S[0, 0] - S[0, 1], S[1, 1] - S[1, 0], S[0, 0] - S[1, 0], S[1, 1] - S[0, 1]]).min()


def strong_init_batch(
    batch_size: int = 16,
    dim: int = 64,
    seed: int = 0,
    twin_caption_similarity: float = 0.95,
    twin_margin: float = 0.15,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Unit-norm ``(images, texts)``, float32 ``[batch_size, dim]``, pairs in matching rows, twins in rows 0 and 1.

    Caption 0 · caption 1 = ``twin_caption_similarity``; each twin image leads the other twin's caption (and
    each twin caption the other twin's image) by ``twin_margin`` in cosine; every other negative trails its
    positive by about 0.3 or more (0.29 at seed 0). Deterministic for a given ``seed``.
    """
    if batch_size < 3 or dim < batch_size + 5:
        raise ValueError("need batch_size >= 3 and dim >= batch_size + 5 (one direction per scene, plus five)")
    if not 0 < twin_caption_similarity < 1:
        raise ValueError("twin_caption_similarity must lie in (0, 1)")
    g = torch.Generator().manual_seed(seed)
    Q, R = torch.linalg.qr(torch.randn(dim, dim, generator=g, dtype=torch.float64))
    basis = (Q * torch.sign(torch.diagonal(R))).T  # orthonormal rows; the signs fixed so that Q is unique
    style, scenes, details = basis[0], basis[1 : batch_size + 1], basis[batch_size + 1 : batch_size + 3]
    sigma = 0.4 + 0.5 * torch.rand(batch_size, generator=g, dtype=torch.float64)  # how "stylish" each caption is
    rho = 0.4 + 0.6 * torch.rand(batch_size, generator=g, dtype=torch.float64)  # how blurred each image is
    noise = F.normalize(torch.randn(batch_size, dim, generator=g, dtype=torch.float64), dim=1)

    texts = sigma[:, None] * style + scenes
    images = scenes + rho[:, None] * noise

    # The twins: one scene, one differing detail. Caption cosine (σ² + 1) / (σ² + 1 + δ²) fixes δ.
    common = sigma[0] * style + scenes[0]
    delta = math.sqrt((sigma[0] ** 2 + 1) * (1 / twin_caption_similarity - 1))
    texts[0], texts[1] = common + delta * details[0], common + delta * details[1]
    shared = noise[0] - (noise[0] @ details.T) @ details  # the twins' common blur, blind to the detail
    texts = F.normalize(texts, dim=1)

    def twin_images(kappa: float) -> torch.Tensor:
        out = images.clone()
        out[0] = scenes[0] + kappa * details[0] + rho[0] * shared
        out[1] = scenes[0] + kappa * details[1] + rho[0] * shared
        return F.normalize(out, dim=1)

    lo, hi = 0.0, 100.0  # the lead grows with κ (how much the image shows the detail); bisect for twin_margin
    if _twin_gap(twin_images(hi), texts) < twin_margin:
        raise ValueError(f"twin_margin {twin_margin} is out of reach for captions at cosine {twin_caption_similarity}")
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if _twin_gap(twin_images(mid), texts) < twin_margin else (lo, mid)
    return twin_images(hi).float(), texts.float()


def twin_margin(images: torch.Tensor, texts: torch.Tensor) -> float:
    """The twins' margin: by how much (cosine) a twin's positive leads the other twin, the smallest of the four
    leads (image 0 and image 1 choosing a caption, caption 0 and caption 1 choosing an image). Features are
    normalised here, so raw parameters can be passed."""
    with torch.no_grad():
        return _twin_gap(F.normalize(images, dim=1), F.normalize(texts, dim=1)).item()


def batch_summary(images: torch.Tensor, texts: torch.Tensor) -> dict[str, float]:
    """The numbers that make the batch "strong": positives, the leads over easy negatives, the twin's geometry."""
    S, G = images @ texts.T, texts @ texts.T
    batch = len(images)
    easy = ~torch.eye(batch, dtype=torch.bool)
    easy[0, 1] = easy[1, 0] = False  # the twin's two negative entries
    leads = torch.cat([(S.diagonal()[:, None] - S)[easy], (S.diagonal()[None, :] - S)[easy]])
    unrelated = ~torch.eye(batch, dtype=torch.bool)
    unrelated[:2, :2] = False
    return {
        "positive_min": S.diagonal().min().item(),
        "positive_max": S.diagonal().max().item(),
        "easy_lead_min": leads.min().item(),
        "twin_margin": twin_margin(images, texts),
        "twin_caption_similarity": G[TWIN].item(),
        "caption_similarity_min": G[unrelated].min().item(),
        "caption_similarity_max": G[unrelated].max().item(),
    }


# --------------------------------------------------------------------------------------------------------
# §3: the arithmetic of saturation (§2.1, §2.4)
# --------------------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------------------
# §5: where the gradient goes (App. B.2, Eq. 4)
# --------------------------------------------------------------------------------------------------------


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


# --------------------------------------------------------------------------------------------------------
# The figures
# --------------------------------------------------------------------------------------------------------


def _outline(ax, cells, colour="white"):
    for i, j in cells:
        ax.add_patch(Rectangle((j - 0.5, i - 0.5), 1, 1, fill=False, edgecolor=colour, linewidth=1.6))


def plot_batch_matrices(S: torch.Tensor, G_bar: torch.Tensor, boosted_logits: torch.Tensor,
                        logit_scale: float, gamma: float) -> Figure:
    """Three heatmaps of one batch side by side: S = V Tᵀ, Ḡ and the boosted logits s(S + γḠ) of Eq. 2.

    The twin's two negative entries, (0, 1) and (1, 0), are outlined, and the values of the top-left 2 × 2
    block (the twins' positives and twin negatives) are written in the cells.
    """
    panels = [
        (S, "image–caption cosine  $S = VT^\\top$", "image i", "caption j", "cividis", (-0.2, 1.0), "{:.2f}"),
        (G_bar, "caption–caption  $\\bar G = \\mathrm{stopgrad}(TT^\\top)\\odot(1-I)$", "caption i", "caption j",
         "cividis", (-0.2, 1.0), "{:.2f}"),
        (boosted_logits, f"boosted logits  $s(S+\\gamma\\bar G)$,  s = {logit_scale:g}, γ = {gamma:g}",
         "image i", "caption j", "magma", None, "{:.0f}"),
    ]
    fig = Figure(figsize=(16.0, 5.3), layout="constrained")
    axes = fig.subplots(1, 3)
    batch = S.shape[0]
    ticks = list(range(0, batch, 3))
    for ax, (matrix, title, ylabel, xlabel, cmap, limits, fmt) in zip(axes, panels, strict=True):
        values = matrix.detach().float().cpu().numpy()
        vmin, vmax = limits if limits else (float(values.min()), float(values.max()))
        image = ax.imshow(values, cmap=cmap, vmin=vmin, vmax=vmax)
        fig.colorbar(image, ax=ax, shrink=0.82)
        _outline(ax, [TWIN, TWIN[::-1]], colour="#00e5ff")
        for i in range(2):
            for j in range(2):
                dark = (values[i, j] - vmin) / (vmax - vmin + 1e-12) < 0.6
                ax.text(j, i, fmt.format(values[i, j]), ha="center", va="center", fontsize=6.5,
                        color="white" if dark else "black")
        ax.set_xticks(ticks)
        ax.set_yticks(ticks)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title, fontsize=10)
    fig.suptitle("The constructed batch: the twins (pairs 0 and 1, outlined negatives) against 14 easy pairs",
                 fontsize=11)
    return fig


def plot_twin_dynamics(histories: dict[str, dict], gamma: float, boosted: str | None = None) -> Figure:
    """Loss, gradient on the twin's logit and twin margin per optimisation step, one line per loss.

    ``histories`` maps a legend label to ``{"loss", "twin_grad", "twin_margin", "twin_caption_similarity"}``
    lists (one entry per step). For the label ``boosted`` the margin that Eq. 2 asks of the twin, γ·Ḡ_01, is
    drawn as a dotted line. Values that are exactly zero are drawn on the bottom edge of the log panels as
    hollow markers.
    """
    colours = [METHOD_COLOURS["clip"], METHOD_COLOURS["hn"], "#2ca02c", "#9467bd"]
    markers = ["o", "s", "^", "D"]
    fig = Figure(figsize=(15.5, 4.8), layout="constrained")
    ax_loss, ax_grad, ax_margin = fig.subplots(1, 3)
    for ax, key in ((ax_loss, "loss"), (ax_grad, "twin_grad")):
        series = [np.abs(np.asarray(h[key], dtype=np.float64)) for h in histories.values()]
        positive = np.concatenate([s[s > 0] for s in series] + [np.array([1.0])])
        floor = 10.0 ** (math.floor(math.log10(positive.min())) - 1)
        for (label, values), colour, marker in zip(zip(histories, series, strict=True), colours, markers,
                                                   strict=False):
            steps = np.arange(len(values))
            ax.plot(steps, np.where(values > 0, values, np.nan), color=colour, marker=marker, markersize=3,
                    label=label)
            zero = values == 0
            if zero.any():
                ax.plot(steps[zero], np.full(int(zero.sum()), floor), linestyle="none", marker="v", markersize=6,
                        markerfacecolor="none", markeredgecolor=colour, clip_on=False,
                        label=f"{label}: exactly 0 in fp32")
        ax.set_yscale("log")
        ax.set_ylim(bottom=floor)
        ax.set_xlabel("optimisation step (SGD)")
        ax.legend(fontsize=8, loc="center right")
    ax_loss.axhline(SOLVED_LOSS_THRESHOLD, color="grey", linewidth=0.9, linestyle=":")
    ax_loss.annotate(f"'solved' level {SOLVED_LOSS_THRESHOLD:g}", xy=(0.02, SOLVED_LOSS_THRESHOLD),
                     xycoords=("axes fraction", "data"), xytext=(0, 3), textcoords="offset points", fontsize=8,
                     color="grey")
    ax_loss.set_ylabel("loss (log scale)")
    ax_loss.set_title("the loss", fontsize=10)
    ax_grad.set_ylabel("$|\\partial\\mathcal{L}/\\partial z_{01}|$ (log scale)")
    ax_grad.set_title("gradient on the twin's negative logit $z_{01}$", fontsize=10)
    for (label, history), colour, marker in zip(histories.items(), colours, markers, strict=False):
        steps = np.arange(len(history["twin_margin"]))
        ax_margin.plot(steps, history["twin_margin"], color=colour, marker=marker, markersize=3, label=label)
        if label == boosted:
            asked = gamma * np.asarray(history["twin_caption_similarity"], dtype=np.float64)
            ax_margin.plot(steps, asked, color=colour, linestyle=":", linewidth=1.6,
                           label=f"the margin it asks for, $\\gamma\\bar G_{{01}}$ (γ = {gamma:g})")
    ax_margin.set_xlabel("optimisation step (SGD)")
    ax_margin.set_ylabel("twin margin (cosine): positive − twin")
    ax_margin.set_title("how far each twin's positive leads the other twin", fontsize=10)
    ax_margin.legend(fontsize=8, loc="center right")
    fig.suptitle("The constructed batch as free parameters: the same start, one loss each", fontsize=11)
    return fig


def plot_real_batches(losses: dict[str, torch.Tensor], max_caption_similarity: torch.Tensor, scale: float) -> Figure:
    """Per-batch losses of many real micro-batches: their distribution (left) and against the most similar
    caption pair the batch holds (right), with the 'solved' level 1e-3."""
    fig = Figure(figsize=(11, 3.8), layout="constrained")
    left, right = fig.subplots(1, 2)
    floor = 1e-12  # a loss that rounds to exactly 0 is drawn here
    bins = np.logspace(-12, 2, 43)
    for (name, values), colour in zip(losses.items(), (METHOD_COLOURS["clip"], METHOD_COLOURS["hn"]), strict=False):
        shown = values.clamp(min=floor).numpy()
        left.hist(shown, bins=bins, alpha=0.7, color=colour, label=name)
        right.scatter(max_caption_similarity.numpy(), shown, s=10, alpha=0.6, color=colour, label=name)
    left.axvline(SOLVED_LOSS_THRESHOLD, color="grey", linestyle=":", label="'solved' level 1e-3")
    right.axhline(SOLVED_LOSS_THRESHOLD, color="grey", linestyle=":", label="'solved' level 1e-3")
    left.set(xscale="log", xlabel="batch loss (log scale)", ylabel="micro-batches",
             title=f"{len(max_caption_similarity)} random micro-batches at s = {scale:.0f}")
    right.set(yscale="log", xlabel="most similar caption pair in the batch (max Ḡ)", ylabel="batch loss (log scale)",
              title="what keeps a batch unsolved")
    left.legend(fontsize=8)
    right.legend(fontsize=8)
    return fig


_SHORT_DTYPE = {"float32": "fp32", "bfloat16": "bf16", "float16": "fp16", "float64": "fp64"}
_LOSS_COLOUR = METHOD_COLOURS["clip"]
_GRAD_COLOUR = "#2ca02c"
_STANDARD_COLOUR = METHOD_COLOURS["clip"]
_BOOSTED_COLOUR = METHOD_COLOURS["hn"]
_THRESHOLD_STYLES = {"solved": ":", "loss_zero": "--", "negative_grad_zero": "-", "positive_grad_zero": "-."}


def _floor(*series, default: float = 1e-10) -> float:
    """A power of ten one decade below the smallest positive finite value: where exact zeros are drawn."""
    values = np.concatenate([np.asarray(s, dtype=np.float64).ravel() for s in series])
    positive = values[np.isfinite(values) & (values > 0)]
    if positive.size == 0:
        return default
    return 10.0 ** (math.floor(math.log10(positive.min())) - 1)


def _plot_with_zeros(ax, x, y, floor, colour, label, zero_label, linestyle="-", marker="o", zero_marker="v"):
    """``y`` on a log axis; exact zeros as hollow markers (down-triangles) on the bottom edge at ``floor``."""
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    zero = y == 0.0
    ax.plot(x, np.where(y > 0, y, np.nan), linestyle=linestyle, marker=marker, markersize=3, color=colour,
            label=label)
    if zero.any():
        ax.plot(x[zero], np.full(int(zero.sum()), floor), linestyle="none", marker=zero_marker, markersize=7,
                markerfacecolor="none", markeredgecolor=colour, clip_on=False, zorder=5, label=zero_label)


def _saturation_headline(thresholds: dict, dtype: str) -> str:
    loss_gap = thresholds.get("loss_zero_logit_gap", math.nan)
    grad_gap = thresholds.get("negative_grad_zero_logit_gap", math.nan)
    if not (np.isfinite(loss_gap) and np.isfinite(grad_gap)):
        return "the loss and the negatives' gradient as computed"
    if loss_gap < grad_gap:
        return (f"the loss is exactly 0 from s·Δ = {loss_gap:.1f}, "
                f"the negatives' gradient only from s·Δ = {grad_gap:.1f}")
    return f"the negatives' gradient underflows to 0 at s·Δ = {grad_gap:.1f}, before the loss does ({loss_gap:.1f})"


def plot_fp32_saturation(sweep: dict, thresholds: dict) -> Figure:
    """Loss and negative-logit gradient of InfoNCE against the cosine margin Δ by which the batch is solved.

    ``sweep`` is :func:`margin_sweep`'s output, ``thresholds`` :func:`saturation_thresholds`'s for the same s,
    batch size and dtype (the name says fp32, the dtype is taken from ``thresholds``). Both curves share a log
    axis; values that are exactly zero are drawn on the bottom edge as hollow markers labelled "exactly 0 in
    fp32"; each saturation threshold inside the plotted range is a vertical line tagged with its letter (a–d),
    explained with its Δ and s·Δ in the legend. A top axis shows the logit gap s·Δ. One axes (the secondary top
    axis is not in ``fig.axes``).
    """
    dtype = _SHORT_DTYPE.get(thresholds.get("dtype", "float32"), thresholds.get("dtype", "fp32"))
    scale = float(thresholds.get("logit_scale", 100.0))
    batch = thresholds.get("batch_size")
    margin = np.asarray(sweep["margin"], dtype=np.float64)
    loss = np.asarray(sweep["loss"], dtype=np.float64)
    grad = np.abs(np.asarray(sweep["negative_grad"], dtype=np.float64))
    floor = _floor(loss, grad)

    fig = Figure(figsize=(8.0, 5.4), layout="constrained")
    ax = fig.add_subplot()
    _plot_with_zeros(ax, margin, loss, floor, _LOSS_COLOUR, "loss (symmetric InfoNCE)",
                     f"loss exactly 0 in {dtype}")
    _plot_with_zeros(ax, margin, grad, floor, _GRAD_COLOUR, "gradient on one negative's logit",
                     f"gradient exactly 0 in {dtype}", marker="s", zero_marker="D")
    ax.axhline(SOLVED_LOSS_THRESHOLD, color="grey", linewidth=0.8, linestyle=":",
               label=f"'solved' loss level ({SOLVED_LOSS_THRESHOLD:g})")
    ax.set_yscale("log")
    ax.set_ylim(bottom=floor)
    lo, hi = float(margin.min()), float(margin.max())
    ax.set_xlim(lo, hi)

    # One vertical line per distinct threshold, tagged a-d; events reached at the same margin share a line.
    groups: list[list] = []  # [margin, tags]
    for tag, (name, description) in zip("abcd", THRESHOLDS.items(), strict=False):
        value = thresholds.get(f"{name}_margin", math.nan)
        if not (np.isfinite(value) and lo <= value <= hi):
            continue
        gap = thresholds.get(f"{name}_logit_gap", scale * value)
        same = [g for g in groups if math.isclose(g[0], value, rel_tol=1e-9)]
        if same:
            same[0][1].append(tag)
        else:
            groups.append([value, [tag]])
        ax.axvline(value, color="black", linewidth=0.9, linestyle=_THRESHOLD_STYLES[name],
                   label=f"({tag}) {description}: Δ = {value:.3f}, s·Δ = {gap:.1f}")
    for index, (value, tags) in enumerate(sorted(groups)):
        ax.annotate(",".join(tags), xy=(value, 0.97 - 0.07 * index), xycoords=("data", "axes fraction"),
                    xytext=(3, 0), textcoords="offset points", ha="left", va="top", fontsize=8,
                    bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "none", "pad": 1.0})

    top = ax.secondary_xaxis("top", functions=(lambda m: m * scale, lambda g: g / scale))
    top.set_xlabel("logit gap s·Δ")
    ax.set_xlabel("cosine margin Δ by which each positive beats every negative")
    ax.set_ylabel("value (log scale)")
    batch_text = f", batch of {batch}" if batch is not None else ""
    ax.set_title(f"InfoNCE on a solved batch in {dtype} (s = {scale:g}{batch_text}):\n"
                 f"{_saturation_headline(thresholds, dtype)}", fontsize=10)
    fig.legend(*ax.get_legend_handles_labels(), loc="outside lower center", ncol=2, fontsize=8)
    return fig


def _as_numpy(value) -> np.ndarray:
    if isinstance(value, torch.Tensor):
        return value.detach().to(torch.float64).cpu().numpy()
    return np.asarray(value, dtype=np.float64)


def plot_boost_posteriors(reweighting: dict, row: int = 0, max_negatives: int | None = 31) -> Figure:
    """Standard vs boosted posteriors and negative gradient shares of one query (App. B.2, Eq. 4).

    ``reweighting`` is :func:`boost_reweighting`'s output. For image ``row``: (top) the posteriors p (γ = 0) and
    p̃ (boosted) of its own caption (marked "positive", hatched) and of the negatives, on a log axis; (bottom)
    each negative's share of the row's total push-away gradient s·p_ij / Σ_k s·p_ik. Negatives are sorted by
    their caption similarity Ḡ to the query's caption, most similar first, and the tick labels show Ḡ; only the
    ``max_negatives`` most similar are drawn (shares are still of the whole row). Two axes.
    """
    similarity = _as_numpy(reweighting["caption_similarity"])[row]
    posterior = _as_numpy(reweighting["posterior"])[row]
    boosted = _as_numpy(reweighting["posterior_boosted"])[row]
    weight = _as_numpy(reweighting["weight"])[row]
    weight_boosted = _as_numpy(reweighting["weight_boosted"])[row]
    scale = float(_as_numpy(reweighting["logit_scale"]))
    gamma = float(_as_numpy(reweighting["gamma"]))

    batch = similarity.shape[0]
    negatives = np.array([j for j in range(batch) if j != row])
    negatives = negatives[np.argsort(-similarity[negatives], kind="stable")]
    shown = negatives if max_negatives is None else negatives[:max_negatives]
    columns = np.concatenate([[row], shown])
    x = np.arange(len(columns))
    width = 0.4

    def shares(w):
        total = w[negatives].sum()
        return w[shown] / total if total > 0 else np.zeros(len(shown))

    fig = Figure(figsize=(max(6.0, 0.32 * len(columns) + 2.5), 6.2), layout="constrained")
    ax_p, ax_w = fig.subplots(2, 1, sharex=True)
    floor = _floor(posterior[columns], boosted[columns], default=1e-30)
    for offset, values, colour, label in ((-width / 2, posterior, _STANDARD_COLOUR, "standard (γ = 0)"),
                                          (width / 2, boosted, _BOOSTED_COLOUR, f"boosted (γ = {gamma:g})")):
        bars = ax_p.bar(x + offset, np.maximum(values[columns], floor), width, bottom=0, color=colour, label=label)
        bars[0].set_hatch("//")
        bars[0].set_edgecolor("black")
    ax_p.set_yscale("log")
    ax_p.set_ylim(bottom=floor)
    ax_p.axvline(0.5, color="grey", linewidth=0.8)
    ax_p.set_ylabel("softmax probability p\n(log scale)")
    ax_p.legend(fontsize=8, loc="upper right")

    standard_share = shares(weight)
    boosted_share = shares(weight_boosted)
    ax_w.bar(x[1:] - width / 2, standard_share, width, color=_STANDARD_COLOUR, label="standard (γ = 0)")
    ax_w.bar(x[1:] + width / 2, boosted_share, width, color=_BOOSTED_COLOUR, label=f"boosted (γ = {gamma:g})")
    ax_w.axvline(0.5, color="grey", linewidth=0.8)
    ax_w.set_ylabel("share of the push-away\ngradient s·p on negatives")
    ax_w.set_xticks(x, ["positive"] + [f"{similarity[j]:.2f}" for j in shown], rotation=90, fontsize=7)
    ax_w.set_xlabel("negatives sorted by caption similarity Ḡ to the query's own caption (tick label = Ḡ)")
    matrix = reweighting["caption_similarity"]
    standard_top = hardness_concentration(reweighting["weight"], matrix)
    boosted_top = hardness_concentration(reweighting["weight_boosted"], matrix)
    ax_w.legend(fontsize=8, loc="upper right",
                title=f"batch mean share of the most similar negative: {standard_top:.2f} → {boosted_top:.2f}",
                title_fontsize=8)
    extra = "" if len(shown) == len(negatives) else f" ({len(shown)} of {len(negatives)} negatives shown)"
    fig.suptitle(f"Image {row}: where the gradient goes, s = {scale:g}, γ = {gamma:g}\n"
                 f"(a caption-similarity gap of 0.1 multiplies the relative push by e^(sγ·0.1) = "
                 f"{math.exp(scale * gamma * 0.1):.3g}){extra}", fontsize=9.5)
    return fig


def boost_explorer_figure(image_features, text_features, gamma: float, logit_scale: float, row: int = 0) -> Figure:
    """:func:`plot_boost_posteriors` for one batch at the given γ and s — the callback of a notebook widget::

        ipywidgets.interact(boost_explorer_figure, image_features=ipywidgets.fixed(V),
                            text_features=ipywidgets.fixed(T), gamma=(0.0, 1.0, 0.05),
                            logit_scale=(10.0, 100.0, 5.0), row=(0, len(V) - 1))
    """
    return plot_boost_posteriors(boost_reweighting(image_features, text_features, logit_scale, gamma), row=row)


def _field_kind(annotation) -> str:
    return annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))


def _convert(value, kind: str):
    if kind == "bool":
        if isinstance(value, str):
            text = value.strip().lower()
            if text not in ("true", "false", "1", "0"):
                raise ValueError(f"not a boolean: {value!r}")
            return text in ("true", "1")
        return bool(value)
    if kind == "int":
        return int(float(value))
    return float(value)


def _measurement_columns(measurements) -> dict[str, np.ndarray]:
    """Columns of :class:`~hnclip_core.diagnostics.GradientMeasurement` rows (dataclasses or CSV dicts)."""
    kinds = {f.name: _field_kind(f.type) for f in fields(GradientMeasurement)}
    columns: dict[str, list] = {name: [] for name in kinds}
    for m in measurements:
        row = asdict(m) if is_dataclass(m) else m
        for name, kind in kinds.items():
            columns[name].append(_convert(row.get(name, "nan"), kind))
    return {name: np.asarray(values) for name, values in columns.items()}


def plot_gradient_dynamics(measurements: list, history: list[dict] | None = None) -> Figure:
    """The layout of the paper's Fig. 4 from :class:`hnclip_core.diagnostics.GradientMonitor` measurements.

    ``measurements``: :class:`~hnclip_core.diagnostics.GradientMeasurement` instances or dicts with its
    fields (e.g. rows of its CSV, values as strings). ``history``: optional rows with ``epoch`` and
    ``mean_r1``. Panels: (a) L_CLIP and L_HN per measured step on a log axis with the 1e-3 "solved" line;
    (b) ‖∇L_CLIP‖ and ‖∇L_HN‖ (log axis) with their ratio on a second log axis; (c) the cosine between the
    two gradients; (d) held-out error 100 − mean R@1 per epoch (a note if ``history`` is None). Exact zeros
    are drawn on the bottom edge as hollow triangles; faint vertical lines mark epoch boundaries. Five axes
    (four panels plus the ratio's twin axis).
    """
    c = _measurement_columns(measurements)
    order = np.argsort(c["step"], kind="stable")
    c = {name: values[order] for name, values in c.items()}
    step = c["step"].astype(np.float64)
    clip_colour, hn_colour = METHOD_COLOURS["clip"], METHOD_COLOURS["hn"]

    fig = Figure(figsize=(11.0, 7.6), layout="constrained")
    (ax_loss, ax_grad), (ax_cos, ax_err) = fig.subplots(2, 2)
    boundaries = step[1:][np.diff(c["epoch"]) != 0] if len(step) > 1 else []
    for ax in (ax_loss, ax_grad, ax_cos):
        for boundary in boundaries:
            ax.axvline(boundary, color="grey", linewidth=0.5, alpha=0.5)

    loss_floor = _floor(c["loss_clip"], c["loss_hn"])
    _plot_with_zeros(ax_loss, step, c["loss_clip"], loss_floor, clip_colour, "standard InfoNCE  L_CLIP",
                     "L_CLIP exactly 0 in fp32")
    _plot_with_zeros(ax_loss, step, c["loss_hn"], loss_floor, hn_colour, "boosted  L_HN", "L_HN exactly 0 in fp32",
                     marker="s", zero_marker="D")
    ax_loss.axhline(SOLVED_LOSS_THRESHOLD, color="black", linewidth=0.9, linestyle="--",
                    label=f"'solved' ({SOLVED_LOSS_THRESHOLD:g})")
    ax_loss.set_yscale("log")
    ax_loss.set_ylim(bottom=loss_floor)
    solved = (f"solved: L_CLIP {100 * c['solved_clip'].mean():.0f} %, L_HN {100 * c['solved_hn'].mean():.0f} %"
              if len(step) else "")
    if len(step) and "micro_solved_clip" in c and not np.isnan(c["micro_solved_clip"]).all():
        solved += f"; micro-batches: L_CLIP {100 * np.nanmean(c['micro_solved_clip']):.0f} %"
    ax_loss.set_title(f"(a) Loss of each measured step (mean of its micro-batches)\n[{solved}]", fontsize=10)
    ax_loss.set_xlabel("optimizer step")
    ax_loss.set_ylabel("loss (log scale)")
    ax_loss.legend(fontsize=7.5, loc="best")

    norm_clip = np.where(c["grad_zero_clip"], 0.0, c["grad_norm_clip"]).astype(np.float64)
    norm_hn = np.where(c["grad_zero_hn"], 0.0, c["grad_norm_hn"]).astype(np.float64)
    grad_floor = _floor(norm_clip, norm_hn)
    _plot_with_zeros(ax_grad, step, norm_clip, grad_floor, clip_colour, "‖∇L_CLIP‖", "‖∇L_CLIP‖ exactly 0 in fp32")
    _plot_with_zeros(ax_grad, step, norm_hn, grad_floor, hn_colour, "‖∇L_HN‖", "‖∇L_HN‖ exactly 0 in fp32",
                     marker="s", zero_marker="D")
    ax_grad.set_yscale("log")
    ax_grad.set_ylim(bottom=grad_floor)
    ax_ratio = ax_grad.twinx()
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(norm_clip > 0, norm_hn / norm_clip, np.nan)
    ax_ratio.plot(step, np.where(ratio > 0, ratio, np.nan), color="#9467bd", linestyle="none", marker="x",
                  markersize=4, label="ratio ‖∇L_HN‖ / ‖∇L_CLIP‖")
    ax_ratio.set_yscale("log")
    ax_ratio.set_ylabel("ratio ‖∇L_HN‖ / ‖∇L_CLIP‖ (log scale)", color="#9467bd")
    zero_share = f"∇L_CLIP exactly 0 in {100 * c['grad_zero_clip'].mean():.0f} %" if len(step) else ""
    ax_grad.set_title(f"(b) Gradient size over all parameters  [{zero_share}]", fontsize=10)
    ax_grad.set_xlabel("optimizer step")
    ax_grad.set_ylabel("gradient norm (log scale)")
    handles, labels = ax_grad.get_legend_handles_labels()
    ratio_handles, ratio_labels = ax_ratio.get_legend_handles_labels()
    ax_grad.legend(handles + ratio_handles, labels + ratio_labels, fontsize=7.5)

    cosine = c["grad_cosine"].astype(np.float64)
    defined = np.isfinite(cosine)
    ax_cos.plot(step[defined], cosine[defined], linestyle="-", marker="o", markersize=3, color="#8c564b")
    ax_cos.axhline(0.0, color="grey", linewidth=0.8)
    ax_cos.set_ylim(-1.05, 1.05)
    summary = "no defined values"
    if defined.any():
        summary = (f"mean {cosine[defined].mean():.2f}, sd {cosine[defined].std():.2f}; "
                   f"undefined (a gradient is 0) at {int((~defined).sum())} steps")
    ax_cos.text(0.02, 0.03, summary, transform=ax_cos.transAxes, fontsize=8, va="bottom",
                bbox={"facecolor": "white", "alpha": 0.85, "edgecolor": "none"})
    ax_cos.set_title("(c) Do the two gradients point the same way?", fontsize=10)
    ax_cos.set_xlabel("optimizer step")
    ax_cos.set_ylabel("cosine(∇L_CLIP, ∇L_HN)")

    if history:
        epochs = np.array([float(h["epoch"]) for h in history])
        error = np.array([100.0 - float(h["mean_r1"]) for h in history])
        order = np.argsort(epochs, kind="stable")
        ax_err.plot(epochs[order], error[order], marker="o", color=hn_colour)
        ax_err.set_xlabel("epoch")
        ax_err.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax_err.set_ylabel("held-out error, 100 − mean R@1 (%)")
    else:
        ax_err.text(0.5, 0.5, "no held-out evaluation history given", ha="center", va="center",
                    transform=ax_err.transAxes, fontsize=9, color="grey")
        ax_err.set_axis_off()
    ax_err.set_title("(d) Retrieval error on held-out data", fontsize=10)
    fig.suptitle("Gradient dynamics of standard vs boosted contrastive loss (paper Fig. 4 layout)", fontsize=11)
    return fig


def boost_explorer_widget(image_features, text_features, gamma: float = 0.5, logit_scale: float = 100.0):
    """The interactive version of :func:`boost_explorer_figure`: sliders for γ, s and the query row.

    Returns an ``ipywidgets.interactive`` to ``display``. It draws only when its button is pressed
    (``manual``), so executing the cell headless (papermill, nbval) never renders into a widget — which can
    hang a kernel without a front end.
    """
    import ipywidgets as widgets

    def draw(gamma, logit_scale, row):
        show(boost_explorer_figure(image_features, text_features, gamma, logit_scale, row))

    return widgets.interactive(
        draw,
        {"manual": True, "manual_name": "draw"},
        gamma=widgets.FloatSlider(value=gamma, min=0.0, max=1.0, step=0.05, description="γ"),
        # step 0.1: the slider starts at the model's own s (e.g. 78.1), not at the nearest multiple of a coarser step
        logit_scale=widgets.FloatSlider(value=logit_scale, min=5.0, max=100.0, step=0.1, readout_format=".1f",
                                        description="s"),
        row=widgets.IntSlider(value=0, min=0, max=len(image_features) - 1, description="query"),
    )


def reading_the_dynamics(zero_shot_solved: float, diagnostics: list[dict], history: list[dict], paper: dict) -> str:
    """The chapter's closing paragraph, worded from the gradient-dynamics run and the zero-shot batches.

    ``zero_shot_solved``: share of random micro-batches with L_CLIP < 1e-3 before fine-tuning (§4 of the
    chapter); ``diagnostics``: the monitor's per-epoch summaries; ``history``: held-out recall per epoch
    (epoch 0 = zero-shot); ``paper``: :data:`hnclip_core.replication.paper.SATURATION`.
    """
    def solved(d, loss):  # per micro-batch where the monitor recorded it, else per measured step
        return d.get(f"micro_solved_{loss}", d[f"solved_{loss}"])

    strong = zero_shot_solved > 0.5
    clip_solved = [solved(d, "clip") for d in diagnostics]
    hn_active = [1 - solved(d, "hn") for d in diagnostics]
    zero_grad = max(d["grad_zero_clip"] for d in diagnostics)
    ratios = [d["median_grad_ratio"] for d in diagnostics]
    medians = [d["cosine_median"] for d in diagnostics]
    gradients = alignment(diagnostics)  # the scorecard's gradient_aligned rule, on this run
    parameters = diagnostics[0]["parameters"]
    random_spread = 1 / math.sqrt(parameters)
    ratio_low, ratio_high = paper["grad_ratio_range"]
    before, after = history[0]["mean_r1"], history[-1]["mean_r1"]

    def span(values, fmt):
        low, high = min(values), max(values)
        return format(low, fmt) if format(low, fmt) == format(high, fmt) else f"{format(low, fmt)}–{format(high, fmt)}"

    text = [
        f"**Reading the results.** Before any fine-tuning InfoNCE is below 10⁻³ on {100 * zero_shot_solved:.0f} % of "
        f"random micro-batches (section 4; the paper: {100 * paper['solved_clip_first_epoch']:.0f} % within epoch "
        "1): " + ("a strong initialisation in the paper's sense. " if strong else
                  "not yet the paper's strong initialisation. ")
        + f"During fine-tuning, {span([100 * v for v in clip_solved], '.0f')} % of the measured micro-batches per "
        "epoch "
        f"are solved for InfoNCE, while L_HN is at or above 10⁻³ on {span([100 * v for v in hn_active], '.0f')} % of "
        f"them (the paper: at least {100 * paper['active_hn_min']:.0f} % in every epoch)"
        + (" — the saturation of §2.4, measured rather than constructed." if clip_solved[0] > SATURATED_SHARE
           and min(hn_active) > ACTIVE_SHARE else ".")
    ]
    if zero_grad == 0:
        text.append(f"No fp32 gradient of InfoNCE is exactly zero in any measurement (the paper: "
                    f"{100 * paper['grad_zero_clip']:.0f} %): section 3 showed that this needs a cosine margin above "
                    "the fp32 threshold, or half precision.")
    else:
        text.append(f"InfoNCE's fp32 gradient is exactly zero in up to {100 * zero_grad:.0f} % of an epoch's "
                    f"measurements (the paper: {100 * paper['grad_zero_clip']:.0f} %).")
    place = ("below" if max(ratios) < ratio_low else "above" if min(ratios) > ratio_high else "within")
    power = lambda x: "10" + str(round(math.log10(x))).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))  # noqa: E731
    text.append(f"The boosted gradient is {span(ratios, '.3g')} times larger than InfoNCE's (per-epoch median), "
                f"{place} the paper's range {power(ratio_low)}–{power(ratio_high)}, "
                + ("and positively aligned with it" if gradients.aligned else "and not consistently aligned with it")
                + f": the two gradients' cosine is positive on {100 * gradients.positive_share:.0f} % of the "
                f"measurements, where two "
                f"random directions in these {parameters / 1e6:.1f} M parameters would be on 50 % (cosine 0 ± "
                f"{random_spread:.1g}), with a median of {span(medians, '.2f')} per epoch (the paper: positive on "
                f"{100 * paper['cosine_positive']:.0f} %, median {paper['cosine_median']:.2f}, Fig. A8).")
    text.append(f"Panel (d): held-out average R@1 goes from {before:.1f} (zero-shot) to {after:.1f} after "
                + ("one epoch" if history[-1]["epoch"] == 1 else f"{history[-1]['epoch']} epochs")
                + (" — in these short epochs fine-tuning costs the toy retrieval; chapter 3 measures how much each "
                   "loss gains or loses over full runs." if after < before else
                   " — fine-tuning helps already; chapter 3 compares the two losses over full runs."))
    return " ".join(text)
