"""Run one notebook over a grid of parameters with papermill: ``python -m hnclip_core.replication.batch grid.yaml``.

A grid file (YAML) names the notebook, a folder for the runs, parameters fixed for every run and lists of
values whose cartesian product gives the runs ("points")::

    notebook: notebooks/03_fine_tuning.ipynb
    output_dir: runs/gamma-sweep
    parameters:          # optional: the same for every point
      epochs: 3
    grid:                # optional: one point per combination (none: a single point named "default")
      gamma: [0, 0.25, 0.5]
      seed: [0, 1]

``notebook`` and ``output_dir`` are relative to the current working directory (not to the YAML file), so
grid files are written as seen from the repository root, where the commands are run. Each point runs in
its own folder, named after its grid values (``gamma=0.25,seed=1``)::

    runs/gamma-sweep/
        batch_summary.json        # one entry per point: name, parameters, status, seconds, error, notebook
        gamma=0.25,seed=1/
            03_fine_tuning.ipynb  # the executed notebook (partially executed when the point failed)
            point.json            # the point's parameters and status: a completed point is not run again
            ...                   # whatever the notebook writes to its ``output_dir``

Parameters whose names end in ``_dir`` or ``_root`` (``data_root``, ``runs_dir``, ...) are paths: relative
ones are taken from the current directory too, and the notebook receives them as absolute paths (it runs
in its own folder). ``point.json`` keeps them as written.

The runner sets the notebook parameter ``output_dir`` to the point's folder (every notebook run this way
must have one) and ``interactive = False`` where the notebook has that parameter. Every other parameter is
checked against the notebook's ``parameters`` cell before anything runs. Results are the JSON files that
the notebook writes; :func:`collect_json` gathers one of them over all points.

Statuses: ``ok`` (ran and succeeded), ``failed`` (ran and raised), ``skipped`` (already completed by an
earlier run, not run again), ``pending`` (not run: a dry run, or not chosen with ``--only``).
"""

from __future__ import annotations

import argparse
import ast
import itertools
import json
import re
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import yaml
from tqdm.auto import tqdm

from ..files import write_text_atomically

SUMMARY_FILE = "batch_summary.json"
POINT_FILE = "point.json"
DEFAULT_KERNEL = "python3"
DEFAULT_POINT_NAME = "default"
RUNNER_PARAMETERS = ("output_dir", "interactive")
PATH_SUFFIXES = ("_dir", "_root")
SPEC_KEYS = ("notebook", "output_dir", "parameters", "grid")
COMPLETED = ("ok", "skipped")


class GridError(ValueError):
    """A grid file that cannot be run as written; raised before any point runs."""


@dataclass(frozen=True)
class GridSpec:
    """A parsed grid file: paths as written (relative ones are relative to the current directory)."""

    notebook: Path
    output_dir: Path
    parameters: dict[str, Any] = field(default_factory=dict)
    grid: dict[str, list[Any]] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], source: str = "grid") -> GridSpec:
        """Check the structure of a grid description (a YAML file's content) and build the spec."""
        if not isinstance(data, Mapping):
            raise GridError(f"{source}: expected a mapping with keys {', '.join(SPEC_KEYS)}")
        unknown = sorted(set(data) - set(SPEC_KEYS))
        if unknown:
            raise GridError(f"{source}: unknown key(s) {', '.join(unknown)}; valid keys: {', '.join(SPEC_KEYS)}")
        for key in ("notebook", "output_dir"):
            if not isinstance(data.get(key), (str, Path)):
                raise GridError(f"{source}: '{key}' is required (a path)")
        parameters = data.get("parameters") or {}
        grid = data.get("grid") or {}
        if not isinstance(parameters, Mapping):
            raise GridError(f"{source}: 'parameters' must be a mapping of name: value")
        if not isinstance(grid, Mapping):
            raise GridError(f"{source}: 'grid' must be a mapping of name: [values]")
        for name, values in grid.items():
            if not isinstance(values, list) or not values:
                raise GridError(f"{source}: grid.{name} must be a non-empty list of values, got {values!r}")
        both = sorted(set(parameters) & set(grid))
        if both:
            raise GridError(f"{source}: {', '.join(both)} set both in 'parameters' and in 'grid'")
        return cls(Path(data["notebook"]), Path(data["output_dir"]), dict(parameters), dict(grid))


