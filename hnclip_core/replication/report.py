"""Tables for the notebooks, as Markdown text (what a notebook shows and nbval compares).

Numbers are formatted here, once, so every notebook prints them the same way: recalls with one decimal
(the toy's test split has 1,000 pairs, so 0.1 point is one query), similarities with three. The scorecard's verdicts
are tabled here too (:func:`verdicts_table`); the words a computed sentence picks
are :mod:`~hnclip_core.replication.words`'.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

__all__ = [
    "DESIGN_TARGET_STATUSES", "SOURCE_NAMES", "describe_machine", "diagnostics_table", "format_number",
    "geometry_table", "markdown_table", "numbers_cell", "power_of_ten", "recall_table", "renamed",
    "thresholds_table", "verdicts_table",
]

DIRECTIONS = (("t2i", "T→I"), ("i2t", "I→T"))


def markdown_table(header: Sequence[str], rows: Sequence[Sequence]) -> str:
    """A Markdown table; floats keep the formatting their caller gave them (pass strings)."""
    lines = ["| " + " | ".join(str(h) for h in header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(str(cell) for cell in row) + " |" for row in rows]
    return "\n".join(lines)


def recall_table(
    rows: dict[str, dict],
    ks: Sequence[int] = (1, 5, 10),
    paper: dict[str, dict[str, Sequence[float]]] | None = None,
    paper_ks: Sequence[int] = (1, 5, 10),
) -> str:
    """Table 1's layout: one row per method, R@K for T→I then I→T, and the average R@1.

    ``rows`` maps a method label to a flat metrics row of a training history (keys ``t2i_r1``, ...,
    ``mean_r1``). ``paper`` (e.g. :data:`hnclip_core.replication.paper.DOCCI_RECALL`) adds the paper's rows, labelled
    "paper: <method>", for the ks both share.
    """
    header = ["method"] + [f"{name} R@{k}" for _, name in DIRECTIONS for k in ks] + ["avg R@1"]
    body = []
    for label, metrics in rows.items():
        cells = [f"{metrics[f'{d}_r{k}']:.1f}" for d, _ in DIRECTIONS for k in ks]
        body.append([label, *cells, f"{metrics['mean_r1']:.1f}"])
    for label, directions in (paper or {}).items():
        cells = []
        for d, _ in DIRECTIONS:
            for k in ks:
                cells.append(f"{directions[d][paper_ks.index(k)]:.1f}" if k in paper_ks else "–")
        average = (directions["t2i"][0] + directions["i2t"][0]) / 2
        body.append([f"paper (DOCCI, Long-CLIP-L): {label}", *cells, f"{average:.1f}"])
    return markdown_table(header, body)


def geometry_table(ours: dict[str, dict], paper: dict[str, dict] | None = None) -> str:
    """Mean pairwise and mean hardest-companion caption cosine, ours and the paper's (Table A1, Fig. A6)."""
    rows = [[name, f"{g['mean_pairwise']:.3f}", f"{g['mean_hardest']:.3f}"] for name, g in ours.items()]
    for name, g in (paper or {}).items():
        rows.append([f"paper: {name}", f"{g['mean_pairwise']:.2f}", f"{g['mean_hardest']:.2f}"])
    return markdown_table(["captions (text encoder)", "mean pairwise", "mean hardest companion"], rows)


def thresholds_table(thresholds: Sequence[dict]) -> str:
    """Saturation thresholds per precision (chapter 2's `saturation_thresholds` results):
    the cosine margin Δ and logit gap s·Δ at which the loss is solved, exactly 0, and a negative's gradient 0."""
    events = (("solved", "loss < 1e-3"), ("loss_zero", "loss exactly 0"),
              ("negative_grad_zero", "negative's gradient exactly 0"))
    rows = [[t["dtype"]] + [f"{t[f'{e}_margin']:.3f} ({t[f'{e}_logit_gap']:.1f})" for e, _ in events]
            for t in thresholds]
    return markdown_table(["precision"] + [f"{label}: Δ (s·Δ)" for _, label in events], rows)


def power_of_ten(value: float) -> str:
    """``100`` → ``10²``."""
    return "10" + str(round(math.log10(value))).translate(str.maketrans("-0123456789", "⁻⁰¹²³⁴⁵⁶⁷⁸⁹"))


