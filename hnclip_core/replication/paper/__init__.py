"""The paper's numbers (arXiv 2608.18521v1), read from the JSON files beside this module — the only place they live.

One file per table (``table1.json`` … ``tableA11.json``) and ``text.json`` for the numbers the paper states only in
its prose and figure captions (Fig. 4, 5, A6, A8; App. B.2), all shipped with the package and all in the schema
``schema.json`` (``README.md`` explains it and how every number was checked against the paper's text).
:func:`table` reads and validates a file, :func:`value` and :func:`mean_r1` look numbers up, and the constants at
the end are the views the chapters print beside ours.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache
from importlib import resources
from pathlib import Path
from statistics import fmean

import jsonschema

__all__ = [
    "CAPTION_GEOMETRY", "DOCCI_RECALL", "FRAMEWORK_LABELS", "IN_BATCH_AT_LEAST_0_8", "SATURATION", "THROUGHPUT",
    "PaperRow", "PaperTable", "PaperTableError", "mean_r1", "paper_mean_r1", "plug_and_play_deltas", "table",
    "tables", "value",
]

_FILES = resources.files(__package__)


class PaperTableError(ValueError):
    """A paper file that does not follow ``schema.json``; the message names the file and the problem."""


@dataclass(frozen=True)
class PaperRow:
    """One row of a paper table: one method on one dataset (``README.md`` lists the optional keys)."""

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
    """A validated file: its citation, our paraphrase of its caption, its columns and rows."""

    name: str
    source: str
    caption: str
    columns: tuple[str, ...]
    rows: tuple[PaperRow, ...]
    notes: tuple[str, ...] = ()

    def find(self, method: str, dataset: str, setting: str | None = None) -> PaperRow:
        """The one row of ``method`` (its label or its ``objective``) on ``dataset`` [with ``setting``]."""
        hits = [r for r in self.rows if method in (r.method, r.objective) and r.dataset == dataset
                and (setting is None or r.setting == setting)]
        if len(hits) == 1:
            return hits[0]
        where = f"{self.name}: method {method!r}, dataset {dataset!r}" + (f", setting {setting!r}" if setting else "")
        if not hits:
            raise KeyError(f"{where}: no such row (methods: {sorted({r.method for r in self.rows})}; datasets: "
                           f"{sorted({r.dataset for r in self.rows})})")
        settings = sorted(str(r.setting) for r in hits)
        raise KeyError(f"{where}: {len(hits)} rows match; pass setting= (one of {settings})")


def _file_name(name: str) -> str:
    """``"1"``, ``"Table 3a"``, ``"A5"``, ``"tableA10"`` → ``table….json``; ``"text"`` → ``text.json``."""
    key = str(name).strip().replace(" ", "")
    if key.lower() == "text":
        return "text.json"
    if key.lower().startswith("table"):
        key = key[len("table"):]
    key = key[:1].upper() + key[1:].lower() if key[:1].isalpha() else key.lower()
    return f"table{key}.json"


def _not_finite(constant: str):
    raise ValueError(f"{constant} is not a finite number")


@cache
def _validator() -> jsonschema.Draft202012Validator:
    return jsonschema.Draft202012Validator(json.loads(_FILES.joinpath("schema.json").read_text(encoding="utf-8")))


def _parse(text: str, name: str, where: str) -> PaperTable:
    """Validate one file's JSON ``text`` against the schema, then the two rules a schema cannot state."""
    try:
        data = json.loads(text, parse_constant=_not_finite)
    except ValueError as exc:
        raise PaperTableError(f"{where}: not valid JSON ({exc})") from exc
    error = jsonschema.exceptions.best_match(_validator().iter_errors(data))
    if error is not None:
        raise PaperTableError(f"{where}{''.join(f'[{p!r}]' for p in error.absolute_path)}: {error.message}")
    seen = set()
    for i, row in enumerate(data["rows"]):
        stray = sorted(set(row["values"]) - set(data["columns"]))
        if stray or not set(row.get("approximate", ())) <= set(row["values"]):
            raise PaperTableError(f"{where}['rows'][{i}]: values {stray or row['approximate']} not in 'columns' "
                                  "(or 'approximate' names a key 'values' does not have)")
        identity = (row["method"], row["dataset"], row.get("setting"))
        if identity in seen:
            raise PaperTableError(f"{where}['rows'][{i}] repeats method/dataset/setting {identity}")
        seen.add(identity)
    rows = tuple(PaperRow(**{**row, "approximate": tuple(row.get("approximate", ()))}) for row in data["rows"])
    return PaperTable(name, data["source"], data["caption"], tuple(data["columns"]), rows,
                      tuple(data.get("notes", ())))


