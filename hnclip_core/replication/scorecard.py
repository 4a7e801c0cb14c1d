"""The replication scorecard: the paper's tables as data, and each of its claims checked against ours.

Two halves:

* **The paper's numbers.** ``results/paper/*.json`` hold the paper's tables (arXiv 2608.18521v1), one file
  per table, in one schema (``results/paper/README.md``). :func:`load_paper_table` reads and validates a file;
  :func:`paper_value` looks one number up.
* **The claims.** :data:`CLAIMS` lists the paper's qualitative claims, each with a fixed, stated test
  (metric, epoch, threshold). :func:`build_scorecard` evaluates every claim on a ``measurements`` dict and
  :func:`scorecard_table` renders the verdicts beside the paper's numbers. A claim whose inputs are absent is
  "not measured"; nothing is filled in or guessed.

Epochs: every claim reads the **last** epoch of a run (``result["last"]``), never the best one — picking
the best epoch on the test split would flatter us. No claim here is about a best epoch; the best epochs
of the Ḡ ablation are reported beside its verdict, not judged.

The ``measurements`` dict
-------------------------
Every section is optional. ``result`` below is what :func:`hnclip_core.train.train` returns (or the subset
the notebooks store): a dict with ``"zero_shot"``, ``"last"`` (and ``"best"``) — flat metric rows with
``"epoch"``, ``"t2i_r1"``, ``"i2t_r1"``, ``"mean_r1"``, ... — and ``"history"``, the list of those rows for
epochs 0 (zero-shot), 1, 2, ...::

    {
      "gamma":          {"0": result, "0.25": result, ...},        # γ sweep, L_tok on (γ = 0: L_tok only)
      "gamma_transfer": {"0.25": result, ...},                     # the same sweep evaluated out of domain
      "components":     {"clip": result, "tok": result, "hn": result, "hn+tok": result},
      "margin_source":  {"recomputed": result, "frozen": result},
      "fine_tuning":    {"clip": result, "hn+tok": result},        # with "history" for the per-epoch claims
      "fractions":      {"0.2": {"hn+tok": result, "clip": result}, "1": {"clip": result, ...}},
      "seeds":          {"0": {"hn+tok": result, "clip": result}, "1": {...}, ...},
      "transfer":       {"synthetic": {"hn+tok": {"synthetic-alt": {"zero_shot": row, "last": row}, ...}, ...}},
      "temperature":    {"25": {"0": result, "0.5": result, ...}, "100": {...}},     # fixed s × γ
      "plug_and_play":  {"lora": {"clip": result, "hn": result}, "goal": {...}, ...},  # framework × global term
      "throughput":     {"longclip": {"clip": {"img_per_s": 70.1, ...}, "hn": {...}}, "goal": {...}, ...},
      "diagnostics":    [{"epoch": 1, "measurements": 4, "solved_clip": 0.8, "solved_hn": 0.1,
                          "grad_zero_clip": 0.4, "median_grad_ratio": 1e3, "cosine_mean": 0.5, ...}, ...],
      "geometry":       {"mean_pairwise": 0.84, "mean_hardest": 0.93, ...},
      "sources":        {"fine_tuning": "fine_tuning.json in runs/tutorial", ...},   # shown beside our numbers
    }

Keys of ``gamma``, ``gamma_transfer``, ``fractions``, ``seeds`` and ``temperature`` are numbers written as
strings (as the notebooks' JSON has them); ``"0.5"``, ``"0.50"`` and ``0.5`` are the same γ. Objective names are
:data:`hnclip_core.replication.experiment.OBJECTIVES`: ``clip`` (InfoNCE, Eq. 1), ``tok`` (+ L_tok), ``hn`` (L_HN,
Eq. 2), ``hn+tok`` (HN-CLIP, Eq. 3). ``diagnostics`` rows are
:meth:`hnclip_core.diagnostics.GradientMonitor.summary` rows, one per epoch, of the gradient-dynamics run
(chapter 2).

:func:`measurements_from_outputs` builds this dict from what a tutorial run writes: ``ablations.json``
(``gamma``, ``components``, ``margin_source``), ``fine_tuning.json`` (``fine_tuning``), ``saturation.json``
(``diagnostics``), ``geometry.json`` (``geometry``), optionally ``results/calibration.json`` (``seeds``) and
the ``ablations.json`` of a second run evaluated on another benchmark (``gamma_transfer``), and the full
ablation grids' ``results/ablations.json`` (:mod:`hnclip_core.replication.ablations`), whose sections replace the
tutorial-scale ones, and the frameworks' training throughput ``results/framework_throughput.json``
(``throughput``: the ``frameworks`` of ``benchmarks/framework_throughput.py --json``).
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from statistics import fmean

from .experiment import OBJECTIVES as EXPERIMENT_OBJECTIVES
from .paper import SATURATION
from .report import markdown_table

__all__ = [
    "CLAIMS",
    "Claim",
    "ClaimResult",
    "PAPER_DIR",
    "PAPER_THROUGHPUT",
    "PaperRow",
    "PaperTable",
    "PaperTableError",
    "STATUSES",
    "build_scorecard",
    "claims_table",
    "load_paper_table",
    "measurements_from_outputs",
    "paper_plug_and_play_deltas",
    "paper_tables",
    "paper_value",
    "scorecard_table",
]

#: Where the transcribed tables live (a source checkout; they are data, not package files).
PAPER_DIR = Path(__file__).resolve().parent / "paper"
#: The project's committed calibration over seeds (read by :func:`measurements_from_outputs`).
CALIBRATION_FILE = Path(__file__).resolve().parents[2] / "results" / "calibration.json"
ABLATIONS_FILE = CALIBRATION_FILE.with_name("ablations.json")
THROUGHPUT_FILE = CALIBRATION_FILE.with_name("framework_throughput.json")
#: Sections of the measurements dict that the ablation grids produce (:mod:`hnclip_core.replication.ablations`).
ABLATION_SECTIONS = ("gamma", "gamma_transfer", "components", "margin_source", "fractions", "seeds", "transfer",
                     "temperature", "plug_and_play")

STATUSES = ("reproduced", "not reproduced", "not measured")
OBJECTIVES = tuple(EXPERIMENT_OBJECTIVES)
#: Objectives without L_HN: the baselines HN-CLIP is compared with (Fig. 6 claim).
BASELINE_OBJECTIVES = ("clip", "tok")
METHOD = "hn+tok"

# ---------------------------------------------------------------------------------------------------------
# The paper's tables
# ---------------------------------------------------------------------------------------------------------

_TOP_KEYS = {"source", "caption", "columns", "rows"}
_OPTIONAL_TOP_KEYS = {"notes"}
_ROW_KEYS = {"method", "dataset", "values"}
_OPTIONAL_ROW_KEYS = {"setting", "objective", "zero_shot", "derived", "replica", "note", "approximate"}


class PaperTableError(ValueError):
    """A file of ``results/paper`` does not follow the schema; the message names the file and the problem."""


@dataclass(frozen=True)
class PaperRow:
    """One row of a paper table, for one dataset (see ``results/paper/README.md``)."""

    method: str
    dataset: str
    values: dict[str, float | None]
    setting: str | None = None
    objective: str | None = None
    zero_shot: bool = False
    derived: bool = False
    replica: bool = False
    note: str | None = None
    approximate: tuple[str, ...] = ()


@dataclass(frozen=True)
class PaperTable:
    """A validated table: its citation, our paraphrase of its caption, its columns and rows."""

    name: str
    path: Path
    source: str
    caption: str
    columns: tuple[str, ...]
    rows: tuple[PaperRow, ...]
    notes: tuple[str, ...] = ()

    def find(self, method: str, dataset: str, setting: str | None = None) -> PaperRow:
        """The one row of ``method`` (the row label or its ``objective``) on ``dataset`` [with ``setting``]."""
        hits = [r for r in self.rows if method in (r.method, r.objective) and r.dataset == dataset
                and (setting is None or r.setting == setting)]
        if len(hits) == 1:
            return hits[0]
        where = f"{self.name}: method {method!r}, dataset {dataset!r}" + (f", setting {setting!r}" if setting else "")
        if not hits:
            methods = sorted({r.method for r in self.rows})
            datasets = sorted({r.dataset for r in self.rows})
            raise KeyError(f"{where}: no such row (methods: {methods}; datasets: {datasets})")
        settings = sorted({str(r.setting) for r in hits})
        raise KeyError(f"{where}: {len(hits)} rows match; pass setting= (one of {settings}) or the full method label "
                       f"({sorted({r.method for r in hits})})")


def _table_path(name: str | Path, directory: Path) -> Path:
    if isinstance(name, Path) or str(name).endswith(".json"):
        return Path(name)
    key = str(name).strip().replace(" ", "")
    if key.lower().startswith("table"):
        key = key[len("table"):]
    key = key[:1].upper() + key[1:].lower() if key[:1].isalpha() else key.lower()
    return directory / f"table{key}.json"


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


def _validate(data, path: Path) -> None:
    def fail(problem: str):
        raise PaperTableError(f"{path}: {problem}")

    if not isinstance(data, dict):
        fail(f"the top level must be an object, got {type(data).__name__}")
    missing = sorted(_TOP_KEYS - set(data))
    if missing:
        fail(f"missing key(s) {missing}; a table has {sorted(_TOP_KEYS)} (and optionally 'notes')")
    unknown = sorted(set(data) - _TOP_KEYS - _OPTIONAL_TOP_KEYS)
    if unknown:
        fail(f"unknown key(s) {unknown}")
    source = data["source"]
    if not isinstance(source, str) or "2608.18521" not in source or "Table" not in source:
        fail(f"'source' must cite arXiv 2608.18521 and the table, got {source!r}")
    if "page" not in source:
        fail(f"'source' must give the page, or say 'page not given in the text version': {source!r}")
    if not isinstance(data["caption"], str) or not data["caption"].strip():
        fail("'caption' must be a non-empty string")
    columns = data["columns"]
    if not isinstance(columns, list) or not columns or not all(isinstance(c, str) and c for c in columns):
        fail("'columns' must be a non-empty list of metric names")
    if len(set(columns)) != len(columns):
        fail(f"'columns' has duplicates: {columns}")
    notes = data.get("notes", [])
    if not isinstance(notes, list) or not all(isinstance(n, str) for n in notes):
        fail("'notes' must be a list of strings")
    rows = data["rows"]
    if not isinstance(rows, list) or not rows:
        fail("'rows' must be a non-empty list")
    seen = set()
    for i, row in enumerate(rows):
        where = f"rows[{i}]"
        if not isinstance(row, dict):
            fail(f"{where} must be an object")
        missing = sorted(_ROW_KEYS - set(row))
        if missing:
            fail(f"{where} lacks {missing}")
        unknown = sorted(set(row) - _ROW_KEYS - _OPTIONAL_ROW_KEYS)
        if unknown:
            fail(f"{where} has unknown key(s) {unknown}; allowed: {sorted(_ROW_KEYS | _OPTIONAL_ROW_KEYS)}")
        for key in ("method", "dataset"):
            if not isinstance(row[key], str) or not row[key]:
                fail(f"{where}.{key} must be a non-empty string")
        for key in ("setting", "note"):
            if key in row and not isinstance(row[key], str):
                fail(f"{where}.{key} must be a string")
        for key in ("zero_shot", "derived", "replica"):
            if key in row and not isinstance(row[key], bool):
                fail(f"{where}.{key} must be true or false")
        if "objective" in row and row["objective"] not in OBJECTIVES:
            fail(f"{where}.objective must be one of {OBJECTIVES}, got {row['objective']!r}")
        values = row["values"]
        if not isinstance(values, dict) or not values:
            fail(f"{where}.values must be a non-empty object")
        for key, value in values.items():
            if key not in columns:
                fail(f"{where}.values has {key!r}, which is not in 'columns' {columns}")
            if value is not None and not _is_number(value):
                fail(f"{where}.values[{key!r}] must be a finite number or null, got {value!r}")
            if (value is not None and not row.get("derived") and key.startswith(("t2i_r", "i2t_r"))
                    and not key.endswith("_std") and not 0 <= value <= 100):
                fail(f"{where}.values[{key!r}] = {value} is not a percentage")
        approximate = row.get("approximate", [])
        if not isinstance(approximate, list) or not set(approximate) <= set(values):
            fail(f"{where}.approximate must list keys of its values")
        identity = (row["method"], row["dataset"], row.get("setting"))
        if identity in seen:
            fail(f"{where} repeats method/dataset/setting {identity}")
        seen.add(identity)


def load_paper_table(name: str | Path, directory: str | Path = PAPER_DIR) -> PaperTable:
    """Read and validate one table: ``"1"``, ``"Table 3a"``, ``"A5"``, ``"tableA9"`` or a path to a file.

    Raises :class:`PaperTableError` naming the file and what is wrong with it.
    """
    path = _table_path(name, Path(directory))
    if not path.is_file():
        available = sorted(p.stem for p in Path(directory).glob("table*.json"))
        raise PaperTableError(f"{path}: no such file (tables in {directory}: {available})")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise PaperTableError(f"{path}: not valid JSON ({exc})") from exc
    _validate(data, path)
    rows = tuple(
        PaperRow(
            method=r["method"], dataset=r["dataset"], values=dict(r["values"]), setting=r.get("setting"),
            objective=r.get("objective"), zero_shot=r.get("zero_shot", False), derived=r.get("derived", False),
            replica=r.get("replica", False), note=r.get("note"), approximate=tuple(r.get("approximate", ())),
        )
        for r in data["rows"]
    )
    return PaperTable(path.stem, path, data["source"], data["caption"], tuple(data["columns"]), rows,
                      tuple(data.get("notes", ())))


def paper_tables(directory: str | Path = PAPER_DIR) -> dict[str, PaperTable]:
    """Every table of ``directory``, validated, by file name (``table1``, ``table3a``, ``tableA5``, ...)."""
    return {p.stem: load_paper_table(p) for p in sorted(Path(directory).glob("table*.json"))}


@cache
def _cached_table(name: str) -> PaperTable:
    return load_paper_table(name)


def paper_value(
    table: PaperTable | str, *, method: str, dataset: str, metric: str, setting: str | None = None
) -> float:
    """One number of a paper table, e.g. ``paper_value("1", method="HN-CLIP", dataset="DOCCI", metric="t2i_r1")``.

    ``method`` is a row label or the project objective the row corresponds to (``"hn+tok"``); ``setting``
    disambiguates rows such as γ or the training fraction (``setting="γ=0.25"``). Raises ``KeyError`` for a
    row or metric the table does not have, ``ValueError`` where the paper prints no number ("≈ 0", "—").
    """
    if not isinstance(table, PaperTable):
        table = _cached_table(str(table))
    row = table.find(method, dataset, setting)
    if metric not in row.values:
        raise KeyError(f"{table.name}: row {row.method!r} on {dataset!r} has no {metric!r} (has {sorted(row.values)})")
    value = row.values[metric]
    if value is None:
        raise ValueError(f"{table.name}: {row.method!r} on {dataset!r}, {metric}: the paper prints no number here"
                         + (f" ({row.note})" if row.note else ""))
    return value


def _paper_mean_r1(table: str, method: str, dataset: str, setting: str | None = None) -> float:
    return fmean(paper_value(table, method=method, dataset=dataset, metric=m, setting=setting)
                 for m in ("t2i_r1", "i2t_r1"))


# ---------------------------------------------------------------------------------------------------------
# Claims
# ---------------------------------------------------------------------------------------------------------

#: Numbers the paper gives only in its text or figure captions (tables are read from ``results/paper``).
TEXT_NUMBERS = {
    "cosine_mean": 0.47,  # §2.4 (ii): cos μ = 0.47, σ = 0.36 on the Fig. 4 run
    "cosine_std": 0.36,
    "cosine_median_app_c": 0.58,  # App. C / Fig. A8: median cosine over all scales
    "cosine_positive_app_c": 0.98,  # App. C: positive on 98 % of measurements
    "first_epoch_docci_mean_r1": 84.3,  # §3.2 / Fig. 5: HN-CLIP's first epoch on DOCCI (average R@1)
    "second_epoch_docci_mean_r1": 86.1,
}

#: Margins of the operationalisations, fixed before looking at any of our numbers.
COMPONENT_TOLERANCE = 0.5  # L_HN + L_tok "best or within" this many points of average R@1
SATURATION_THRESHOLD = 0.5  # share of first-epoch batches with L_CLIP < 1e-3
ACTIVE_THRESHOLD = 0.2  # share of batches with L_HN ≥ 1e-3, every epoch
GRAD_RATIO_THRESHOLD = 100.0  # per-epoch median ‖∇L_HN‖ / ‖∇L_CLIP‖ (the paper's lower end, 10²)
SEED_SPREAD_MAX = 1.5  # R@1 points
PLATEAU_PRODUCTS = (25.0, 100.0)  # s·γ of the paper's γ plateau [0.25, 1] at s ≈ 100 (Table 3a, App. B.2)
GEOMETRY_MIN = {"mean_pairwise": 0.80, "mean_hardest": 0.90}
_EPS = 1e-9  # R@1 values are multiples of 100/N; differences below this are float noise


class NotMeasured(Exception):
    """An input a claim needs is absent from the measurements."""


@dataclass(frozen=True)
class ClaimResult:
    """A claim's verdict, the numbers behind it (the paper's and ours) and a one-line explanation."""

    claim_id: str
    text: str
    reference: str
    status: str
    paper: dict
    ours: dict
    explanation: str
    source: str | None = None

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"status must be one of {STATUSES}, got {self.status!r}")


@dataclass(frozen=True)
class Claim:
    """One claim of the paper and the fixed test that decides whether our measurements reproduce it.

    ``text`` paraphrases the paper; ``operationalisation`` is the exact test; ``needs`` are the sections of
    the measurements dict it reads. ``check(measurements)`` returns ``(passed, ours, explanation)`` and raises
    :class:`NotMeasured` when an input is absent; ``paper_numbers()`` returns the paper's numbers it is
    compared with.
    """

    id: str
    text: str
    paper_reference: str
    operationalisation: str
    needs: tuple[str, ...]
    check: Callable[[Mapping], tuple[bool, dict, str]] = field(repr=False)
    paper_numbers: Callable[[], dict] = field(repr=False)

    def evaluate(self, measurements: Mapping) -> ClaimResult:
        paper = self.paper_numbers()
        sources = measurements.get("sources", {}) if isinstance(measurements, Mapping) else {}
        source = "; ".join(dict.fromkeys(str(sources[n]) for n in self.needs if n in sources)) or None
        try:
            passed, ours, explanation = self.check(measurements)
        except NotMeasured as missing:
            return ClaimResult(self.id, self.text, self.paper_reference, "not measured", paper, {},
                               f"not measured: {missing}", source)
        status = "reproduced" if passed else "not reproduced"
        return ClaimResult(self.id, self.text, self.paper_reference, status, paper, ours, explanation, source)


# ---- reading measurements --------------------------------------------------------------------------------


def _section(measurements: Mapping, name: str):
    if not isinstance(measurements, Mapping):
        raise TypeError(f"measurements must be a dict, got {type(measurements).__name__}")
    value = measurements.get(name)
    if value is None or (isinstance(value, Mapping | list) and not value):
        raise NotMeasured(f"measurements[{name!r}] is absent")
    return value


def _entry(mapping: Mapping, key: str, where: str):
    if not isinstance(mapping, Mapping) or key not in mapping or mapping[key] is None:
        raise NotMeasured(f"{where}[{key!r}] is absent")
    return mapping[key]


def _by_number(mapping, where: str) -> dict[float, object]:
    """``{"0.25": x, "1": y}`` → ``{0.25: x, 1.0: y}``; a key that is not a number is an error."""
    if not isinstance(mapping, Mapping):
        raise TypeError(f"{where} must be a dict keyed by numbers, got {type(mapping).__name__}")
    out = {}
    for key, value in mapping.items():
        try:
            number = float(str(key).rstrip("%")) / (100 if str(key).endswith("%") else 1)
        except ValueError as exc:
            raise ValueError(f"{where}: key {key!r} is not a number") from exc
        out[round(number, 9)] = value
    return out


def _metric(row, key: str, where: str) -> float:
    if not isinstance(row, Mapping) or key not in row:
        raise NotMeasured(f"{where} has no {key!r}")
    value = row[key]
    if not _is_number(value):
        raise NotMeasured(f"{where}[{key!r}] is {value!r}, not a number")
    return float(value)


def _last(result, where: str, key: str = "mean_r1") -> float:
    row = _entry(result, "last", where)
    return _metric(row, key, f"{where}['last']")


def _history(result, where: str) -> dict[int, Mapping]:
    history = _entry(result, "history", where)
    return {int(row["epoch"]): row for row in history if isinstance(row, Mapping) and "epoch" in row}


def _diagnostics(measurements: Mapping) -> list[Mapping]:
    rows = _section(measurements, "diagnostics")
    if not isinstance(rows, list) or not all(isinstance(r, Mapping) and "epoch" in r for r in rows):
        raise TypeError("measurements['diagnostics'] must be a list of per-epoch dicts with an 'epoch' key")
    return sorted(rows, key=lambda r: r["epoch"])


def _gt(a: float, b: float) -> bool:
    return a - b > _EPS


def _f(value) -> str:
    """A number as the scorecard shows it."""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if math.isnan(value):
            return "n/a"
        if abs(value) >= 1000:
            return f"{value:.3g}"
        if abs(value) >= 10:
            return f"{value:.2f}"
        return f"{value:.3g}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(_f(v) for v in value) + "]"
    return str(value)


def _g(gamma: float) -> str:
    return f"{gamma:g}"


# ---- the claims' tests -------------------------------------------------------------------------------------


def _check_gamma(m):
    sweep = _by_number(_section(m, "gamma"), "measurements['gamma']")
    base = _entry(sweep, 0.0, "measurements['gamma']")
    boosted = {g: r for g, r in sorted(sweep.items()) if 0.25 - _EPS <= g <= 1 + _EPS}
    if not boosted:
        raise NotMeasured("measurements['gamma'] has no γ in [0.25, 1]")
    ours, failures = {}, []
    b = {d: _last(base, "gamma['0']", f"{d}_r1") for d in ("t2i", "i2t")}
    ours["γ=0 T→I / I→T R@1"] = [b["t2i"], b["i2t"]]
    for g, result in boosted.items():
        v = {d: _last(result, f"gamma[{_g(g)!r}]", f"{d}_r1") for d in ("t2i", "i2t")}
        ours[f"γ={_g(g)} T→I / I→T R@1"] = [v["t2i"], v["i2t"]]
        failures += [f"γ={_g(g)} {d}" for d in ("t2i", "i2t") if not _gt(v[d], b[d])]
    measured = ", ".join(_g(g) for g in boosted)
    if failures:
        return False, ours, f"not above γ=0 at the last epoch: {', '.join(failures)} (γ measured: {measured})"
    return True, ours, f"every measured γ ({measured}) beats γ=0 in both directions at the last epoch"


def _paper_gamma():
    margins = [
        paper_value("3a", method="HN-CLIP", dataset=ds, metric=k, setting=s)
        - paper_value("3a", method="HN-CLIP", dataset=ds, metric=k, setting="γ=0")
        for s in ("γ=0.25", "γ=0.5", "γ=0.75", "γ=1.0")
        for ds in ("DOCCI", "DCI", "Long-DCI")
        for k in ("t2i_r1", "i2t_r1")
    ]
    return {"DOCCI γ=0 T→I / I→T R@1": [paper_value("3a", method="HN-CLIP", dataset="DOCCI", metric=k, setting="γ=0")
                                        for k in ("t2i_r1", "i2t_r1")],
            "in-domain margin of γ∈[0.25,1] over γ=0 (min–max)": f"+{min(margins):.2f} to +{max(margins):.2f}"}


def _check_components(m):
    comps = _section(m, "components")
    r = {o: _last(_entry(comps, o, "measurements['components']"), f"components[{o!r}]") for o in OBJECTIVES}
    best = max(r.values())
    ours = {f"{o} avg R@1": r[o] for o in OBJECTIVES}
    tests = {
        "L_HN beats InfoNCE": _gt(r["hn"], r["clip"]),
        "L_HN beats L_tok": _gt(r["hn"], r["tok"]),
        f"L_HN+L_tok within {COMPONENT_TOLERANCE} of the best": r["hn+tok"] >= best - COMPONENT_TOLERANCE - _EPS,
    }
    failed = [name for name, ok in tests.items() if not ok]
    gains = f"hn − clip {r['hn'] - r['clip']:+.2f}, tok − clip {r['tok'] - r['clip']:+.2f}, hn+tok − best " \
            f"{r['hn+tok'] - best:+.2f}"
    if failed:
        return False, ours, f"fails: {'; '.join(failed)} ({gains})"
    return True, ours, f"all three hold ({gains})"


def _paper_components():
    avg = "average (DCI, Long-DCI)"
    return {f"{o} avg R@1 (DCI, Long-DCI)": paper_value("3b", method=o, dataset=avg, metric="mean_r1")
            for o in OBJECTIVES}


def _check_margin_source(m):
    section = _section(m, "margin_source")
    rec = _entry(section, "recomputed", "measurements['margin_source']")
    fro = _entry(section, "frozen", "measurements['margin_source']")
    a, b = _last(rec, "margin_source['recomputed']"), _last(fro, "margin_source['frozen']")
    ours = {"recomputed avg R@1": a, "frozen avg R@1": b}
    for name, result in (("recomputed", rec), ("frozen", fro)):
        best = result.get("best") if isinstance(result, Mapping) else None
        if isinstance(best, Mapping) and "epoch" in best:
            ours[f"{name} best epoch"] = best["epoch"]
    verdict = _gt(a, b)
    return verdict, ours, f"last-epoch avg R@1 recomputed − frozen = {a - b:+.2f}"


def _paper_margin_source():
    avg = "average (4 benchmarks)"
    out = {f"{s} avg R@1 (4 benchmarks)": paper_value("3c", method=m, dataset=avg, metric="mean_r1")
           for s, m in (("recomputed", "Recomputed Ḡ (default)"), ("frozen", "Frozen Ḡ (at init)"))}
    out["best epoch recomputed / frozen (DOCCI, DCI, Long-DCI, Urban-1K)"] = " ".join(
        f"{paper_value('A2', method='Recomputed Ḡ (default)', dataset=ds, metric='best_epoch'):g}/"
        f"{paper_value('A2', method='Frozen Ḡ (at init)', dataset=ds, metric='best_epoch'):g}"
        for ds in ("DOCCI", "DCI", "Long-DCI", "Urban-1K"))
    return out


def _fine_tuning_pair(m):
    runs = _section(m, "fine_tuning")
    return (_entry(runs, METHOD, "measurements['fine_tuning']"), _entry(runs, "clip", "measurements['fine_tuning']"))


def _check_beats_infonce(m):
    method, clip = _fine_tuning_pair(m)
    a, b = _last(method, "fine_tuning['hn+tok']"), _last(clip, "fine_tuning['clip']")
    return _gt(a, b), {"hn+tok avg R@1": a, "clip avg R@1": b}, f"last-epoch avg R@1 hn+tok − clip = {a - b:+.2f}"


def _paper_beats_infonce():
    return {"DOCCI hn+tok avg R@1 (Table 1)": _paper_mean_r1("1", "HN-CLIP", "DOCCI"),
            "DOCCI InfoNCE avg R@1 (Table A5)": _paper_mean_r1("A5", "clip", "DOCCI"),
            "DCI + Long-DCI: hn+tok / InfoNCE (Table 3b)": [
                paper_value("3b", method=o, dataset="average (DCI, Long-DCI)", metric="mean_r1")
                for o in ("hn+tok", "clip")]}


def _check_beats_zero_shot(m):
    runs = _section(m, "fine_tuning")
    method = _entry(runs, METHOD, "measurements['fine_tuning']")
    zero_shot = _entry(method, "zero_shot", "fine_tuning['hn+tok']")
    zero = _metric(zero_shot, "mean_r1", "fine_tuning['hn+tok']['zero_shot']")
    a = _last(method, "fine_tuning['hn+tok']")
    return _gt(a, zero), {"hn+tok avg R@1": a, "zero-shot avg R@1": zero}, \
        f"last-epoch avg R@1 hn+tok − zero-shot = {a - zero:+.2f}"


def _paper_beats_zero_shot():
    return {f"{ds} HN-CLIP / zero-shot avg R@1": [_paper_mean_r1("1", "HN-CLIP", ds),
                                                  _paper_mean_r1("1", "Long-CLIP", ds)]
            for ds in ("DOCCI", "DCI", "Long-DCI", "Urban-1K")}


def _check_leads_every_epoch(m):
    method, clip = _fine_tuning_pair(m)
    hm, hc = _history(method, "fine_tuning['hn+tok']"), _history(clip, "fine_tuning['clip']")
    epochs = sorted(e for e in set(hm) & set(hc) if e >= 1)
    if not epochs:
        raise NotMeasured("fine_tuning histories share no trained epoch")
    a = [_metric(hm[e], "mean_r1", f"hn+tok epoch {e}") for e in epochs]
    b = [_metric(hc[e], "mean_r1", f"clip epoch {e}") for e in epochs]
    behind = [e for e, x, y in zip(epochs, a, b, strict=True) if not _gt(x, y)]
    ours = {"epochs": epochs, "hn+tok avg R@1": a, "clip avg R@1": b}
    if behind:
        return False, ours, f"hn+tok does not lead InfoNCE at epoch(s) {behind}"
    return True, ours, f"hn+tok leads InfoNCE at every epoch 1–{epochs[-1]}"


def _paper_leads_every_epoch():
    return {"DOCCI HN-CLIP avg R@1 epochs 1, 2 (§3.2)": [TEXT_NUMBERS["first_epoch_docci_mean_r1"],
                                                         TEXT_NUMBERS["second_epoch_docci_mean_r1"]],
            "App. E.6": "leads in both directions on all four benchmarks from epoch 1"}


def _check_first_epoch(m):
    method, clip = _fine_tuning_pair(m)
    hm = _history(method, "fine_tuning['hn+tok']")
    if 1 not in hm:
        raise NotMeasured("fine_tuning['hn+tok'] has no epoch 1 in its history")
    first = _metric(hm[1], "mean_r1", "hn+tok epoch 1")
    final = _last(clip, "fine_tuning['clip']")
    return first >= final - _EPS, {"hn+tok epoch-1 avg R@1": first, "clip last-epoch avg R@1": final}, \
        f"hn+tok after one epoch − InfoNCE after all epochs = {first - final:+.2f}"


def _paper_first_epoch():
    return {"DOCCI HN-CLIP epoch-1 avg R@1 (§3.2)": TEXT_NUMBERS["first_epoch_docci_mean_r1"],
            "DOCCI InfoNCE final avg R@1 (Table A5)": _paper_mean_r1("A5", "clip", "DOCCI"),
            "DOCCI StructXLIP final avg R@1 (Table 1)": _paper_mean_r1("1", "StructXLIP", "DOCCI")}


def _check_fractions(m):
    fractions = _by_number(_section(m, "fractions"), "measurements['fractions']")
    small = _entry(fractions, 0.2, "measurements['fractions']")
    full = _entry(fractions, 1.0, "measurements['fractions']")
    ours_small = _last(_entry(small, METHOD, "fractions['0.2']"), "fractions['0.2']['hn+tok']")
    baselines = {o: _last(full[o], f"fractions['1'][{o!r}]") for o in BASELINE_OBJECTIVES
                 if isinstance(full, Mapping) and full.get(o) is not None}
    if not baselines:
        raise NotMeasured(f"fractions['1'] has no baseline run ({', '.join(BASELINE_OBJECTIVES)})")
    strongest = max(baselines, key=baselines.get)
    ours = {"hn+tok at 20 % avg R@1": ours_small, **{f"{o} at 100 % avg R@1": v for o, v in baselines.items()}}
    margin = ours_small - baselines[strongest]
    return _gt(ours_small, baselines[strongest]), ours, \
        f"hn+tok at 20 % − strongest baseline ({strongest}) at 100 % = {margin:+.2f}"


def _paper_fractions():
    return {"DOCCI: HN-CLIP 20 % / StructXLIP 100 % avg R@1": [
                _paper_mean_r1("A9", "HN-CLIP", "DOCCI", "20%"), _paper_mean_r1("1", "StructXLIP", "DOCCI")],
            "DCI: HN-CLIP 20 % / GOAL 100 % avg R@1": [
                _paper_mean_r1("A9", "HN-CLIP", "DCI", "20%"), _paper_mean_r1("1", "GOAL", "DCI")]}


def _check_cosine(m):
    rows = _diagnostics(m)
    cosines = {r["epoch"]: r.get("cosine_mean") for r in rows}
    finite = {e: c for e, c in cosines.items() if _is_number(c)}
    if not finite:
        raise NotMeasured("no epoch of the diagnostics has a finite cosine_mean")
    ours = {"per-epoch mean cosine": list(finite.values())}
    skipped = sorted(set(cosines) - set(finite))
    note = f"; epochs {skipped} have no cosine (a zero gradient)" if skipped else ""
    negative = [e for e, c in finite.items() if not c > 0]
    if negative:
        return False, ours, f"mean cosine ≤ 0 at epoch(s) {negative}{note}"
    return True, ours, f"mean cosine > 0 in all {len(finite)} epoch(s), min {min(finite.values()):.2f}{note}"


def _paper_cosine():
    return {"cos mean / std (§2.4)": [TEXT_NUMBERS["cosine_mean"], TEXT_NUMBERS["cosine_std"]],
            "median cos, share positive (App. C)": [TEXT_NUMBERS["cosine_median_app_c"],
                                                   TEXT_NUMBERS["cosine_positive_app_c"]]}


def _check_saturation(m):
    rows = [r for r in _diagnostics(m) if r["epoch"] >= 1]
    if not rows:
        raise NotMeasured("the diagnostics have no trained epoch")
    first = rows[0]
    key = "micro_solved_clip" if "micro_solved_clip" in first else "solved_clip"  # micro-batches when measured
    share = _metric(first, key, f"diagnostics epoch {first['epoch']}")
    ours = {f"epoch {first['epoch']}: share of batches with L_CLIP < 1e-3": share}
    return share >= SATURATION_THRESHOLD - _EPS, ours, \
        f"{100 * share:.0f} % of first-epoch batches solved (threshold {100 * SATURATION_THRESHOLD:.0f} %)"


def _paper_saturation():
    return {"share solved in epoch 1 (Fig. 4)": SATURATION["solved_clip_first_epoch"]}


def _check_zero_grad(m):
    rows = _diagnostics(m)
    counts = [r.get("measurements") for r in rows]
    weights = counts if all(_is_number(c) and c > 0 for c in counts) else [1] * len(rows)
    shares = [_metric(r, "grad_zero_clip", f"diagnostics epoch {r['epoch']}") for r in rows]
    overall = sum(w * s for w, s in zip(weights, shares, strict=True)) / sum(weights)
    ours = {"share of measurements with ∇L_CLIP exactly 0": overall}
    how = "" if weights is counts else " (epochs weighted equally: no measurement counts)"
    return overall > 0, ours, f"{100 * overall:.1f} % of measurements have an exactly-zero fp32 gradient{how}"


def _paper_zero_grad():
    return {"share of measurements (Fig. 4)": SATURATION["grad_zero_clip"]}


def _check_active(m):
    rows = _diagnostics(m)
    active = {r["epoch"]: 1 - _metric(r, "micro_solved_hn" if "micro_solved_hn" in r else "solved_hn",
                                      f"diagnostics epoch {r['epoch']}") for r in rows}
    low = min(active.values())
    ours = {"min over epochs of share with L_HN ≥ 1e-3": low}
    lowest = min(active, key=active.get)
    return low >= ACTIVE_THRESHOLD - _EPS, ours, \
        f"lowest epoch {lowest}: {100 * low:.0f} % active (threshold {100 * ACTIVE_THRESHOLD:.0f} %)"


def _paper_active():
    return {"min share active per epoch (Fig. 4)": SATURATION["active_hn_min"]}


def _check_grad_ratio(m):
    rows = _diagnostics(m)
    ratios = {r["epoch"]: r.get("median_grad_ratio") for r in rows}
    finite = {e: v for e, v in ratios.items() if _is_number(v)}
    if not finite:
        raise NotMeasured("no epoch has a median gradient ratio (∇L_CLIP was zero throughout)")
    ours = {"per-epoch median ‖∇L_HN‖/‖∇L_CLIP‖": list(finite.values())}
    low = [e for e, v in finite.items() if v < GRAD_RATIO_THRESHOLD]
    if low:
        return False, ours, f"below {GRAD_RATIO_THRESHOLD:g} at epoch(s) {low} (min {min(finite.values()):.3g})"
    return True, ours, f"≥ {GRAD_RATIO_THRESHOLD:g} in every epoch (min {min(finite.values()):.3g})"


def _paper_grad_ratio():
    low, high = SATURATION["grad_ratio_range"]
    return {"per-epoch median range (Fig. 4)": f"{low:.0e}–{high:.0e}"}


def _check_seeds(m):
    seeds = _section(m, "seeds")
    if not isinstance(seeds, Mapping):
        raise TypeError("measurements['seeds'] must be a dict {seed: {objective: result}}")
    values = {}
    for seed, runs in seeds.items():
        if isinstance(runs, Mapping) and runs.get(METHOD) is not None:
            where = f"seeds[{seed!r}]['hn+tok']"
            values[str(seed)] = {d: _last(runs[METHOD], where, f"{d}_r1") for d in ("t2i", "i2t")}
    if len(values) < 2:
        raise NotMeasured(f"hn+tok was run with {len(values)} seed(s); the spread needs at least 2")
    spread = {d: max(v[d] for v in values.values()) - min(v[d] for v in values.values()) for d in ("t2i", "i2t")}
    worst = max(spread.values())
    ours = {"seeds": list(values), "T→I / I→T R@1 spread": [spread["t2i"], spread["i2t"]]}
    return worst <= SEED_SPREAD_MAX + _EPS, ours, \
        f"largest R@1 spread over {len(values)} seeds {worst:.2f} (threshold {SEED_SPREAD_MAX})"


def _paper_seeds():
    spread = [abs(paper_value("A8", method="HN-CLIP", dataset="Long-DCI", metric=k, setting="seed 42")
                  - paper_value("A8", method="HN-CLIP", dataset="Long-DCI", metric=k, setting="seed 43"))
              for k in ("t2i_r1", "i2t_r1")]
    return {"Long-DCI T→I / I→T R@1 spread, 2 seeds": spread,
            "max|Δ| over R@1/5/10": paper_value("A8", method="HN-CLIP", dataset="Long-DCI", metric="max_abs_delta",
                                                setting="max|Δ| over seeds")}


def _check_transfer(m):
    sweep = _by_number(_section(m, "gamma_transfer"), "measurements['gamma_transfer']")
    boosted = {g: _last(r, f"gamma_transfer[{_g(g)!r}]") for g, r in sorted(sweep.items())
               if 0.25 - _EPS <= g <= 1 + _EPS and r is not None}
    if len(boosted) < 2:
        raise NotMeasured("gamma_transfer needs at least two γ in [0.25, 1]")
    gammas, values = list(boosted), list(boosted.values())
    ours = {f"γ={_g(g)} avg R@1 (transfer)": v for g, v in boosted.items()}
    steps = zip(gammas, gammas[1:], values, values[1:], strict=False)
    rises = [f"{_g(a)}→{_g(b)}" for a, b, x, y in steps if _gt(y, x)]
    ok = not rises and _gt(values[0], values[-1])
    if ok:
        return True, ours, f"transfer avg R@1 falls as γ grows ({_g(gammas[0])}: {values[0]:.2f} → " \
                           f"{_g(gammas[-1])}: {values[-1]:.2f})"
    why = f"rises at {', '.join(rises)}" if rises else "mildest γ not above the strongest"
    return False, ours, f"transfer avg R@1 is not falling with γ: {why}"


def _paper_transfer():
    return {f"Urban-1K γ={s[2:]} avg R@1": _paper_mean_r1("3a", "HN-CLIP", "Urban-1K", s)
            for s in ("γ=0.25", "γ=0.5", "γ=0.75", "γ=1.0")}


def _check_geometry(m):
    geometry = _section(m, "geometry")
    values = {k: _metric(geometry, k, "measurements['geometry']") for k in GEOMETRY_MIN}
    failed = [f"{k} {values[k]:.3f} < {t}" for k, t in GEOMETRY_MIN.items() if values[k] < t - _EPS]
    if failed:
        return False, values, "; ".join(failed)
    return True, values, " and ".join(f"{k} ≥ {t}" for k, t in GEOMETRY_MIN.items())


def _paper_geometry():
    rows = load_paper_table("A1").rows
    return {k: f"{min(r.values[k] for r in rows):.2f}–{max(r.values[k] for r in rows):.2f}" for k in GEOMETRY_MIN}


def _check_cross_domain(m):
    transfer = _section(m, "transfer")
    if not isinstance(transfer, Mapping):
        raise TypeError("measurements['transfer'] must be a dict {train benchmark: {objective: {test: rows}}}")
    ours, failures, directions = {}, [], 0
    for train, methods in transfer.items():
        if not isinstance(methods, Mapping) or METHOD not in methods:
            continue
        for test, rows in methods[METHOD].items():
            if test == train:
                continue
            where = f"transfer[{train!r}]"
            ours_value = _last(rows, f"{where}['hn+tok'][{test!r}]")
            zero = _metric(_entry(rows, "zero_shot", where), "mean_r1", f"{where} zero-shot")
            baselines = {b: _last(methods[b][test], f"{where}[{b!r}][{test!r}]") for b in BASELINE_OBJECTIVES
                         if isinstance(methods.get(b), Mapping) and test in methods[b]}
            if not baselines:
                continue
            directions += 1
            strongest = max(baselines, key=baselines.get)
            ours[f"{train}→{test}: hn+tok / {strongest} / zero-shot avg R@1"] = [ours_value, baselines[strongest],
                                                                                  zero]
            if not (_gt(ours_value, baselines[strongest]) and _gt(ours_value, zero)):
                failures.append(f"{train}→{test}")
    if not directions:
        raise NotMeasured("transfer has no cross-domain evaluation of hn+tok beside a baseline")
    if failures:
        return False, ours, f"hn+tok is not ahead of the strongest baseline and zero-shot on {', '.join(failures)}"
    return True, ours, f"hn+tok leads the strongest baseline and zero-shot in all {directions} cross-domain " \
                       "direction(s)"


def _paper_cross_domain():
    out = {}
    for train, test in (("DCI", "DOCCI"), ("DOCCI", "DCI")):
        setting = f"trained on {train}"
        baselines = {b: _paper_mean_r1("A10", b, test, setting) for b in ("FineLIP", "GOAL", "StructXLIP")}
        strongest = max(baselines, key=baselines.get)
        out[f"{train}→{test}: HN-CLIP / {strongest} / zero-shot avg R@1"] = [
            _paper_mean_r1("A10", "HN-CLIP", test, setting), baselines[strongest],
            _paper_mean_r1("A10", "Long-CLIP", test, f"labelled 'trained on {train}'")]
    return out


def _check_temperature(m):
    grid = {s: _by_number(by_gamma, f"temperature[{_g(s)!r}]")
            for s, by_gamma in _by_number(_section(m, "temperature"), "measurements['temperature']").items()}
    low, high = PLATEAU_PRODUCTS
    ours, failures, tested = {}, [], 0
    for s, by_gamma in sorted(grid.items()):
        if 0.0 not in by_gamma:
            continue
        base = _last(by_gamma[0.0], f"temperature[{_g(s)!r}]['0']")
        for g, result in sorted(by_gamma.items()):
            if g > 0 and low - _EPS <= s * g <= high + _EPS:
                value = _last(result, f"temperature[{_g(s)!r}][{_g(g)!r}]")
                tested += 1
                ours[f"s={_g(s)} γ={_g(g)} (s·γ {_g(s * g)}) − γ=0"] = value - base
                if not _gt(value, base):
                    failures.append(f"s={_g(s)}, γ={_g(g)}")
    if not tested:
        raise NotMeasured(f"temperature has no s with γ = 0 and a γ > 0 whose s·γ lies in [{low:g}, {high:g}]")
    if failures:
        return False, ours, f"not above γ = 0 at the same s: {', '.join(failures)}"
    return True, ours, f"all {tested} (s, γ) with s·γ in [{low:g}, {high:g}] beat γ = 0 at their s"


def _paper_temperature():
    return {"in-domain γ plateau at s ≈ 100 (Table 3a)": "γ ∈ [0.25, 1], i.e. s·γ ∈ [25, 100]",
            "App. B.2": "the boost enters as s·γ·Ḡ, so the plateau covers a corresponding range of s"}


#: Framework names of the project (hnclip_core.frameworks) → their row labels in Table 2.
PAPER_FRAMEWORKS = {"longclip": "Long-CLIP", "finelip": "FineLIP", "goal": "GOAL", "structxlip": "StructXLIP",
                    "lora": "LoRA", "dora": "DoRA"}


def _check_plug_and_play(m):
    section = _section(m, "plug_and_play")
    ours, worse = {}, []
    for framework, runs in section.items():
        if not (isinstance(runs, Mapping) and runs.get("clip") is not None and runs.get("hn") is not None):
            continue
        base = _last(runs["clip"], f"plug_and_play[{framework!r}]['clip']")
        boosted = _last(runs["hn"], f"plug_and_play[{framework!r}]['hn']")
        ours[f"{framework} Δ avg R@1"] = boosted - base
        if not _gt(boosted, base):
            worse.append(framework)
    if len(ours) < 2:
        raise NotMeasured("plug_and_play needs at least two frameworks with both a clip and an hn run")
    if worse:
        return False, ours, f"L_HN does not beat InfoNCE inside {', '.join(worse)}"
    return True, ours, f"L_HN beats InfoNCE inside all {len(ours)} frameworks"


def paper_plug_and_play_deltas(benchmark: str = "DOCCI") -> dict[str, float]:
    """Table 2: per framework (the project's names), the paper's gain in average R@1 from L_HN on ``benchmark``."""
    out = {}
    for name, label in PAPER_FRAMEWORKS.items():
        band = "parameter-efficient" if name in ("lora", "dora") else "full-parameter"
        out[name] = (_paper_mean_r1("2", f"{label} + L_HN", benchmark, band)
                     - _paper_mean_r1("2", label, benchmark, band))
    return out


def _paper_plug_and_play():
    return {f"{name} Δ avg R@1 (DOCCI)": delta for name, delta in paper_plug_and_play_deltas().items()}


#: Table A3 (DCI, one Ascend 910B, effective batch 128): training img/s per framework and global term (``hn`` of
#: Long-CLIP is HN-CLIP, L_HN + L_tok; wall-clock 16, 17, ≈ 41 and ≈ 92 min; FineLIP's was not attributable).
PAPER_THROUGHPUT = {"longclip": {"clip": 55.5, "hn": 53.0}, "goal": {"clip": 22.0}, "structxlip": {"clip": 10.0}}


def _check_efficiency(m):
    section = _section(m, "throughput")
    try:
        ours_speed = float(section["longclip"]["hn"]["img_per_s"])
    except (KeyError, TypeError):
        raise NotMeasured("throughput needs longclip with objective hn") from None
    compared = [f for f in ("goal", "structxlip") if isinstance(section.get(f), Mapping) and "clip" in section[f]]
    if not compared:
        raise NotMeasured("throughput needs goal or structxlip with objective clip")
    ratios = {f: ours_speed / float(section[f]["clip"]["img_per_s"]) for f in compared}
    ours = {f"{f} time / HN-CLIP time": ratio for f, ratio in ratios.items()}
    slower = [f for f, ratio in ratios.items() if not ratio > 1]
    if slower:
        return False, ours, f"L_HN fine-tuning is not faster than {', '.join(slower)}"
    return True, ours, f"L_HN fine-tuning is faster than {' and '.join(compared)}"


def _paper_efficiency():
    return {f"{name} time / HN-CLIP time": PAPER_THROUGHPUT["longclip"]["hn"] / PAPER_THROUGHPUT[name]["clip"]
            for name in ("goal", "structxlip")}


CLAIMS: tuple[Claim, ...] = (
    Claim("geometry", "Dense-caption benchmarks are crowded with near-duplicate captions.", "Table A1, Fig. 1",
          f"geometry: mean pairwise caption cosine ≥ {GEOMETRY_MIN['mean_pairwise']} and mean hardest-companion "
          f"cosine ≥ {GEOMETRY_MIN['mean_hardest']} under the initial text encoder (the paper's smallest benchmark "
          "values less 0.04 / 0.02)",
          ("geometry",), _check_geometry, _paper_geometry),
    Claim("infonce_saturates", "InfoNCE saturates early: most first-epoch batches are already 'solved'.",
          "Fig. 4, §2.4",
          f"diagnostics: in the first trained epoch, L_CLIP < 1e-3 on ≥ {100 * SATURATION_THRESHOLD:.0f} % of the "
          "measured batches",
          ("diagnostics",), _check_saturation, _paper_saturation),
    Claim("exact_zero_gradients", "InfoNCE's gradient is often exactly zero in fp32.", "Fig. 4, §2.4",
          "diagnostics: the share of all measurements with ‖∇L_CLIP‖ exactly 0 (epochs weighted by their measurement "
          "counts) is above 0",
          ("diagnostics",), _check_zero_grad, _paper_zero_grad),
    Claim("hn_stays_active", "The boosted loss keeps working in every epoch.", "Fig. 4, §2.4",
          f"diagnostics: in every epoch, L_HN ≥ 1e-3 on ≥ {100 * ACTIVE_THRESHOLD:.0f} % of measured batches "
          "(the paper's floor is higher; 20 % is the project's calibration threshold)",
          ("diagnostics",), _check_active, _paper_active),
    Claim("gradient_ratio", "Where InfoNCE's gradient is non-zero, the boosted one is orders of magnitude larger.",
          "Fig. 4, §2.4",
          f"diagnostics: per-epoch median ‖∇L_HN‖/‖∇L_CLIP‖ over measurements with ∇L_CLIP ≠ 0 is ≥ "
          f"{GRAD_RATIO_THRESHOLD:g} (the low end of the paper's range) in every epoch that has one",
          ("diagnostics",), _check_grad_ratio, _paper_grad_ratio),
    Claim("gradient_aligned", "The boosted gradient stays positively aligned with the standard one.",
          "Fig. 4, §2.4; App. C, Fig. A8",
          "diagnostics: per-epoch mean cosine between ∇L_HN and ∇L_CLIP is > 0 in every epoch that has one "
          "(epochs where a gradient is exactly zero have none)",
          ("diagnostics",), _check_cosine, _paper_cosine),
    Claim("beats_infonce", "HN-CLIP beats plain InfoNCE fine-tuning.", "Table 1, Table A5, Table 3b",
          "fine_tuning: last-epoch average R@1 of hn+tok > that of clip (same data, schedule and seed)",
          ("fine_tuning",), _check_beats_infonce, _paper_beats_infonce),
    Claim("beats_zero_shot", "HN-CLIP beats the pre-trained model it starts from.", "Table 1",
          "fine_tuning: last-epoch average R@1 of hn+tok > its epoch-0 (zero-shot) average R@1",
          ("fine_tuning",), _check_beats_zero_shot, _paper_beats_zero_shot),
    Claim("leads_from_first_epoch", "HN-CLIP leads from the first epoch on.", "Fig. 5, Fig. A9, App. E.6",
          "fine_tuning: at every epoch ≥ 1 of both histories, average R@1 of hn+tok > that of clip at the same epoch",
          ("fine_tuning",), _check_leads_every_epoch, _paper_leads_every_epoch),
    Claim("first_epoch_matches_final", "HN-CLIP's first epoch matches the baselines' final accuracy.", "Fig. 5, §3.2",
          "fine_tuning: average R@1 of hn+tok after epoch 1 ≥ last-epoch average R@1 of clip",
          ("fine_tuning",), _check_first_epoch, _paper_first_epoch),
    Claim("gamma_beats_zero", "Every boost strength γ ∈ [0.25, 1] beats γ = 0 in-domain.", "Table 3a, Table A6",
          "gamma: for every measured γ in [0.25, 1], last-epoch T→I R@1 and I→T R@1 both > those of γ = 0 "
          "(L_tok on in all runs)",
          ("gamma",), _check_gamma, _paper_gamma),
    Claim("components", "L_HN carries the gain; L_tok adds to it only once the boost is on.", "Table 3b, Table A5",
          f"components, last-epoch average R@1: hn > clip, hn > tok, and hn+tok ≥ best of the four − "
          f"{COMPONENT_TOLERANCE}",
          ("components",), _check_components, _paper_components),
    Claim("recomputed_beats_frozen", "Ḡ recomputed from the live encoder beats Ḡ frozen at initialisation.",
          "Table 3c, Table A2",
          "margin_source: last-epoch average R@1 recomputed > frozen (best epochs reported, not judged)",
          ("margin_source",), _check_margin_source, _paper_margin_source),
    Claim("milder_gamma_transfers", "Under domain shift, milder boosts generalise better.", "Table 3a (Urban-1K)",
          "gamma_transfer (a γ sweep evaluated on another benchmark): over the measured γ in [0.25, 1] (≥ 2), "
          "last-epoch average R@1 never rises with γ and the mildest γ beats the strongest",
          ("gamma_transfer",), _check_transfer, _paper_transfer),
    Claim("data_efficiency", "HN-CLIP on 20 % of the data beats the strongest baseline on all of it.",
          "Fig. 6, Table A9",
          "fractions: last-epoch average R@1 of hn+tok at fraction 0.2 > the largest of clip/tok at fraction 1",
          ("fractions",), _check_fractions, _paper_fractions),
    Claim("seed_spread", "Results are stable across seeds.", "Table A8",
          f"seeds: over ≥ 2 seeds of hn+tok, max − min of last-epoch T→I R@1 and of I→T R@1 are both ≤ "
          f"{SEED_SPREAD_MAX} points",
          ("seeds",), _check_seeds, _paper_seeds),
    Claim("cross_domain", "Trained on one benchmark, HN-CLIP stays ahead on another.", "Table A10, Table A7, §3.4",
          "transfer: for every cross-domain (train ≠ test) evaluation, last-epoch average R@1 of hn+tok > that of "
          "the strongest baseline (clip/tok) trained on the same benchmark, and > the zero-shot backbone",
          ("transfer",), _check_cross_domain, _paper_cross_domain),
    Claim("temperature_plateau", "The γ plateau covers a corresponding range of temperatures (s and γ act through "
          "s·γ).", "§3.5, App. B.2",
          f"temperature (s fixed): for every s with a γ = 0 run, every γ > 0 with s·γ in "
          f"[{PLATEAU_PRODUCTS[0]:g}, {PLATEAU_PRODUCTS[1]:g}] has last-epoch average R@1 > γ = 0 at that s",
          ("temperature",), _check_temperature, _paper_temperature),
    Claim("plug_and_play", "L_HN improves every fine-tuning framework it replaces the global term of.",
          "Table 2, Table A4, App. D.2",
          "plug_and_play: for every framework with both runs (≥ 2 frameworks), last-epoch average R@1 with L_HN "
          "(objective hn) > with InfoNCE (objective clip)",
          ("plug_and_play",), _check_plug_and_play, _paper_plug_and_play),
    Claim("efficiency", "L_HN fine-tuning trains faster than the frameworks that add auxiliary inputs (GOAL, "
          "StructXLIP).", "Table A3",
          "throughput: img/s of longclip with objective hn > img/s of goal and of structxlip with their own "
          "InfoNCE recipe (objective clip), measured interleaved on one machine",
          ("throughput",), _check_efficiency, _paper_efficiency),
)


def build_scorecard(measurements: Mapping, claims: Sequence[Claim] = CLAIMS) -> list[ClaimResult]:
    """Every claim evaluated on ``measurements`` (format: the module docstring)."""
    return [claim.evaluate(measurements) for claim in claims]


def _numbers(numbers: dict) -> str:
    return "; ".join(f"{k} {_f(v)}" for k, v in numbers.items()) or "–"


def scorecard_table(results: Sequence[ClaimResult]) -> str:
    """Markdown: claim, paper reference, the paper's numbers, ours, verdict and why."""
    verdicts = {"reproduced": "reproduced", "not reproduced": "**not reproduced**", "not measured": "not measured"}
    rows = []
    for r in results:
        ours = _numbers(r.ours) + (f" ({r.source})" if r.source and r.ours else "")
        rows.append([r.text, r.reference, _numbers(r.paper), ours, verdicts[r.status], r.explanation])
    return markdown_table(["claim", "paper", "paper's numbers", "ours", "verdict", "why"],
                          [[str(c).replace("|", "∣") for c in row] for row in rows])


def claims_table(claims: Sequence[Claim] = CLAIMS) -> str:
    """Markdown: each claim, where the paper makes it, and the exact test applied to our numbers."""
    return markdown_table(["id", "claim", "paper", "test"],
                          [[c.id, c.text, c.paper_reference, c.operationalisation.replace("|", "∣")] for c in claims])


# ---------------------------------------------------------------------------------------------------------
# Assembling measurements from a tutorial run
# ---------------------------------------------------------------------------------------------------------


def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from exc


def _require(data, keys: Sequence[str], path: Path):
    node = data
    for key in keys:
        if not isinstance(node, Mapping) or key not in node:
            raise ValueError(f"{path}: expected key {'/'.join(keys)}; this is not the file a chapter notebook writes")
        node = node[key]
    return node


def measurements_from_outputs(
    output_dir: str | Path | None,
    calibration: str | Path | bool | None = None,
    transfer_dir: str | Path | None = None,
    ablations: str | Path | bool | None = None,
    throughput: str | Path | bool | None = None,
) -> dict:
    """The measurements dict from a tutorial run's results files (missing files leave sections out).

    ``output_dir`` holds ``geometry.json``, ``saturation.json``, ``fine_tuning.json`` and ``ablations.json``
    (what chapters 1–4 write; chapter 4's reduced studies included). ``calibration`` adds ``seeds`` from a
    calibration file (``True``: the committed
    ``results/calibration.json``). ``transfer_dir`` is the output folder of a second run of chapter 4 evaluated
    on another benchmark (``eval_dataset``): its γ sweep becomes ``gamma_transfer``. ``ablations`` is the
    collected full ablation grids (``True``: the committed ``results/ablations.json``); its sections replace
    the tutorial-scale ones. ``throughput`` is ``benchmarks/framework_throughput.py --json``'s file (``True``: the
    committed ``results/framework_throughput.json``). ``sources`` records which file each section came from.
    """
    measurements: dict = {}
    sources: dict[str, str] = {}
    if output_dir is not None:
        folder = Path(output_dir)
        path = folder / "geometry.json"
        if path.is_file():
            measurements["geometry"] = _require(_read_json(path), ["geometry"], path)
            sources["geometry"] = path.name
        path = folder / "saturation.json"
        if path.is_file():
            measurements["diagnostics"] = _require(_read_json(path), ["dynamics", "diagnostics"], path)
            sources["diagnostics"] = path.name
        path = folder / "fine_tuning.json"
        if path.is_file():
            measurements["fine_tuning"] = _require(_read_json(path), ["runs"], path)
            sources["fine_tuning"] = path.name
        path = folder / "ablations.json"
        if path.is_file():
            data = _read_json(path)
            for section in ("gamma", "components", "margin_source"):
                measurements[section] = _require(data, [section], path)
                sources[section] = path.name
            for section in ("fractions", "seeds", "transfer", "temperature"):  # chapter 4's reduced studies
                if data.get(section):
                    measurements[section] = data[section]
                    sources[section] = path.name
    if calibration:
        path = CALIBRATION_FILE if calibration is True else Path(calibration)
        runs = _require(_read_json(path), ["runs"], path)
        measurements["seeds"] = {str(run["seed"]): {k: v for k, v in run.items() if k != "seed"} for run in runs}
        sources["seeds"] = path.name
    if transfer_dir is not None:
        path = Path(transfer_dir) / "ablations.json"
        measurements["gamma_transfer"] = _require(_read_json(path), ["gamma"], path)
        sources["gamma_transfer"] = f"{path.name} (transfer run)"
    if ablations:
        path = ABLATIONS_FILE if ablations is True else Path(ablations)
        data = _read_json(path)
        if not isinstance(data, Mapping) or "studies" not in data:
            raise ValueError(f"{path}: expected the file `python -m hnclip_core.replication.ablations` writes")
        for section in ABLATION_SECTIONS:
            if data.get(section):
                measurements[section] = data[section]
                sources[section] = f"{path.name} (full grid)"
    if throughput:
        path = THROUGHPUT_FILE if throughput is True else Path(throughput)
        measurements["throughput"] = _require(_read_json(path), ["frameworks"], path)
        sources["throughput"] = path.name
    measurements["sources"] = sources
    return measurements