def diagnostics_table(diagnostics: Sequence[dict], paper: dict | None = None) -> str:
    """The gradient monitor's per-epoch summary (Fig. 4's numbers), with the paper's row if ``paper`` is given
    (:data:`hnclip_core.replication.paper.SATURATION`)."""
    def solved(d, loss):  # per micro-batch (the batches of Fig. 4) where the monitor recorded it
        return d.get(f"micro_solved_{loss}", d[f"solved_{loss}"])

    rows = [[d["epoch"], d["measurements"], f"{100 * solved(d, 'clip'):.0f}%", f"{100 * d['grad_zero_clip']:.0f}%",
             f"{100 * (1 - solved(d, 'hn')):.0f}%", f"{d['median_grad_ratio']:.3g}", f"{d['cosine_mean']:.2f}"]
            for d in diagnostics]
    if paper is not None:
        low, high = (power_of_ten(r) for r in paper["grad_ratio_range"])
        rows.append(["paper (Long-CLIP-L, DOCCI)", paper["measurements"],
                     f"{100 * paper['solved_clip_first_epoch']:.0f}% (epoch 1)",
                     f"{100 * paper['grad_zero_clip']:.0f}%",
                     f"≥ {100 * paper['active_hn_min']:.0f}%", f"{low}–{high}",
                     f"{paper['cosine_median']:.2f} (median)"])
    header = ["epoch", "measured steps", "micro-batches at L_CLIP < 1e-3", "∇L_CLIP = 0",
              "micro-batches at L_HN ≥ 1e-3", "median ‖∇L_HN‖/‖∇L_CLIP‖", "mean cos(∇L_CLIP, ∇L_HN)"]
    return markdown_table(header, rows)


#: How the verdicts table names the files our numbers come from.
SOURCE_NAMES = {
    "ablations.json (full grid)": "full grid", "framework_throughput.json": "throughput benchmark",
    "fine_tuning.json": "chapter 3", "saturation.json": "chapter 2", "geometry.json": "chapter 1",
    "calibration.json:": "calibration, ", "calibration.json": "calibration", "ablations.json": "chapter 4",
}


def describe_machine(machine: Mapping | str) -> str:
    """One line for the machine a benchmark record names (``benchmarks/conditions.py``'s ``machine``); a record
    written before those existed names it as a line already."""
    if isinstance(machine, str):
        return machine
    return (f"{machine['processor']}, {machine['cores']} cores, {machine['torch_threads']} torch threads, "
            f"torch {machine['torch']}, open_clip {machine.get('open_clip')}")


def format_number(value) -> str:
    """A number of a verdict as the scorecard shows it (three significant digits, two decimals from 10 on)."""
    if isinstance(value, float):
        return "n/a" if math.isnan(value) else f"{value:.3g}" if abs(value) >= 1000 or abs(value) < 10 else \
            f"{value:.2f}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(format_number(v) for v in value) + "]"
    return str(value)


def _value(label: str, value) -> str:
    """``value`` of ``label``; a list with as many numbers as the label has " / "-parts is written a / b."""
    if isinstance(value, list | tuple) and len(value) > 1 and len(label.split(" / ")) == len(value) \
            and all(isinstance(v, int | float) for v in value):
        return " / ".join(format_number(v) for v in value)
    return format_number(value)


def numbers_cell(numbers: Mapping) -> str:
    """A verdict's numbers, one per line; with ``runs``, every other list of that length is read run by run."""
    runs = numbers.get("runs")
    lines = []
    for label, value in numbers.items():
        if label == "runs":
            continue
        if runs and isinstance(value, list | tuple) and len(value) == len(runs) and len(runs) > 1:
            lines += [f"{label}:"] + [f"{run}: {_value(label, v)}" for run, v in zip(runs, value, strict=True)]
        else:
            lines.append(f"{label} {_value(label, value)}")
    return "<br>".join(lines) or "–"


def renamed(text: str, names: Mapping[str, str] = SOURCE_NAMES) -> str:
    """``text`` with every file name of ``names`` replaced by what the chapters call it."""
    for old, new in names.items():
        text = text.replace(old, new)
    return text


#: How a design target's verdict reads (they are the toy's targets, not the paper's claims).
DESIGN_TARGET_STATUSES = {"reproduced": "met", "not reproduced": "**missed**"}


def verdicts_table(verdicts: Sequence, rules: Mapping[str, tuple[str, str]] | None = None,
                   names: Mapping[str, str] = SOURCE_NAMES, statuses: Mapping[str, str] | None = None) -> str:
    """Markdown, one row per claim: the claim; the paper's side (where it says so, and its numbers); ours (and
    where they come from); the verdict; and why — what decided it, then the rule and the reason for its threshold
    (``rules``: claim id → ``(rule, why)``, e.g. from the scorecard's claims).

    ``verdicts`` are :class:`hnclip_core.replication.scorecard.Verdict`; file names are shown by ``names``, and a
    status by ``statuses`` where given (e.g. "met" for a design target).
    """
    shown = {"reproduced": "reproduced", "not reproduced": "**not reproduced**", "not measured": "not measured",
             **(statuses or {})}
    rows = []
    for v in verdicts:
        ours = numbers_cell(v.ours) + (f"<br>*from {v.source.replace('; ', ', ')}*" if v.source and v.ours else "")
        why = v.explanation
        if rules and v.claim_id in rules:
            rule, reason = rules[v.claim_id]
            why += f"<br>*rule:* {rule} (*why:* {reason})"
        rows.append([v.text, f"{v.reference}<br>{numbers_cell(v.paper)}", renamed(ours, names), shown[v.status],
                     renamed(why, names)])
    return markdown_table(["claim", "paper", "ours", "verdict", "why"],
                          [[str(cell).replace("|", "∣") for cell in row] for row in rows])
