"""Figures of chapters 3–5: convergence, retrieval examples, ablation curves (Fig. 3, 5, 6, A9, A10)."""

from __future__ import annotations

import textwrap
from collections.abc import Sequence

import matplotlib
import numpy as np
from matplotlib.figure import Figure

from . import METHOD_COLOURS


def _colour(label: str, index: int):
    return METHOD_COLOURS.get(label, matplotlib.colormaps["tab10"](index % 10))


def plot_convergence(results: dict[str, dict], paper_mean_r1: dict[str, float] | None = None) -> Figure:
    """Fig. 5 and A9: average R@1 per epoch, and R@1 per direction (T→I solid, I→T dashed).

    ``results`` maps a label (e.g. ``"clip"``, ``"hn+tok"``) to a :func:`~hnclip_core.train.train` result;
    epoch 0 is the zero-shot model. ``paper_mean_r1`` adds the paper's final values as dotted lines.
    """
    fig = Figure(figsize=(10, 3.6))
    (ax_mean, ax_dir) = fig.subplots(1, 2)
    for index, (label, result) in enumerate(results.items()):
        history = result["history"]
        epochs = [h["epoch"] for h in history]
        colour = _colour(label, index)
        ax_mean.plot(epochs, [h["mean_r1"] for h in history], marker="o", color=colour, label=label)
        ax_dir.plot(epochs, [h["t2i_r1"] for h in history], marker="o", color=colour, label=f"{label} T→I")
        ax_dir.plot(epochs, [h["i2t_r1"] for h in history], marker="s", linestyle="--", color=colour,
                    label=f"{label} I→T")
    for index, (label, value) in enumerate((paper_mean_r1 or {}).items()):
        ax_mean.axhline(value, color=_colour(label, index), linestyle=":", linewidth=1)
    ax_mean.set_title("average R@1 per epoch (epoch 0 = zero-shot)")
    ax_dir.set_title("R@1 per direction")
    for ax in (ax_mean, ax_dir):
        ax.set_xlabel("fine-tuning epoch")
        ax.set_ylabel("Recall@1 (%)")
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7)
    fig.tight_layout()
    return fig


def plot_retrievals(examples: dict, pairs: Sequence) -> Figure:
    """Fig. 3 / A10: text→image retrievals of several models side by side, the ground truth framed in green.

    ``examples`` is :func:`hnclip_core.evaluate.retrieval_examples`'s result and ``pairs`` the test split's
    :class:`~hnclip_core.data.ImageCaptionPair` list it was computed on (query ``q`` is caption ``q``, whose
    ground truth is image ``q``).
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


def plot_metric_sweep(
    x_values: Sequence[float], series: dict[str, Sequence[float]], x_label: str, y_label: str, title: str,
    errors: dict[str, Sequence[float]] | None = None, baseline: dict[str, float] | None = None,
) -> Figure:
    """One metric against one swept knob (γ, data fraction, s·γ, ...), one line per series, optional error bars
    and horizontal reference lines (``baseline``: label → value)."""
    fig = Figure(figsize=(5.6, 3.6))
    ax = fig.subplots()
    for index, (label, values) in enumerate(series.items()):
        err = None if errors is None else errors.get(label)
        ax.errorbar(x_values, values, yerr=err, marker="o", capsize=3, color=_colour(label, index), label=label)
    for index, (label, value) in enumerate((baseline or {}).items()):
        ax.axhline(value, linestyle=":", color=_colour(label, index + len(series)), label=label)
    ax.set_xlabel(x_label)
    ax.set_ylabel(y_label)
    ax.set_title(title)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_training_losses(results: dict[str, dict]) -> Figure:
    """Mean training loss per epoch of each run (log scale): what each objective optimises, side by side."""
    fig = Figure(figsize=(5.6, 3.4))
    ax = fig.subplots()
    for index, (label, result) in enumerate(results.items()):
        rows = [h for h in result["history"] if h["epoch"] >= 1]
        ax.plot([h["epoch"] for h in rows], [h["train_loss"] for h in rows], marker="o",
                color=_colour(label, index), label=label)
    ax.set_yscale("log")
    ax.set_xlabel("fine-tuning epoch")
    ax.set_ylabel("mean training loss per step")
    ax.set_xticks(np.arange(1, max(len(r["history"]) for r in results.values())))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig
