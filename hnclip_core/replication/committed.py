"""What ``make notebooks`` does to the executed chapters before they are committed, besides nbstripout.

**Widget views** — tqdm's notebook progress bars, chapter 2's γ/s explorer — are saved without their widget state,
so a reader who opens the committed notebook would see their frozen text fallback (``encode captions: 0%|``,
``interactive(children=(FloatSlider(…``) instead of a bar or sliders. They are dropped; running the chapter
brings them back. Every cell that has one is excluded from nbval's comparison (NBVAL_IGNORE_OUTPUT / SKIP), which
``tests/test_notebook_sources.py`` checks.

**Trained numbers.** nbval compares a chapter's printed text exactly. That is right for what is deterministic by
construction (arithmetic, the geometry of the shipped model, parameter echoes, table layouts) and wrong for metrics
measured after epochs of floating-point training, which move in the last printed digit with the CPU's kernels, the
thread count or the torch release. Cells that print such metrics are marked ``# NBVAL_IGNORE_OUTPUT``; their numbers
are checked instead (``tests/test_chapter_numbers.py``), from the results JSON each chapter writes, against
``results/chapter_numbers.json``, which ``make notebooks`` writes from the committed run. Tolerance: a metric may
move by at most 3 × the largest seed standard deviation of its kind (any recall; each kind of solved share)
measured by the calibration (``results/calibration.json``: the same recipe, three seeds), and never by less than
one printed unit. A different machine is a much smaller perturbation than a different seed, so a difference beyond
that is a change in behaviour, not noise.

    python -m hnclip_core.replication.committed drop-widget-views notebooks/*.ipynb
    python -m hnclip_core.replication.committed trained-numbers runs/notebooks-build > results/chapter_numbers.json
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import nbformat

from .significance import seed_spread
from .tidy import read_results

__all__ = ["WIDGET_VIEW", "drop_widget_views", "trained_numbers", "tolerances", "kind"]

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def drop_widget_views(path: str) -> int:
    """Remove the widget-view outputs of the notebook at ``path`` in place; returns how many went."""
    notebook = nbformat.read(path, as_version=4)
    dropped = 0
    for cell in notebook.cells:
        if cell.cell_type == "code":
            kept = [output for output in cell.outputs if WIDGET_VIEW not in output.get("data", {})]
            dropped += len(cell.outputs) - len(kept)
            cell.outputs = kept
    if dropped:
        nbformat.write(notebook, path)
    return dropped


#: Chapter results files and the metric names collected from them (anywhere in the JSON tree).
FILES = ("saturation.json", "fine_tuning.json", "ablations.json")
RECALL_KEYS = ("t2i_r1", "i2t_r1", "mean_r1")
SHARE_KEYS = ("solved_clip", "solved_hn", "micro_solved_clip", "micro_solved_hn")
SKIPPED = ("history", "seconds", "run_dir", "parameters", "scale")
#: The calibration's objectives whose seed spread sets the tolerances: InfoNCE and HN-CLIP.
OBJECTIVES = ("clip", "hn+tok")


def _walk(node, path: str, out: dict[str, float]) -> None:
    if isinstance(node, dict):
        for key, value in node.items():
            if key in SKIPPED:
                continue
            if key in RECALL_KEYS + SHARE_KEYS and isinstance(value, int | float):
                out[f"{path}/{key}"] = float(value)
            else:
                _walk(value, f"{path}/{key}", out)
    elif isinstance(node, list):
        for index, value in enumerate(node):
            _walk(value, f"{path}/{index}", out)


def trained_numbers(output_dir: str | Path) -> dict[str, float]:
    """Every recall and solved-share a chapter wrote under ``output_dir``, keyed by its JSON path."""
    out: dict[str, float] = {}
    for name in FILES:
        path = Path(output_dir) / name
        if path.is_file():
            _walk(json.loads(path.read_text()), name.removesuffix(".json"), out)
    return out


def tolerances(calibration: str | Path) -> dict[str, float]:
    """Allowed absolute difference per kind of metric (module docstring), from the calibration file ``calibration``
    as the tidy table reads it: 3 × the largest seed standard deviation (:func:`~.significance.seed_spread` of one
    objective's runs, InfoNCE or HN-CLIP) of any recall at the last epoch, and of each kind of solved share at any
    epoch (a share of measured optimizer steps moves in coarser units than a share of micro-batches)."""
    runs = read_results(calibration=calibration).where(study="calibration")
    recall_std = max(seed_spread(runs.where(objective=o), k).value for o in OBJECTIVES for k in RECALL_KEYS)
    if not recall_std >= 0:  # nan: no objective was run with two seeds
        raise ValueError(f"{calibration}: the seed spread needs each of {OBJECTIVES} run with at least two seeds")
    allowed = {"recall": max(0.1, 3 * recall_std)}
    for key in SHARE_KEYS:
        spreads = [spread for o in OBJECTIVES for epoch in runs.where(objective=o).column("epoch")
                   for spread in [seed_spread(runs.where(objective=o, epoch=epoch), key)] if spread.measured]
        allowed[key] = max(0.01, 3 * max((spread.value for spread in spreads), default=0.0))
    return allowed


def kind(key: str) -> str:
    """The tolerance a metric is held to: its share key, or ``recall``."""
    name = key.rsplit("/", 1)[-1]
    return name if name in SHARE_KEYS else "recall"


COMMANDS = {"drop-widget-views": "NOTEBOOK…", "trained-numbers": "OUTPUT_DIR"}


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] not in COMMANDS:
        usage = " | ".join(f"{name} {args}" for name, args in COMMANDS.items())
        print(f"usage: python -m hnclip_core.replication.committed {{{usage}}}", file=sys.stderr)
        return 2
    command, arguments = argv[0], argv[1:]
    if command == "drop-widget-views":
        for notebook_path in arguments:
            print(f"{notebook_path}: {drop_widget_views(notebook_path)} widget views dropped")
    else:
        json.dump(trained_numbers(arguments[0]), sys.stdout, indent=1, sort_keys=True)
        print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
