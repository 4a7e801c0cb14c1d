"""Chapter 3's own figures: the training loss of each objective and the retrievals that changed (arXiv
2608.18521 Fig. 3, Fig. A10).

Kept beside the notebooks (as rasbt keeps ``previous_chapters.py``): only chapter 3 draws them. The curves that
chapters 3–5 share (:func:`~hnclip_core.replication.plots.training.plot_convergence`, Fig. 5 / A9) stay in the
package.

By section of ``03_fine_tuning``:

* §3: :func:`plot_training_losses` — what each objective still has to work on, epoch by epoch;
* §4, Fig. 3 / A10: :func:`plot_retrievals` — text→image retrievals of the two models side by side, for the
  queries :func:`hnclip_core.evaluate.retrieval_examples` picks by rule.
"""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import numpy as np
from matplotlib.figure import Figure

from hnclip_core.replication.plots.training import method_colour, method_name

__all__ = ["plot_training_losses", "plot_retrievals"]


def plot_training_losses(results: dict[str, dict]) -> Figure:
    """Mean training loss per epoch of each run (log scale): what each objective optimises, side by side.

    ``results`` maps an objective (``"clip"``, ``"hn+tok"``, ...) to its training result; the legend gives the
    paper's names (InfoNCE, HN-CLIP)."""
    fig = Figure(figsize=(5.6, 3.4))
    ax = fig.subplots()
    for index, (label, result) in enumerate(results.items()):
        rows = [h for h in result["history"] if h["epoch"] >= 1]
        ax.plot([h["epoch"] for h in rows], [h["train_loss"] for h in rows], marker="o",
                color=method_colour(label, index), label=method_name(label))
    ax.set_yscale("log")
    ax.set_xlabel("fine-tuning epoch")
    ax.set_ylabel("mean training loss per step")
    ax.set_xticks(np.arange(1, max(len(r["history"]) for r in results.values())))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_retrievals(examples: dict, pairs: Sequence) -> Figure:
    """Fig. 3 / A10: text→image retrievals of several models side by side, the ground truth framed in green.

    ``examples`` is :func:`hnclip_core.evaluate.retrieval_examples`'s result and ``pairs`` the test split's
    :class:`~hnclip_core.data.ImageCaptionPair` list it was computed on (query ``q`` is caption ``q``, whose
    ground truth is image ``q``). Rows are labelled with the model names ``examples`` uses: chapter 3 keys the
    features by the paper's names.
    """
    models = list(examples["top"])
    queries = examples["queries"]
    if not queries:
        fig = Figure(figsize=(6, 1.2))
        ax = fig.subplots()
        ax.axis("off")
        ax.text(0.5, 0.5, "no query's ground-truth rank differs between the models", ha="center", va="center")
        return fig
    k = len(examples["top"][models[0]][0])
    rows = max(1, len(queries) * len(models))
    fig = Figure(figsize=(1.45 * k + 3.4, 1.5 * rows + 0.3))
    grid = fig.add_gridspec(rows, k + 1, width_ratios=[2.2] + [1] * k, wspace=0.06, hspace=0.12,
                            left=0.01, right=0.99, top=0.98, bottom=0.02)
    for q_index, (query, title) in enumerate(zip(queries, examples["titles"], strict=True)):
        text_ax = fig.add_subplot(grid[q_index * len(models) : (q_index + 1) * len(models), 0])
        text_ax.axis("off")
        caption = textwrap.shorten(pairs[query].caption, 260, placeholder=" …")
        text_ax.text(0, 1, textwrap.fill(f"[{title}] query {query}: {caption}", 34), va="top", fontsize=6.5)
        for m, model in enumerate(models):
            row = q_index * len(models) + m
            for c, gallery_index in enumerate(examples["top"][model][q_index]):
                ax = fig.add_subplot(grid[row, c + 1])
                ax.imshow(pairs[gallery_index].load_image())
                ax.set_xticks([])
                ax.set_yticks([])
                hit = gallery_index == query
                for spine in ax.spines.values():
                    spine.set_edgecolor("#2ca02c" if hit else "#dddddd")
                    spine.set_linewidth(4 if hit else 1)
                if c == 0:
                    ax.set_ylabel(f"{model}\nGT rank {examples['ranks'][model][q_index]}", fontsize=7)
    return fig