@dataclass(frozen=True)
class GridPoint:
    """One run of the notebook: its folder name and its parameters (fixed ones and its grid values)."""

    name: str
    parameters: dict[str, Any]


@dataclass
class PointResult:
    """What happened to one point; ``error`` is ``"ExceptionName: message"`` for a failed point."""

    name: str
    parameters: dict[str, Any]
    status: str
    seconds: float
    error: str | None
    notebook: Path

    def to_dict(self) -> dict[str, Any]:
        """The point's entry in ``batch_summary.json``."""
        entry = asdict(self)
        entry["notebook"] = str(self.notebook)
        entry["seconds"] = round(self.seconds, 3)
        return entry


def load_spec(path: str | Path) -> GridSpec:
    """Read a grid file (YAML)."""
    path = Path(path)
    try:
        data = yaml.safe_load(path.read_text())
    except OSError as exc:
        raise GridError(f"cannot read grid file {path}: {exc}") from exc
    except yaml.YAMLError as exc:
        raise GridError(f"{path} is not valid YAML: {exc}") from exc
    return GridSpec.from_dict(data, source=str(path))


def point_name(values: Mapping[str, Any]) -> str:
    """Folder name for a point's grid values, e.g. ``gamma=0.25,seed=1``; ``default`` when there are none.

    Characters other than letters, digits and ``. = , + - _`` become ``_``.
    """
    if not values:
        return DEFAULT_POINT_NAME
    parts = []
    for key, value in values.items():
        if isinstance(value, str):
            text = value
        elif isinstance(value, (list, dict)):
            text = json.dumps(value, separators=(",", ":"))
        else:
            text = repr(value)
        parts.append(f"{key}={text}")
    return re.sub(r"[^A-Za-z0-9.=,+_-]", "_", ",".join(parts))


def expand_grid(spec: GridSpec) -> list[GridPoint]:
    """The cartesian product of the grid's lists (the last key varies fastest), fixed parameters included."""
    keys = list(spec.grid)
    points = []
    for combination in itertools.product(*(spec.grid[key] for key in keys)):
        values = dict(zip(keys, combination, strict=True))
        points.append(GridPoint(point_name(values), {**spec.parameters, **values}))
    names = [point.name for point in points]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise GridError(f"grid values give the same folder name twice: {', '.join(duplicates)}")
    return points


def notebook_parameters(notebook: str | Path) -> dict[str, Any]:
    """The notebook's parameters and their default values, read from its ``parameters`` cell.

    A default that is not a Python literal (``Path("x")``, ``2 * 3``) is returned as ``None``: unknown type.
    """
    import papermill

    try:
        inspected = papermill.inspect_notebook(str(notebook))
    except Exception as exc:  # papermill raises ValueError, OSError, JSON errors...
        raise GridError(f"cannot read the parameters of {notebook}: {type(exc).__name__}: {exc}") from exc
    defaults = {}
    for name, info in inspected.items():
        try:
            defaults[name] = ast.literal_eval(info["default"])
        except (ValueError, SyntaxError, TypeError):
            defaults[name] = None
    return defaults


def parameter_type_problem(name: str, value: Any, default: Any) -> str | None:
    """Why ``value`` cannot replace ``default`` (None: it can). None default: anything; float takes int."""
    if default is None:
        return None
    if isinstance(default, bool):
        accepted = isinstance(value, bool)
    elif isinstance(default, int):
        accepted = isinstance(value, int) and not isinstance(value, bool)
    elif isinstance(default, float):
        accepted = isinstance(value, (int, float)) and not isinstance(value, bool)
    elif isinstance(default, (list, tuple)):
        accepted = isinstance(value, (list, tuple))
    else:
        accepted = isinstance(value, type(default))
    if accepted:
        return None
    message = (
        f"parameter '{name}' expects {type(default).__name__} (default {default!r}), "
        f"got {type(value).__name__} {value!r}"
    )
    if isinstance(default, float) and isinstance(value, str):
        message += " (YAML reads 1e-3 as a string: write 1.0e-3)"
    return message


