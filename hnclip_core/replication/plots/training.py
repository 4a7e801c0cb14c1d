"""Training curves shared by chapters 3–5 and the ablation-run notebook: convergence per epoch (Fig. 5, A9)
and one metric against a swept knob (Fig. 6, Table 3a). Chapter 3's own figures (training losses, retrieval
examples) are in ``notebooks/chapter03_helpers.py``.

Runs are keyed by the short objective names of the studies (``clip``, ``tok``, ``hn``, ``hn+tok``); legends show
the paper's names instead (:func:`method_name`), and colours follow the key (:func:`method_colour`)."""

from __future__ import annotations

from collections.abc import Sequence

import matplotlib
from matplotlib.figure import Figure

from ..objectives import OBJECTIVES
from . import METHOD_COLOURS, finish_axes

__all__ = ["method_colour", "method_name", "plot_convergence", "plot_metric_sweep"]


def method_colour(label: str, index: int):
    """The colour of ``label`` in every figure (:data:`~hnclip_core.replication.plots.METHOD_COLOURS`), else the
    ``index``-th colour of matplotlib's tab10 cycle."""
    return METHOD_COLOURS.get(label, matplotlib.colormaps["tab10"](index % 10))


def method_name(label: str) -> str:
    """How a figure names ``label``: an objective's short name becomes the paper's (InfoNCE, InfoNCE + L_tok, L_HN,
    HN-CLIP; :data:`~hnclip_core.replication.objectives.OBJECTIVES`, Table 3b); any other label is kept."""
    return OBJECTIVES.get(label, label)


def plot_convergence(results: dict[str, dict], paper_mean_r1: dict[str, float] | None = None) -> Figure:
    """Fig. 5 and A9: average R@1 per epoch, and R@1 per direction (T→I solid, I→T dashed).

    ``results`` maps a label (e.g. ``"clip"``, ``"hn+tok"``, shown as InfoNCE and HN-CLIP) to a
    :func:`~hnclip_core.train.train` result; epoch 0 is the zero-shot model. ``paper_mean_r1`` adds the paper's
    final values as dotted lines.
    """
    fig = Figure(figsize=(10, 3.6))
    (ax_mean, ax_dir) = fig.subplots(1, 2)
    for index, (label, result) in enumerate(results.items()):
        history = result["history"]
        epochs = [h["epoch"] for h in history]
        colour, name = method_colour(label, index), method_name(label)
        ax_mean.plot(epochs, [h["mean_r1"] for h in history], marker="o", color=colour, label=name)
        ax_dir.plot(epochs, [h["t2i_r1"] for h in history], marker="o", color=colour, label=f"{name} T→I")
        ax_dir.plot(epochs, [h["i2t_r1"] for h in history], marker="s", linestyle="--", color=colour,
                    label=f"{name} I→T")
    for index, (label, value) in enumerate((paper_mean_r1 or {}).items()):
        ax_mean.axhline(value, color=method_colour(label, index), linestyle=":", linewidth=1)
    ax_mean.set_title("average R@1 per epoch (epoch 0 = zero-shot)")
    ax_dir.set_title("R@1 per direction")
    for ax in (ax_mean, ax_dir):
        finish_axes(ax, 7, integer_x=True, xlabel="fine-tuning epoch", ylabel="Recall@1 (%)")
    fig.tight_layout()
    return fig


def plot_metric_sweep(
    x_values: Sequence[float], series: dict[str, Sequence[float]], x_label: str, y_label: str, title: str,
    errors: dict[str, Sequence[float]] | None = None, baseline: dict[str, float] | None = None,
    own_baselines: dict[str, tuple[str, float]] | None = None,
) -> Figure:
    """One metric against one swept knob (γ, data fraction, s·γ, ...), one line per series, optional error bars
    and horizontal reference lines (``baseline``: label → value). ``own_baselines`` (series → (label, value))
    draws a series' own reference line in its colour, for series that each have their own (a transfer curve and
    the zero-shot model on the transfer benchmark)."""
    fig = Figure(figsize=(5.6, 3.6))
    ax = fig.subplots()
    for index, (label, values) in enumerate(series.items()):
        err = None if errors is None else errors.get(label)
        ax.errorbar(x_values, values, yerr=err, marker="o", capsize=3, color=method_colour(label, index),
                    label=method_name(label))
    for index, (label, value) in enumerate((baseline or {}).items()):
        ax.axhline(value, linestyle=":", color=method_colour(label, index + len(series)), label=method_name(label))
    for index, label in enumerate(series):
        if own_baselines and label in own_baselines:
            name, value = own_baselines[label]
            ax.axhline(value, linestyle=":", color=method_colour(label, index), label=name)
    finish_axes(ax, xlabel=x_label, ylabel=y_label, title=title)
    fig.tight_layout()
    return fig
