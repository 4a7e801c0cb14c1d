"""Figures of the saturation chapter: where InfoNCE's loss and gradient underflow, how the boost re-weights
negatives, and the gradient dynamics of a fine-tuning run (arXiv 2608.18521 §2.1, §2.4, Fig. 4; App. B.2).

The figures are built as plain :class:`matplotlib.figure.Figure` objects, not through ``pyplot``: nothing is
registered globally, so they work headless with any backend, need no closing, and a notebook (or an
``ipywidgets.interact`` callback) displays the returned figure exactly once.
"""

from __future__ import annotations

import math
from dataclasses import asdict, fields, is_dataclass

import numpy as np
import torch
from matplotlib.figure import Figure

from ...diagnostics import GradientMeasurement
from ...losses import SOLVED_LOSS_THRESHOLD
from ..saturation import THRESHOLDS, boost_reweighting, hardness_concentration
from . import METHOD_COLOURS, show

__all__ = ["plot_fp32_saturation", "plot_boost_posteriors", "boost_explorer_figure", "plot_gradient_dynamics"]

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

    ``sweep`` is :func:`hnclip_core.replication.saturation.margin_sweep`'s output, ``thresholds``
    :func:`~hnclip_core.replication.saturation.saturation_thresholds`'s for the same s, batch size and dtype (the name
    says fp32, the dtype is taken from ``thresholds``). Both curves share a log axis; values that are exactly
    zero are drawn on the bottom edge as hollow markers labelled "exactly 0 in fp32"; each saturation
    threshold inside the plotted range is a vertical line tagged with its letter (a–d), explained with its
    Δ and s·Δ in the legend. A top axis shows the logit gap s·Δ. One axes (the secondary top axis is not
    in ``fig.axes``).
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

    ``reweighting`` is :func:`hnclip_core.replication.saturation.boost_reweighting`'s output. For image ``row``:
    (top) the posteriors p (γ = 0) and p̃ (boosted) of its own caption (marked "positive", hatched) and of the
    negatives, on a log axis; (bottom) each negative's share of the row's total push-away gradient
    s·p_ij / Σ_k s·p_ik. Negatives are sorted by their caption similarity Ḡ to the query's caption, most
    similar first, and the tick labels show Ḡ; only the ``max_negatives`` most similar are drawn (shares
    are still of the whole row). Two axes.
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
    solved = (f"solved: CLIP {100 * c['solved_clip'].mean():.0f} %, HN {100 * c['solved_hn'].mean():.0f} %"
              if len(step) else "")
    if len(step) and "micro_solved_clip" in c and not np.isnan(c["micro_solved_clip"]).all():
        solved += f"; micro-batches: CLIP {100 * np.nanmean(c['micro_solved_clip']):.0f} %"
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
    ax_ratio.set_ylabel("ratio HN / CLIP (log scale)", color="#9467bd")
    zero_share = f"CLIP gradient exactly 0 in {100 * c['grad_zero_clip'].mean():.0f} %" if len(step) else ""
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
        logit_scale=widgets.FloatSlider(value=logit_scale, min=5.0, max=100.0, step=5.0, description="s"),
        row=widgets.IntSlider(value=0, min=0, max=len(image_features) - 1, description="query"),
    )