def check_parameters(spec: GridSpec, defaults: Mapping[str, Any]) -> None:
    """Raise :class:`GridError` listing every unknown parameter and every value of the wrong type."""
    settable = [name for name in defaults if name not in RUNNER_PARAMETERS]
    problems = []
    for name in [*spec.parameters, *spec.grid]:
        if name in RUNNER_PARAMETERS:
            problems.append(f"parameter '{name}' is set by the batch runner, not by the grid file")
        elif name not in defaults:
            problems.append(
                f"unknown parameter '{name}' for {spec.notebook}; valid parameters: {', '.join(settable) or 'none'}"
            )
    for name, value in spec.parameters.items():
        if name in settable:
            problems.append(parameter_type_problem(name, value, defaults[name]))
    for name, values in spec.grid.items():
        if name in settable:
            problems.extend(parameter_type_problem(name, value, defaults[name]) for value in values)
    problems = [problem for problem in problems if problem]
    if problems:
        raise GridError("\n".join(problems))


def absolute_paths(parameters: Mapping[str, Any]) -> dict[str, Any]:
    """``parameters`` with every relative path (a string parameter named ``*_dir`` or ``*_root``) made
    absolute from the current directory, so that it means the same thing in the notebook's folder."""
    return {
        name: str(Path(value).expanduser().resolve())
        if name.endswith(PATH_SUFFIXES) and isinstance(value, str) else value
        for name, value in parameters.items()
    }


def _check_kernel(kernel: str) -> None:
    from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

    manager = KernelSpecManager()
    try:
        manager.get_kernel_spec(kernel)
    except NoSuchKernel as exc:
        available = ", ".join(sorted(manager.find_kernel_specs())) or "none"
        raise GridError(f"no Jupyter kernel named '{kernel}'; installed kernels: {available}") from exc


def _read_record(point_dir: Path) -> dict[str, Any] | None:
    path = point_dir / POINT_FILE
    return json.loads(path.read_text()) if path.is_file() else None


def _write_json(path: Path, data: Any) -> None:
    write_text_atomically(path, json.dumps(data, indent=2) + "\n")


def _same_parameters(record: Mapping[str, Any], parameters: Mapping[str, Any]) -> bool:
    """Compare as JSON would store them (tuples become lists)."""
    return record.get("parameters") == json.loads(json.dumps(parameters))


def _error_text(exc: Exception) -> str:
    from papermill.exceptions import PapermillExecutionError

    if isinstance(exc, PapermillExecutionError):
        return f"{exc.ename}: {exc.evalue}"
    return f"{type(exc).__name__}: {exc}"


def _as_spec(spec_or_path: GridSpec | Mapping[str, Any] | str | Path) -> GridSpec:
    if isinstance(spec_or_path, GridSpec):
        return spec_or_path
    if isinstance(spec_or_path, Mapping):
        return GridSpec.from_dict(spec_or_path)
    return load_spec(spec_or_path)


def _check_notebook(spec: GridSpec) -> dict[str, Any]:
    """The notebook's parameter defaults, once the notebook and the grid's parameters are found valid."""
    if not spec.notebook.is_file():
        raise GridError(f"notebook {spec.notebook} not found (paths are relative to the current directory)")
    defaults = notebook_parameters(spec.notebook)
    if "output_dir" not in defaults:
        raise GridError(
            f"{spec.notebook} has no 'output_dir' parameter: the batch runner gives every point its own "
            "output folder through it (add `output_dir = None` to the cell tagged 'parameters')"
        )
    check_parameters(spec, defaults)
    return defaults


