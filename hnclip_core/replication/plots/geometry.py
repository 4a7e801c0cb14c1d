"""Figures of chapter 1, caption geometry (arXiv 2608.18521 §2.1, Fig. 1, Fig. A1–A6)."""

from __future__ import annotations

import difflib
import html
import textwrap
from collections.abc import Sequence

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from ..geometry import CaptionGeometry, InBatchHardness, NearDuplicate, differing_phrases


def plot_caption_similarity(
    geometry: CaptionGeometry, label: str, paper: dict[str, dict[str, float]] | None = None
) -> Figure:
    """Fig. 1: histograms of (a) pairwise caption cosines and (b) each caption's hardest-negative cosine.

    Dotted lines mark our means; ``paper`` (e.g. :data:`hnclip_core.replication.paper.CAPTION_GEOMETRY`) adds the
    paper's Long-CLIP-L means as dashed grey lines for comparison.
    """
    fig = Figure(figsize=(10, 3.6))
    axes = fig.subplots(1, 2)
    panels = (
        (axes[0], geometry.pairwise_similarities, geometry.mean_pairwise, "mean_pairwise", "(a) all caption pairs"),
        (axes[1], geometry.hardest_negative, geometry.mean_hardest, "mean_hardest",
         "(b) each caption's hardest negative"),
    )
    for ax, values, mean, key, title in panels:
        ax.hist(np.asarray(values, dtype=float), bins=60, range=(-0.2, 1.0), color="#4c72b0", alpha=0.85)
        ax.axvline(mean, color="black", linestyle=":", label=f"{label}: mean {mean:.2f}")
        for n, stats in enumerate((paper or {}).values()):
            ax.axvline(stats[key], color="grey", linestyle="--", linewidth=0.8,
                       label="paper's benchmarks (Long-CLIP-L)" if n == 0 else None)
        ax.set_title(title)
        ax.set_xlabel("caption–caption cosine similarity")
        ax.set_ylabel("count")
        ax.legend(loc="upper left", fontsize=8)
    fig.suptitle("How similar are the captions? (dashed: the paper's benchmarks under Long-CLIP-L)", fontsize=10)
    fig.tight_layout()
    return fig


def plot_batch_matrix(matrix, captions: Sequence[str] | None = None, title: str = "Ḡ of one batch") -> Figure:
    """Fig. A5: the detached caption-similarity matrix Ḡ of one batch (diagonal masked), values annotated.

    ``captions`` (optional) label the rows with their first words.
    """
    values = np.asarray(matrix, dtype=float)
    size = values.shape[0]
    shown = np.ma.masked_where(np.eye(size, dtype=bool), values)
    fig = Figure(figsize=(0.75 * size + 2.5, 0.6 * size + 1.2))
    ax = fig.subplots()
    image = ax.imshow(shown, vmin=0.0, vmax=1.0, cmap="viridis")
    off_diagonal = values[~np.eye(size, dtype=bool)]
    hardest = np.unravel_index(np.argmax(np.where(np.eye(size, dtype=bool), -np.inf, values)), values.shape)
    for i in range(size):
        for j in range(size):
            if i != j:
                weight = "bold" if (i, j) == hardest else "normal"
                ax.text(j, i, f"{values[i, j]:.2f}", ha="center", va="center", fontsize=7, color="white",
                        fontweight=weight)
    ax.set_xticks(range(size))
    ax.set_yticks(range(size))
    if captions is not None:
        ax.set_yticklabels([textwrap.shorten(c, 28, placeholder="…") for c in captions], fontsize=7)
    ax.set_title(f"{title}: off-diagonal mean {off_diagonal.mean():.2f}, max {off_diagonal.max():.2f}")
    fig.colorbar(image, ax=ax, label="caption cosine (diagonal masked)")
    fig.tight_layout()
    return fig


def plot_hardness_buckets(compositions: dict[str, InBatchHardness | dict[str, float]]) -> Figure:
    """Fig. A6C: stacked bars of in-batch negatives by caption-similarity bucket, one bar per entry."""
    names = list(compositions)
    fractions = [c.bucket_fractions if isinstance(c, InBatchHardness) else c for c in compositions.values()]
    labels = list(fractions[0])
    colours = matplotlib.colormaps["magma"](np.linspace(0.25, 0.85, len(labels)))
    fig = Figure(figsize=(2.0 + 1.4 * len(names), 3.6))
    ax = fig.subplots()
    bottom = np.zeros(len(names))
    for label, colour in zip(labels, colours, strict=True):
        heights = np.array([100 * f[label] for f in fractions])
        ax.bar(names, heights, bottom=bottom, color=colour, label=f"Ḡ {label}")
        for x, (h, b) in enumerate(zip(heights, bottom, strict=True)):
            if h >= 4:
                ax.text(x, b + h / 2, f"{h:.0f}%", ha="center", va="center", fontsize=8, color="white")
        bottom += heights
    ax.set_ylabel("% of in-batch negatives")
    ax.set_ylim(0, 100)
    ax.set_title("How hard are the negatives a caption meets in a batch?")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig


def plot_near_twins(pairs: Sequence[NearDuplicate], images: Sequence[tuple], captions: Sequence[str]) -> Figure:
    """Fig. A1–A4: near-twin caption pairs with their images; under each image, where its caption differs.

    ``images[k]`` is the ``(image_i, image_j)`` PIL pair of ``pairs[k]``; the differences are a word-level
    diff of the two captions (:func:`~hnclip_core.replication.geometry.differing_phrases`).
    """
    rows = len(pairs)
    fig = Figure(figsize=(6.4, 2.9 * rows))
    axes = fig.subplots(rows, 2, squeeze=False)
    for (ax_i, ax_j), pair, (image_i, image_j) in zip(axes, pairs, images, strict=True):
        only_i, only_j = differing_phrases(captions[pair.i], captions[pair.j])
        sides = ((ax_i, image_i, pair.i, only_i), (ax_j, image_j, pair.j, only_j))
        for ax, image, index, only in sides:
            ax.imshow(image)
            ax.set_xticks([])
            ax.set_yticks([])
            text = " … ".join(only) if only else "(identical caption)"
            ax.set_xlabel(textwrap.shorten(f"differs: {text}", 110, placeholder=" …"), fontsize=8, color="#c0392b",
                          wrap=True)
            ax.set_title(f"caption {index}", fontsize=9)
        ax_i.text(1.1, 1.14, f"cos {pair.similarity:.3f} · {len(pair.shared_words)} shared words",
                  transform=ax_i.transAxes, ha="center", fontsize=9, fontweight="bold")
    fig.tight_layout()
    return fig


def near_twin_html(pair: NearDuplicate, captions: Sequence[str]) -> str:
    """Both captions of a near-twin pair as HTML, the words where they differ (word-level diff) highlighted."""
    words_i, words_j = captions[pair.i].split(), captions[pair.j].split()
    marked_i, marked_j = [html.escape(w) for w in words_i], [html.escape(w) for w in words_j]
    matcher = difflib.SequenceMatcher(a=words_i, b=words_j, autojunk=False)
    for tag, a_start, a_end, b_start, b_end in matcher.get_opcodes():
        if tag != "equal":
            for marked, start, end in ((marked_i, a_start, a_end), (marked_j, b_start, b_end)):
                for k in range(start, end):
                    marked[k] = f"<mark>{marked[k]}</mark>"
    blocks = [f"<p><b>caption {index}</b>: {' '.join(marked)}</p>" for index, marked in
              ((pair.i, marked_i), (pair.j, marked_j))]
    return f"<div><p>cosine {pair.similarity:.3f}</p>{''.join(blocks)}</div>"
