"""Run the whole tutorial headless: ``python -m hnclip_core.replication.tutorial`` (what ``make tutorial`` calls).

Executes the chapter notebooks in order with papermill into one folder::

    runs/tutorial/
        notebooks/01_caption_geometry.ipynb ...   the executed chapters
        figures/*.png                             every figure, as PNG
        geometry.json, saturation.json, ...       each chapter's results (chapter 5 reads them)
        runs/<objective>-<hash>/                  the training runs (history.json/csv, training state)
        tutorial_summary.json                     seconds and peak kernel memory (RSS) per chapter

All chapters share that ``output_dir`` and run with ``interactive=False``. ``-p NAME VALUE`` sets a
parameter in every chapter that has it (e.g. ``-p backbone /data/longclip-L.pt -p dataset docci
-p data_root /data/docci``); values are read as Python literals where possible, else kept as strings.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import logging
import sys
import threading
import time
from pathlib import Path

import psutil

from ..files import write_text_atomically
from .batch import notebook_parameters, parameter_type_problem

__all__ = ["run_tutorial", "chapter_notebooks", "main"]

DEFAULT_NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"


def chapter_notebooks(folder: str | Path = DEFAULT_NOTEBOOKS) -> list[Path]:
    """The chapter notebooks of ``folder`` in reading order (their names start with the chapter number)."""
    notebooks = sorted(p for p in Path(folder).glob("[0-9][0-9]_*.ipynb"))
    if not notebooks:
        raise FileNotFoundError(f"no chapter notebooks (NN_name.ipynb) in {folder}")
    return notebooks


def _check_overrides(notebooks: list[Path], overrides: dict) -> dict[Path, dict]:
    """Per notebook, the overrides it accepts; an unknown name or a wrong type is an error."""
    accepted: dict[Path, dict] = {}
    known: set[str] = set()
    problems = []
    for notebook in notebooks:
        defaults = notebook_parameters(notebook)
        known.update(defaults)
        accepted[notebook] = {}
        for name, value in overrides.items():
            if name in defaults:
                problem = parameter_type_problem(name, value, defaults[name])
                if problem:
                    problems.append(f"{notebook.name}: {problem}")
                accepted[notebook][name] = value
    unknown = sorted(set(overrides) - known)
    if unknown:
        problems.append(f"unknown parameter(s) {unknown}; the chapters' parameters are: {', '.join(sorted(known))}")
    if problems:
        raise ValueError("\n".join(problems))
    return accepted


class KernelMemory:
    """The peak resident memory of the processes this process starts while the ``with`` block runs (a chapter's
    kernel and what it starts), sampled every ``interval`` seconds in a background thread — one chapter at a time,
    so a Binder session's 2 GB limit can be checked per chapter. Descendants already running at the start (a
    kernel still shutting down, or another test's in a shared pytest worker) are not counted, nor a child not yet past
    its exec (it would count this process's memory)."""

    def __init__(self, interval: float = 0.05):
        self.interval = interval
        self.peak_mb = 0.0
        self._stop = threading.Event()
        self._earlier: set[int] = set()

    def _sample(self) -> None:
        me = psutil.Process()
        my_command = me.cmdline()
        while not self._stop.is_set():
            total = 0
            for child in me.children(recursive=True):
                if child.pid in self._earlier:
                    continue
                with contextlib.suppress(psutil.Error):
                    # between fork and exec a child is this process's copy and shows its resident set
                    if child.cmdline() != my_command:
                        total += child.memory_info().rss
            self.peak_mb = max(self.peak_mb, total / 2**20)
            self._stop.wait(self.interval)

    def __enter__(self) -> KernelMemory:
        self._earlier = {child.pid for child in psutil.Process().children(recursive=True)}
        self._thread = threading.Thread(target=self._sample, daemon=True)
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._stop.set()
        self._thread.join()


def run_tutorial(
    output_dir: str | Path = "runs/tutorial",
    notebooks_dir: str | Path = DEFAULT_NOTEBOOKS,
    overrides: dict | None = None,
    kernel: str = "python3",
    progress: bool = True,
) -> dict:
    """Execute every chapter in order; returns (and writes) the per-chapter seconds and peak memory.

    Stops at the first failing chapter (later chapters read its results) and re-raises papermill's error,
    which names the failing cell; the partially executed notebook is kept for inspection.
    """
    import papermill

    overrides = dict(overrides or {})
    output = Path(output_dir).resolve()
    notebooks = chapter_notebooks(notebooks_dir)
    accepted = _check_overrides(notebooks, overrides)
    (output / "notebooks").mkdir(parents=True, exist_ok=True)
    summary = {"output_dir": str(output), "overrides": overrides, "chapters": []}
    for notebook in notebooks:
        parameters = {**accepted[notebook], "output_dir": str(output), "interactive": False}
        started = time.perf_counter()
        with KernelMemory() as memory:
            papermill.execute_notebook(
                str(notebook), str(output / "notebooks" / notebook.name), parameters=parameters,
                kernel_name=kernel, cwd=str(notebook.parent), progress_bar=progress,
            )
        chapter = {"notebook": notebook.name, "seconds": round(time.perf_counter() - started, 1),
                   "peak_kernel_memory_mb": round(memory.peak_mb)}
        summary["chapters"].append(chapter)
        print(f"{notebook.name}: {chapter['seconds']:.0f} s", file=sys.stderr)
        write_text_atomically(output / "tutorial_summary.json", json.dumps(summary, indent=2))
    summary["seconds"] = round(sum(c["seconds"] for c in summary["chapters"]), 1)
    summary["peak_kernel_memory_mb"] = max(c["peak_kernel_memory_mb"] for c in summary["chapters"])
    write_text_atomically(output / "tutorial_summary.json", json.dumps(summary, indent=2))
    return summary


def _literal(text: str):
    try:
        return ast.literal_eval(text)
    except (ValueError, SyntaxError):
        return text


def format_report(summary: dict) -> str:
    """The short report printed at the end: timings, peak memory, and the chapter 3 recall table."""
    from .report import recall_table

    output = Path(summary["output_dir"])
    lines = [f"tutorial finished in {summary['seconds'] / 60:.1f} min "
             f"(peak kernel memory {summary['peak_kernel_memory_mb']} MB)"]
    lines += [f"  {c['notebook']}: {c['seconds']:.0f} s, peak {c['peak_kernel_memory_mb']} MB"
              for c in summary["chapters"]]
    fine_tuning = output / "fine_tuning.json"
    if fine_tuning.is_file():
        runs = json.loads(fine_tuning.read_text())["runs"]
        first = next(iter(runs.values()))
        rows = {"zero-shot": first["zero_shot"], **{name: run["last"] for name, run in runs.items()}}
        lines += ["", recall_table(rows)]
    lines += ["", f"executed notebooks: {output / 'notebooks'}", f"figures: {output / 'figures'}"]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hnclip_core.replication.tutorial",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--output-dir", default="runs/tutorial", help="where everything is written")
    parser.add_argument("--notebooks", default=str(DEFAULT_NOTEBOOKS), help="folder of the chapter notebooks")
    parser.add_argument("-p", "--parameter", nargs=2, action="append", default=[], metavar=("NAME", "VALUE"),
                        help="set a parameter in every chapter that has it (repeatable)")
    parser.add_argument("--kernel", default="python3")
    parser.add_argument("--quiet", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(message)s")
    overrides = {name: _literal(value) for name, value in args.parameter}
    try:
        summary = run_tutorial(args.output_dir, args.notebooks, overrides, args.kernel, progress=not args.quiet)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(format_report(summary))
    return 0


if __name__ == "__main__":
    sys.exit(main())
