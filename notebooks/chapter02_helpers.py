"""Chapter 2's own helpers: a constructed "strong-initialisation" batch and the chapter's figures of it.

Kept beside the notebooks (as rasbt keeps ``previous_chapters.py``): they are used by several cells of
chapter 2 and by its exercise solutions, and nowhere else, so they do not belong in ``hnclip_core``. The
losses themselves are not here: the chapter writes them out, that is the lesson.

The batch (:func:`strong_init_batch`) mimics what arXiv 2608.18521 §2.1 describes for Long-CLIP on dense
captions: every image already beats its easy negatives by a wide cosine margin, and a single pair of
near-twin captions (cosine 0.95) is separated only narrowly. It is built from orthonormal directions, so
its numbers are exact and independent of any model:

* captions ``t_k = σ_k·style + scene_k`` — a shared "style" direction (dense captions resemble each other,
  Ḡ ≈ 0.2–0.45 between unrelated ones) plus a scene of their own;
* images ``v_k = scene_k + ρ_k·noise_k`` — the scene, blurred by a random direction;
* the twins (pairs 0 and 1) show the same scene and differ in one detail: ``t_k = σ·style + scene_0 + δ·detail_k``
  with δ chosen for the caption cosine, ``v_k = scene_0 + κ·detail_k + ρ·noise`` with κ chosen (by bisection)
  so that each twin image leads the other twin's caption by exactly ``twin_margin``.
"""

from __future__ import annotations

import math

import numpy as np
import torch
import torch.nn.functional as F
from matplotlib.figure import Figure
from matplotlib.patches import Rectangle

from hnclip_core.losses import SOLVED_LOSS_THRESHOLD
from hnclip_core.replication.plots import METHOD_COLOURS

__all__ = ["TWIN", "strong_init_batch", "twin_margin", "batch_summary", "plot_batch_matrices", "plot_twin_dynamics",
           "plot_real_batches"]

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