@cache
def _shipped(file_name: str) -> PaperTable:
    resource = _FILES.joinpath(file_name)
    if not resource.is_file():
        raise PaperTableError(f"{file_name}: no such paper file (shipped: {sorted(tables())})")
    return _parse(resource.read_text(encoding="utf-8"), file_name.removesuffix(".json"), file_name)


def table(name: str | Path) -> PaperTable:
    """One file, validated: a shipped table by name (``"1"``, ``"Table 3a"``, ``"A5"``, ``"text"``) or any path.

    Raises :class:`PaperTableError` naming the file and what is wrong with it.
    """
    if isinstance(name, Path):
        return _parse(name.read_text(encoding="utf-8"), name.stem, str(name))
    return _shipped(_file_name(name))


def tables() -> dict[str, PaperTable]:
    """Every shipped file, validated, by name (``table1``, ``table3a``, ``tableA5``, …, ``text``)."""
    names = sorted(f.name for f in _FILES.iterdir() if f.name.endswith(".json") and f.name != "schema.json")
    return {name.removesuffix(".json"): _shipped(name) for name in names}


def value(name: str | PaperTable, *, method: str, dataset: str, metric: str, setting: str | None = None) -> float:
    """One number, e.g. ``value("1", method="HN-CLIP", dataset="DOCCI", metric="t2i_r1")`` (88.25).

    ``method`` is a row label or the project objective the row corresponds to (``"hn+tok"``); ``setting``
    disambiguates rows such as γ or the training fraction (``setting="γ=0.25"``). Raises ``KeyError`` for a row or
    metric the table does not have, ``ValueError`` where the paper prints no number ("≈ 0", "—").
    """
    source = name if isinstance(name, PaperTable) else table(name)
    row = source.find(method, dataset, setting)
    if metric not in row.values:
        raise KeyError(f"{source.name}: row {row.method!r} on {dataset!r} has no {metric!r} (has {sorted(row.values)})")
    if row.values[metric] is None:
        raise ValueError(f"{source.name}: {row.method!r} on {dataset!r}, {metric}: the paper prints no number here"
                         + (f" ({row.note})" if row.note else ""))
    return row.values[metric]


def mean_r1(name: str, method: str, dataset: str, setting: str | None = None) -> float:
    """Average R@1 of a row: the mean of its Text→Image and Image→Text R@1."""
    return fmean(value(name, method=method, dataset=dataset, metric=m, setting=setting) for m in ("t2i_r1", "i2t_r1"))


# ---------------------------------------------------------------------------------------------------------
# The views the chapters print beside our numbers
# ---------------------------------------------------------------------------------------------------------

#: Mean pairwise / mean hardest-companion caption cosine under the pre-trained Long-CLIP-L text encoder, test splits
#: (Table A1; §2.1, Fig. A6A–B).
CAPTION_GEOMETRY = {row.dataset: {k: row.values[k] for k in ("mean_pairwise", "mean_hardest")}
                    for row in table("A1").rows}

#: Share of in-batch negatives with Ḡ ≥ 0.8 at an effective batch of 128, the range over the four benchmarks
#: (App. A.4, Fig. A6C).
IN_BATCH_AT_LEAST_0_8 = tuple(value("text", method="pre-trained Long-CLIP-L text encoder", dataset="4 benchmarks",
                                    setting="Fig. A6C", metric=f"in_batch_at_least_0_8_{end}")
                              for end in ("low", "high"))


