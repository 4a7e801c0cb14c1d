"""Figures of the ablation studies (chapters 4 and 5 and the ablation-run notebook): the drift of Ḡ (App. B.2),
sample efficiency (Fig. 6), convergence over seeds (Fig. 5, A9), the paired differences of two methods over seeds
(the scorecard's rule), the temperature × γ grid (App. B.2) and the plug-and-play study (Table 2, A4). Methods are
keyed by their short names and shown by the paper's (:func:`~hnclip_core.replication.plots.training.method_name`)."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
from matplotlib.figure import Figure

from ..significance import SINGLE_RUN_MARGIN, compare
from . import finish_axes
from .training import method_colour, method_name

__all__ = ["plot_margin_annealing", "plot_paired_seeds", "plot_plug_and_play", "plot_sample_efficiency",
           "plot_seed_convergence", "plot_temperature_grid"]


def plot_margin_annealing(runs: Mapping[str, Mapping]) -> Figure:
    """Mean off-diagonal Ḡ per epoch: what the boost adds to the logits (Table 3c, App. B.2).

    ``runs`` maps a label to a training result (with ``config``) whose history rows carry
    ``caption_mean_similarity``, the mean caption–caption cosine of the test captions under the current text
    encoder. A run with a *recomputed* Ḡ applies that live value; a run with a *frozen* Ḡ applies the
    epoch-0 value throughout, drawn as a flat line beside the (dashed) live geometry of its encoder. The
    legend gives the margin in logits, s·γ·Ḡ, before and after fine-tuning.
    """
    fig = Figure(figsize=(6.4, 3.6))
    ax = fig.subplots()
    for index, (label, result) in enumerate(runs.items()):
        history = [h for h in result["history"] if "caption_mean_similarity" in h]
        if not history:
            continue
        config = result.get("config", {})
        epochs = [h["epoch"] for h in history]
        live = [h["caption_mean_similarity"] for h in history]
        frozen = config.get("margin_source") == "frozen"
        applied = [live[0]] * len(live) if frozen else live
        scale = config.get("logit_scale") or history[-1].get("logit_scale")
        logits = (f"; s·γ·Ḡ {scale * config['gamma'] * applied[0]:.0f} → {scale * config['gamma'] * applied[-1]:.0f}"
                  if scale and "gamma" in config else "")
        colour = method_colour(label, index)
        name = method_name(label)
        ax.plot(epochs, applied, marker="o", color=colour, label=f"{name}: Ḡ applied{logits}")
        if frozen:
            ax.plot(epochs, live, linestyle="--", color=colour, alpha=0.6, label=f"{name}: its live encoder")
    finish_axes(ax, 7, integer_x=True, xlabel="fine-tuning epoch (0 = before)",
                ylabel="mean off-diagonal Ḡ (test captions)",
                title="Ḡ per epoch: a recomputed margin relaxes as captions separate")
    fig.tight_layout()
    return fig


def plot_sample_efficiency(fractions: Mapping[str, Mapping[str, Mapping]], reference: str | None = None) -> Figure:
    """Fig. 6: last-epoch average R@1 against the share of training data, one line per method; the dotted
    line is ``reference`` (the strongest baseline) at 100 %."""
    keys = sorted(fractions, key=float)
    methods = list(dict.fromkeys(m for runs in fractions.values() for m in runs))
    fig = Figure(figsize=(5.6, 3.6))
    ax = fig.subplots()
    x = [100 * float(k) for k in keys]
    for index, method in enumerate(methods):
        ys = [fractions[k][method]["last"]["mean_r1"] if method in fractions[k] else np.nan for k in keys]
        ax.plot(x, ys, marker="o", color=method_colour(method, index), label=method_name(method))
    full = fractions.get(max(keys, key=float), {})
    if reference and reference in full:
        ax.axhline(full[reference]["last"]["mean_r1"], linestyle=":", color=method_colour(reference, 0),
                   label=f"{method_name(reference)} at 100 % (strongest baseline)")
    zero_shot = next(iter(next(iter(fractions.values())).values()))["zero_shot"]["mean_r1"]
    ax.axhline(zero_shot, linestyle="--", color=method_colour("zero-shot", 0), linewidth=1, label="zero-shot")
    ax.set_xscale("log")
    ax.set_xticks(x, [f"{v:g} %" for v in x])
    finish_axes(ax, xlabel="share of the training set (same subsets for every method)", ylabel="average R@1 (%)",
                title="Sample efficiency")
    fig.tight_layout()
    return fig


def plot_seed_convergence(seeds: Mapping[str, Mapping[str, Mapping]]) -> Figure:
    """Fig. 5 / A9 over seeds: per-epoch R@1 (average, T→I, I→T), mean over seeds with a ± 1 std band."""
    methods = list(dict.fromkeys(m for runs in seeds.values() for m in runs))
    fig = Figure(figsize=(12, 3.4))
    axes = fig.subplots(1, 3, sharey=True)
    for ax, (key, title) in zip(axes, (("mean_r1", "average R@1"), ("t2i_r1", "T→I R@1"), ("i2t_r1", "I→T R@1")),
                                strict=True):
        for index, method in enumerate(methods):
            histories = [runs[method]["history"] for runs in seeds.values() if method in runs]
            epochs = [h["epoch"] for h in histories[0]]
            values = np.array([[h[key] for h in history] for history in histories])
            mean = values.mean(axis=0)
            std = values.std(axis=0, ddof=1) if len(histories) > 1 else np.zeros_like(mean)
            colour = method_colour(method, index)
            ax.plot(epochs, mean, marker="o", color=colour, label=f"{method_name(method)} ({len(histories)} seeds)")
            ax.fill_between(epochs, mean - std, mean + std, color=colour, alpha=0.2)
        finish_axes(ax, None, integer_x=True, title=title, xlabel="fine-tuning epoch (0 = zero-shot)")
    axes[0].set_ylabel("Recall@1 (%), mean ± std over seeds")
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    return fig


def plot_paired_seeds(method: Mapping[int, float], baseline: Mapping[int, float], sigma: float,
                      method_label: str = "hn+tok", baseline_label: str = "clip") -> Figure:
    """Why a comparison over seeds is paired: left, each seed's two runs (its baseline and its method, joined);
    right, their differences by seed with the mean ± 2 standard errors of
    :func:`~hnclip_core.replication.significance.compare`, beside 2√2σ, what one difference of two runs would have
    to clear. ``method`` and ``baseline`` map seeds to a metric (last-epoch average R@1)."""
    comparison = compare(method, baseline, sigma)
    seeds, differences = list(comparison.differences), list(comparison.differences.values())
    names = method_name(baseline_label), method_name(method_label)
    fig = Figure(figsize=(8.4, 3.2))
    runs, gaps = fig.subplots(1, 2, gridspec_kw={"width_ratios": [1.2, 1]})
    for s in seeds:
        runs.plot([0, 1], [baseline[s], method[s]], "o-", label=f"seed {s}")
    runs.set_xticks([0, 1], names)
    runs.set_xlim(-0.4, 1.4)
    finish_axes(runs, legend_fontsize=None, ylabel="average R@1 (%), last epoch", title="each seed's two runs")
    runs.legend(fontsize=8, loc="best")
    gaps.axhspan(comparison.mean - comparison.margin, comparison.mean + comparison.margin, color="tab:green",
                 alpha=0.2, label="mean ± 2 SE (paired)")
    gaps.axhline(SINGLE_RUN_MARGIN * sigma, color="tab:red", linestyle="--", label="2√2σ (one pair of runs)")
    gaps.axhline(0, color="black", linewidth=0.8)
    gaps.plot(seeds, differences, "o", color="black", label=f"{names[1]} − {names[0]}")
    gaps.set_xticks(seeds, [f"seed {s}" for s in seeds])
    gaps.set_xlim(min(seeds) - 0.5, max(seeds) + 0.5)
    finish_axes(gaps, legend_fontsize=None, ylabel="difference (points)", title="their differences")
    gaps.legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    return fig


def plot_temperature_grid(temperature: Mapping[str, Mapping[str, Mapping]]) -> Figure:
    """App. B.2: average R@1 for fixed s × γ as a heat map, and against the product s·γ (one line per s):
    if the boost acts through s·γ, the lines line up on the product axis."""
    scales = sorted(temperature, key=float)
    gammas = sorted({g for by_gamma in temperature.values() for g in by_gamma}, key=float)
    grid = np.array([[temperature[s][g]["last"]["mean_r1"] if g in temperature[s] else np.nan for g in gammas]
                     for s in scales])
    fig = Figure(figsize=(11, 3.8))
    heat_ax, line_ax = fig.subplots(1, 2)
    image = heat_ax.imshow(grid, cmap="viridis", aspect="auto", origin="lower")
    for i in range(len(scales)):
        for j in range(len(gammas)):
            if not np.isnan(grid[i, j]):
                heat_ax.text(j, i, f"{grid[i, j]:.1f}", ha="center", va="center", color="white", fontsize=9)
    heat_ax.set_xticks(range(len(gammas)), [f"{float(g):g}" for g in gammas])
    heat_ax.set_yticks(range(len(scales)), [f"{float(s):g}" for s in scales])
    heat_ax.set_xlabel("γ")
    heat_ax.set_ylabel("fixed inverse temperature s")
    heat_ax.set_title("average R@1 (last epoch)")
    fig.colorbar(image, ax=heat_ax)
    for index, s in enumerate(scales):
        boosted = [g for g in gammas if float(g) > 0 and g in temperature[s]]
        line_ax.plot([float(s) * float(g) for g in boosted], [temperature[s][g]["last"]["mean_r1"] for g in boosted],
                     marker="o", color=method_colour(f"s={s}", index), label=f"s = {float(s):g}")
        if "0" in temperature[s]:
            line_ax.axhline(temperature[s]["0"]["last"]["mean_r1"], linestyle=":", color=method_colour(f"s={s}", index),
                            linewidth=1)
    line_ax.set_xscale("log")
    finish_axes(line_ax, xlabel="s·γ (the boost's scale in logits per unit of Ḡ)", ylabel="average R@1 (%)",
                title="against the product (dotted: γ = 0 at that s)")
    fig.tight_layout()
    return fig


def plot_plug_and_play(plug_and_play: Mapping[str, Mapping[str, Mapping]],
                       paper_delta: Mapping[str, float] | None = None) -> Figure:
    """Each framework's average R@1 (last epoch) with InfoNCE and with L_HN as its global term, joined by an arrow
    (Table 2, A4), against the zero-shot model all of them start from (a dashed line); ``paper_delta`` (framework →
    the paper's Δ average R@1) is written beside each arrow. A framework whose InfoNCE run ends at or below zero-shot
    is marked a repair: L_HN's Δ there mends a broken baseline rather than improving a working one."""
    frameworks = [f for f, runs in plug_and_play.items() if "clip" in runs and "hn" in runs]
    zero_shot = plug_and_play[frameworks[0]]["clip"]["zero_shot"]["mean_r1"] if frameworks else None
    fig = Figure(figsize=(6.4, 0.5 * len(frameworks) + 1.6))
    ax = fig.subplots()
    for row, framework in enumerate(frameworks):
        base = plug_and_play[framework]["clip"]["last"]["mean_r1"]
        boosted = plug_and_play[framework]["hn"]["last"]["mean_r1"]
        colour = "tab:green" if boosted > base else "tab:red"
        ax.annotate("", xy=(boosted, row), xytext=(base, row),
                    arrowprops={"arrowstyle": "->", "color": colour, "linewidth": 1.8})
        ax.plot([base], [row], "o", color="tab:grey")
        label = f"Δ {boosted - base:+.1f}"
        if paper_delta and framework in paper_delta:
            label += f" (paper {paper_delta[framework]:+.1f})"
        if base <= plug_and_play[framework]["clip"]["zero_shot"]["mean_r1"]:  # its own start, as the scorecard's
            label += ": a repair"
        ax.text(max(base, boosted) + 0.3, row, label, va="center", fontsize=8)
    if zero_shot is not None:
        ax.axvline(zero_shot, color="black", linestyle="--", linewidth=1)
        ax.text(zero_shot, -0.75, f"zero-shot {zero_shot:.1f}", ha="center", va="bottom", fontsize=8)
    ax.set_yticks(range(len(frameworks)), frameworks)
    low = min(min(plug_and_play[f][o]["last"]["mean_r1"] for o in ("clip", "hn")) for f in frameworks)
    high = max(max(plug_and_play[f][o]["last"]["mean_r1"] for o in ("clip", "hn")) for f in frameworks)
    ax.set_xlim(min(low, zero_shot if zero_shot is not None else low) - 1, high + 9)
    ax.set_ylim(len(frameworks) - 0.5, -1.1)
    ax.set_xlabel("average R@1 (%), last epoch: grey dot InfoNCE → arrow head L_HN")
    ax.set_title("L_HN in place of each framework's global InfoNCE term")
    ax.grid(axis="x", alpha=0.3)
    fig.tight_layout()
    return fig