def _plan(
    spec: GridSpec, points: Sequence[GridPoint], only: Sequence[str] | None, force: bool
) -> tuple[dict[str, PointResult], list[GridPoint]]:
    """Every point's initial result (skipped or pending) and the points to run, in grid order.

    A folder that holds a run with other parameters is an error, whatever its status.
    """
    results = {}
    to_run = []
    changed = []
    for point in points:
        record = _read_record(spec.output_dir / point.name)
        if record is not None and not _same_parameters(record, point.parameters):
            changed.append(point.name)
        notebook = spec.output_dir / point.name / spec.notebook.name
        completed = record is not None and record.get("status") == "ok" and notebook.is_file()
        chosen = only is None or point.name in only
        if completed and not (force and chosen):
            status = "skipped"
        else:
            status = "pending"
            if chosen:
                to_run.append(point)
        results[point.name] = PointResult(point.name, point.parameters, status, 0.0, None, notebook)
    if changed:
        raise GridError(
            f"folder(s) {', '.join(changed)} in {spec.output_dir} hold runs with other parameters (see their "
            f"{POINT_FILE}); remove them or choose another output_dir"
        )
    return results, to_run


def run_grid(
    spec_or_path: GridSpec | Mapping[str, Any] | str | Path,
    *,
    only: Sequence[str] | None = None,
    force: bool = False,
    dry_run: bool = False,
    kernel: str = DEFAULT_KERNEL,
    cwd: str | Path | None = None,
    progress: bool | None = None,
    cell_progress: bool = False,
    quiet: bool = False,
) -> list[PointResult]:
    """Run the notebook once per grid point; return one result per point, in grid order.

    Everything is checked before the first point runs (parameter names and types, the kernel, the names
    given in ``only``, points whose folder was run with other parameters); problems raise
    :class:`GridError`. A failing point is recorded and the next one runs. ``batch_summary.json`` is
    rewritten after every point, so it is current even when the grid is interrupted.

    Args:
        spec_or_path: a grid file's path, its content as a mapping, or a :class:`GridSpec`.
        only: run only these points (folder names); the others are reported as skipped or pending.
        force: run completed points again.
        dry_run: check everything and report what would run (pending) or be skipped; write nothing.
        kernel: the Jupyter kernel to run the notebook with.
        cwd: the notebook's working directory (default: the notebook's folder).
        progress: a bar over points; default: when stderr is a terminal.
        cell_progress: papermill's bar over the cells of each notebook.
        quiet: no bar and no line per point.
    """
    spec = _as_spec(spec_or_path)
    defaults = _check_notebook(spec)
    points = expand_grid(spec)
    names = [point.name for point in points]
    unknown = [name for name in only or () if name not in names]
    if unknown:
        raise GridError(f"--only: no point named {', '.join(unknown)}; points: {', '.join(names)}")
    _check_kernel(kernel)
    results, to_run = _plan(spec, points, only, force)
    if dry_run:
        return list(results.values())

    import papermill

    run_in = Path(cwd) if cwd is not None else spec.notebook.parent
    spec.output_dir.mkdir(parents=True, exist_ok=True)
    show_bar = (sys.stderr.isatty() if progress is None else progress) and not quiet
    bar = tqdm(to_run, desc="grid", unit="point", disable=not show_bar)
    for index, point in enumerate(bar, start=1):
        bar.set_postfix_str(point.name)
        result = results[point.name]
        point_dir = spec.output_dir / point.name
        point_dir.mkdir(parents=True, exist_ok=True)
        record = {"parameters": point.parameters, "notebook": str(spec.notebook), "status": "running"}
        _write_json(point_dir / POINT_FILE, record)
        values = {**absolute_paths(point.parameters), "output_dir": str(point_dir.resolve())}
        if "interactive" in defaults:
            values["interactive"] = False
        start = time.perf_counter()
        try:
            papermill.execute_notebook(
                str(spec.notebook), str(result.notebook), parameters=values, kernel_name=kernel,
                progress_bar=cell_progress, cwd=str(run_in),
            )
            result.status = "ok"
        except Exception as exc:  # a failing point must not stop the grid (a dead kernel included)
            result.status, result.error = "failed", _error_text(exc)
        result.seconds = time.perf_counter() - start
        record.update(status=result.status, seconds=round(result.seconds, 3), error=result.error)
        _write_json(point_dir / POINT_FILE, record)
        _write_summary(spec, kernel, results.values())
        if not show_bar and not quiet:
            print(f"[{index}/{len(to_run)}] {point.name}: {result.status} ({result.seconds:.1f} s)", file=sys.stderr)
    if not to_run:
        _write_summary(spec, kernel, results.values())
    return list(results.values())