def _text(setting: str, metric: str, dataset: str = "DOCCI") -> float:
    return value("text", method="Long-CLIP-L fine-tuning", dataset=dataset, setting=setting, metric=metric)


#: Gradient dynamics of a 10-epoch Long-CLIP-L fine-tuning run on DOCCI (Fig. 4, §2.4), and the median cosine
#: between the two gradients over the runs of App. C (Fig. A8).
SATURATION = {
    "solved_clip_first_epoch": _text("Fig. 4", "solved_clip_first_epoch"),  # L_CLIP < 1e-3 within epoch 1
    "grad_zero_clip": _text("Fig. 4", "grad_zero_clip"),  # share of measurements with an exactly-zero fp32 gradient
    "active_hn_min": _text("Fig. 4", "active_hn_min"),  # least share of batches with L_HN ≥ 1e-3, per epoch
    "grad_ratio_range": (_text("Fig. 4", "grad_ratio_low"), _text("Fig. 4", "grad_ratio_high")),  # per-epoch median
    "cosine_mean": _text("Fig. 4", "cosine_mean"),
    "cosine_std": _text("Fig. 4", "cosine_std"),
    "cosine_median": _text("Fig. A8", "cosine_median", "DOCCI and DCI"),
    "cosine_positive": _text("Fig. A8", "cosine_positive", "DOCCI and DCI"),  # share of measurements
    "measure_every": _text("Fig. 4", "measure_every"),
    "measurements": _text("Fig. 4", "measurements"),
}


def _recall(name: str, method: str) -> dict[str, tuple[float, ...]]:
    return {d: tuple(value(name, method=method, dataset="DOCCI", metric=f"{d}_r{k}") for k in (1, 5, 10))
            for d in ("t2i", "i2t")}


#: DOCCI Recall@1/5/10 per direction: the released Long-CLIP-L zero-shot (Table 1), Long-CLIP fine-tuned with InfoNCE
#: (Table A5, no L_tok, no L_HN) and HN-CLIP (Table 1).
DOCCI_RECALL = {"zero-shot": _recall("1", "Long-CLIP"), "clip": _recall("A5", "InfoNCE"),
                "hn+tok": _recall("1", "HN-CLIP")}


def paper_mean_r1(method: str) -> float:
    """Average of the two directions' R@1 for a row of :data:`DOCCI_RECALL`."""
    row = DOCCI_RECALL[method]
    return (row["t2i"][0] + row["i2t"][0]) / 2


#: Framework names of :mod:`hnclip_core.frameworks` → their row labels in Table 2.
FRAMEWORK_LABELS = {"longclip": "Long-CLIP", "finelip": "FineLIP", "goal": "GOAL", "structxlip": "StructXLIP",
                    "lora": "LoRA", "dora": "DoRA"}

#: Table A3 (DCI, one Ascend 910B, effective batch 128): training img/s per framework and global term; ``hn`` of
#: Long-CLIP is HN-CLIP (L_HN + L_tok). FineLIP's throughput was not attributable.
THROUGHPUT = {"longclip": {"clip": value("A3", method="Long-CLIP (plain FT)", dataset="DCI", metric="throughput_img_s"),
                           "hn": value("A3", method="HN-CLIP (ours)", dataset="DCI", metric="throughput_img_s")},
              **{name: {"clip": value("A3", method=FRAMEWORK_LABELS[name], dataset="DCI", metric="throughput_img_s")}
                 for name in ("goal", "structxlip")}}


def plug_and_play_deltas(benchmark: str = "DOCCI") -> dict[str, float]:
    """Table 2: per framework (the project's names), the gain in average R@1 from L_HN on ``benchmark``."""
    def band(name):
        return "parameter-efficient" if name in ("lora", "dora") else "full-parameter"

    return {name: mean_r1("2", f"{label} + L_HN", benchmark, band(name)) - mean_r1("2", label, benchmark, band(name))
            for name, label in FRAMEWORK_LABELS.items()}
