"""Tables for the notebooks, as Markdown text (what a notebook shows and nbval compares).

Numbers are formatted here, once, so every notebook prints them the same way: recalls with one decimal
(the toy's test split has 1,000 pairs, so 0.1 point is one query), similarities with three.
"""

from __future__ import annotations

from collections.abc import Sequence

__all__ = ["checks_table", "geometry_table", "markdown_table", "recall_table"]

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
    ``mean_r1``). ``paper`` (e.g. :data:`hnclip_core.paper.DOCCI_RECALL`) adds the paper's rows, labelled
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


def checks_table(checks: Sequence[dict]) -> str:
    """The calibration checks of :mod:`hnclip_core.calibration` as a table: check, measured value, verdict."""

    def shown(value) -> str:
        if isinstance(value, dict):
            return ", ".join(f"{k} {v:.3f}" for k, v in value.items())
        return f"{value:.3g}"

    rows = [[c["check"], shown(c["value"]), "reproduced" if c["passed"] else "**not reproduced**"] for c in checks]
    return markdown_table(["claim (threshold)", "measured (mean of seeds)", "verdict"], rows)