def _write_summary(spec: GridSpec, kernel: str, results: Iterable[PointResult]) -> None:
    summary = {"notebook": str(spec.notebook), "kernel": kernel, "points": [r.to_dict() for r in results]}
    _write_json(spec.output_dir / SUMMARY_FILE, summary)


def load_summary(output_dir: str | Path) -> list[dict[str, Any]]:
    """The point entries of ``output_dir/batch_summary.json``."""
    path = Path(output_dir) / SUMMARY_FILE
    if not path.is_file():
        raise FileNotFoundError(
            f"{path} not found: run the grid first (python -m hnclip_core.replication.batch GRID.yaml)"
        )
    return json.loads(path.read_text())["points"]


def collect_json(output_dir: str | Path, filename: str) -> dict[str, Any]:
    """``{point name: content of <point>/<filename>}`` for every completed point of a grid's summary.

    Failed and pending points are left out; a completed point without the file is an error.
    """
    collected = {}
    for entry in load_summary(output_dir):
        if entry["status"] not in COMPLETED:
            continue
        path = Path(output_dir) / entry["name"] / filename
        if not path.is_file():
            raise FileNotFoundError(f"point {entry['name']} completed but wrote no {filename} ({path})")
        collected[entry["name"]] = json.loads(path.read_text())
    return collected


def format_summary(results: Sequence[PointResult]) -> str:
    """A table of point, status and seconds, then the error and notebook of each failed point."""
    width = max([len("point"), *(len(r.name) for r in results)])
    lines = [f"{'point':<{width}}  {'status':<8}  {'seconds':>8}"]
    lines += [f"{r.name:<{width}}  {r.status:<8}  {r.seconds:>8.1f}" for r in results]
    for r in results:
        if r.status == "failed":
            lines.append(f"\n{r.name} failed: {r.error}\n  see {r.notebook}")
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m hnclip_core.replication.batch", description=__doc__.splitlines()[0],
        epilog="Paths in the grid file are relative to the current directory. Exit status: 0 when every point "
        "succeeded, 1 when one failed, 2 when the grid file cannot be run.",
    )
    parser.add_argument("grid", help="the grid file (YAML)")
    parser.add_argument("--dry-run", action="store_true", help="check the grid and list the points; run nothing")
    parser.add_argument("--only", nargs="+", metavar="NAME", help="run only these points (folder names)")
    parser.add_argument("--force", action="store_true", help="run completed points again")
    parser.add_argument("--kernel", default=DEFAULT_KERNEL, help=f"Jupyter kernel (default: {DEFAULT_KERNEL})")
    parser.add_argument("--cwd", default=None, help="the notebook's working directory (default: its folder)")
    parser.add_argument("--cell-progress", action="store_true", help="papermill's bar over each notebook's cells")
    parser.add_argument("--quiet", action="store_true", help="no progress bar and no line per point")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        results = run_grid(
            args.grid, only=args.only, force=args.force, dry_run=args.dry_run, kernel=args.kernel, cwd=args.cwd,
            cell_progress=args.cell_progress, quiet=args.quiet,
        )
    except GridError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.dry_run:
        for result in results:
            chosen = args.only is None or result.name in args.only
            action = "run" if result.status == "pending" and chosen else result.status
            print(f"{action:<8} {result.name}  {json.dumps(result.parameters)}")
        return 0
    print(format_summary(results))
    return 1 if any(result.status == "failed" for result in results) else 0


if __name__ == "__main__":
    sys.exit(main())
