"""Everything the project measured, as one tidy table: a row per run and epoch, with the run's parameters and metrics.

The scorecard (:mod:`hnclip_core.replication.scorecard`) judges every claim by a query on this table, so its rows
are the single form our numbers take. :func:`read_results` builds it from what the project writes:

=============================  ==============  ========================================================================
file                           ``study``       rows
=============================  ==============  ========================================================================
``geometry.json`` (ch. 1)      ``geometry``    epoch 0 of the initial text encoder: ``mean_pairwise``, ``mean_hardest``
``saturation.json`` (ch. 2)    ``dynamics``    one per epoch of the gradient-dynamics run: the monitor's summary
``fine_tuning.json`` (ch. 3)   ``fine_tuning`` one per epoch (0 = zero-shot) of each objective's run
``ablations.json`` (ch. 4 or   its study       one per epoch of every run of every study; ``transfer`` and the γ sweep's
``make ablations``)                            transfer benchmark add rows with another ``eval_dataset``
``calibration.json``           ``calibration`` every seed × objective run, with its monitor's summary, and one row
                                               (``objective`` None) for the initial model's geometry and regime
``framework_throughput.json``  ``throughput``  one per framework × global term: ``img_per_s``, slowest/fastest round
=============================  ==============  ========================================================================

Parameter columns (:data:`PARAMETERS`, None where a file does not say): ``source`` (the file), ``study``, ``run``
(one trained model), ``objective`` (named by its γ and λ where the run's config records them,
:data:`hnclip_core.replication.objectives.OBJECTIVES`), ``gamma``, ``token_weight``, ``margin_source``, ``seed``,
``train_fraction``, ``framework``, ``dataset`` (trained on), ``eval_dataset`` (evaluated on), ``logit_scale``
(a fixed s; None: learned) and ``epoch``. Every other key is a metric: the training history's (``t2i_r1`` …
``mean_r1``, ``caption_mean_similarity``, ``train_loss``, ``s`` — the history's learned logit scale), the gradient
monitor's (:meth:`hnclip_core.diagnostics.GradientMonitor.summary`), and the geometry, regime and throughput
numbers above. A study of the full ablation grids replaces chapter 4's study of the same name.
"""

from __future__ import annotations

import json
import logging
import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from ..train import IDENTITY_ROLES, config_fields
from .objectives import objective_name, objective_parameters

__all__ = ["PARAMETERS", "STUDY_KEYS", "NotMeasured", "Table", "read_results", "stale_studies"]

log = logging.getLogger(__name__)

#: The run's TrainConfig fields that shape what it learns beyond the columns above (the gradient monitor's fields
#: measure without changing a run: tests/test_train.py checks it).
_RECIPE_PARAMETERS = tuple(name for name in config_fields("training") if not name.startswith("monitor_"))
PARAMETERS = tuple(dict.fromkeys((
    "source", "study", "run", "objective", "gamma", "token_weight", "margin_source", "seed", "train_fraction",
    "framework", "dataset", "eval_dataset", "logit_scale", *_RECIPE_PARAMETERS, "epoch")))
#: The parameters that are a run's TrainConfig fields, read from its recorded config (the others are labels of the
#: files and the harness: the objective's name, the framework).
_CONFIG_PARAMETERS = tuple(name for name in PARAMETERS if name in config_fields(*IDENTITY_ROLES))


class NotMeasured(LookupError):
    """A query found none of the rows a claim needs."""


def _same(a, b) -> bool:
    if isinstance(a, int | float) and isinstance(b, int | float) and not isinstance(a, bool):
        return math.isclose(a, b, abs_tol=1e-9)
    return a == b


def _matches(value, condition) -> bool:
    if callable(condition):
        return value is not None and bool(condition(value))
    if isinstance(condition, tuple | list | set | frozenset):
        return any(_same(value, c) for c in condition)
    return _same(value, condition)


def _number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True)
class Table:
    """Rows (dicts: :data:`PARAMETERS` and metrics) and the few queries the claims are written in."""

    rows: tuple[dict, ...] = ()

    def __iter__(self) -> Iterator[dict]:
        return iter(self.rows)

    def __len__(self) -> int:
        return len(self.rows)

    def where(self, **conditions) -> Table:
        """Rows whose columns equal the given values (numbers within 1e-9); a tuple or set means "one of", a
        callable is a test of a present value, e.g. ``where(study="gamma", gamma=lambda g: 0.25 <= g <= 1)``."""
        return Table(tuple(r for r in self.rows if all(_matches(r.get(k), c) for k, c in conditions.items())))

    def having(self, *metrics: str) -> Table:
        """Rows with a finite number for every one of ``metrics``."""
        return Table(tuple(r for r in self.rows if all(_number(r.get(m)) for m in metrics)))

    def last(self) -> Table:
        """Each run's last epoch (per benchmark it was evaluated on): what every claim judges."""
        final: dict = {}
        for r in self.rows:
            key = (r["source"], r["run"], r["eval_dataset"])
            final[key] = max(final.get(key, r["epoch"] or 0), r["epoch"] or 0)
        return Table(tuple(r for r in self.rows
                           if (r["epoch"] or 0) == final[(r["source"], r["run"], r["eval_dataset"])]))

    def column(self, name: str) -> list:
        """The distinct values of a column, in row order."""
        return list(dict.fromkeys(r.get(name) for r in self.rows))

    def values(self, metric: str, *by: str) -> dict:
        """``{value of the by-columns (a tuple if several): metric}``; raises if two rows share a key."""
        out, runs = {}, {}
        for r in self.having(metric):
            key = tuple(r[c] for c in by) if len(by) != 1 else r[by[0]]
            if key in out:
                raise ValueError(f"runs {runs[key]!r} and {r['run']!r} both have {by} = {key!r}")
            out[key], runs[key] = r[metric], r["run"]
        return out

    def one(self, metric: str) -> float:
        """The metric of the one row that has it."""
        found = self.having(metric).rows
        if len(found) != 1:
            raise (NotMeasured if not found else ValueError)(f"{len(found)} rows have {metric!r}, one expected")
        return found[0][metric]

    def require(self, what: str) -> Table:
        """This table, or :class:`NotMeasured` saying ``what`` is missing when it is empty."""
        if not self.rows:
            raise NotMeasured(what)
        return self


# ---------------------------------------------------------------------------------------------------------
# Building the table from the results files
# ---------------------------------------------------------------------------------------------------------


def _read(path: Path):
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not valid JSON ({exc})") from exc


def _require(data, keys: Sequence[str], path: Path):
    node = data
    for key in keys:
        if not isinstance(node, Mapping) or key not in node:
            raise ValueError(f"{path}: expected key {'/'.join(keys)}; this is not the file a chapter, make "
                             "ablations, calibrate or benchmarks/framework_throughput.py writes")
        node = node[key]
    return node


def _metrics(entry: Mapping) -> dict:
    """The numbers of a history row, monitor summary or measurement dict (the history's logit scale as ``s``)."""
    return {("s" if k == "logit_scale" else k): v for k, v in entry.items()
            if k != "epoch" and isinstance(v, int | float) and not isinstance(v, bool)}


def _parameters(config: Mapping | None, **fixed) -> dict:
    """A run's parameter columns: its training config where recorded (γ and λ as the objective sets them, for
    configs that still name an objective), then ``fixed`` (what the file's keys say) on top."""
    p = dict.fromkeys(PARAMETERS)
    if config:
        gamma, weight = config.get("gamma"), config.get("token_weight")
        if config.get("objective") is not None and gamma is not None and weight is not None:
            gamma, weight = objective_parameters(config["objective"], gamma, weight).values()
        p.update({name: config.get(name) for name in _CONFIG_PARAMETERS})
        p.update(gamma=gamma, token_weight=weight, framework=config.get("framework", "longclip"),
                 eval_dataset=config.get("eval_dataset") or config.get("dataset"), objective=config.get("objective"))
    p.update(fixed)
    if p["gamma"] is not None and p["token_weight"] is not None:
        p["objective"] = objective_name(p["gamma"] > 0, p["token_weight"] > 0)
    return p


def _run_rows(result: Mapping, parameters: Mapping, last_epoch: int | None = None) -> list[dict]:
    """A run's rows: its history (or its zero-shot and last rows, the last at ``last_epoch`` unless it says) with
    the monitor's summary of each epoch merged in."""
    if result.get("history"):
        entries = [(entry["epoch"], entry) for entry in result["history"]]
    else:
        entries = [(0, result["zero_shot"])] if "zero_shot" in result else []
        if "last" in result:
            entries.append((result["last"].get("epoch", last_epoch), result["last"]))
    monitor = {d["epoch"]: _metrics(d) for d in result.get("diagnostics", ())}
    rows = [{**parameters, "epoch": epoch, **_metrics(entry), **monitor.pop(epoch, {})} for epoch, entry in entries]
    return rows + [{**parameters, "epoch": epoch, **metrics} for epoch, metrics in monitor.items()]


#: The parameters that the keys of each study's section name, level by level (the nesting of
#: :func:`hnclip_core.replication.ablations.collect`); they override the runs' configs.
STUDY_KEYS = {"gamma": ("gamma",), "components": ("objective",), "margin_source": ("margin_source",),
              "fractions": ("train_fraction", "objective"), "seeds": ("seed", "objective"),
              "temperature": ("logit_scale", "gamma"), "plug_and_play": ("framework", "objective"),
              "transfer": ("dataset", "objective", "eval_dataset")}


def _key(parameter: str, key: str):
    return int(key) if parameter == "seed" else float(key) if parameter in ("gamma", "train_fraction",
                                                                            "logit_scale") else key


def _study_rows(study: str, section: Mapping, source: str) -> list[dict]:
    """One study of an ``ablations.json`` (chapter 4's or the full grids'), read by :data:`STUDY_KEYS`. A run of the
    transfer study evaluated on another benchmark has its zero-shot and last rows only, the last at the epoch of its
    in-domain evaluation."""
    if study not in STUDY_KEYS:
        raise ValueError(f"{source}: unknown study {study!r} (studies: {', '.join(STUDY_KEYS)})")
    names = STUDY_KEYS[study]
    leaves = [((), section)]
    for _ in names:
        leaves = [(keys + (key,), value) for keys, node in leaves for key, value in node.items()]
    rows = []
    for keys, result in leaves:
        fixed = {name: _key(name, key) for name, key in zip(names, keys, strict=True)}
        last = section[keys[0]][keys[1]].get(keys[0], {}).get("last", {}).get("epoch") if study == "transfer" else None
        run = f"{source}:{study}/{'/'.join(keys[:2] if study == 'transfer' else keys)}"
        rows += _run_rows(result, _parameters(result.get("config"), source=source, study=study, run=run, **fixed), last)
    return rows


def _transfer_evaluations(data: Mapping, source: str) -> list[dict]:
    """The γ sweep's runs evaluated on its transfer benchmark (``gamma_transfer``): rows of those same runs."""
    benchmark = data["studies"]["gamma"].get("transfer_dataset")
    rows = []
    for key, evaluations in data["gamma_transfer"].items():
        run = data["gamma"][key]
        parameters = _parameters(run.get("config"), source=source, study="gamma", run=f"{source}:gamma/{key}",
                                 gamma=_key("gamma", key), eval_dataset=evaluations["last"].get("dataset", benchmark))
        rows += _run_rows(evaluations, parameters, run["last"]["epoch"])
    return rows


def _ablation_rows(data: Mapping, source: str) -> list[dict]:
    rows = []
    for study, section in data.items():
        if study in ("studies", "scale", "last_invocation", "gamma_transfer") or not section:
            continue
        rows += _study_rows(study, section, source)
    if data.get("gamma_transfer"):
        rows += _transfer_evaluations(data, source)
    return rows


def _calibration_rows(data: Mapping, source: str) -> list[dict]:
    config = data.get("base_config", {})
    initial = {**_metrics(data.get("zero_shot_regime", {})), **_metrics(data.get("geometry", {}))}
    dataset = config.get("dataset")
    rows = [{**_parameters(None, source=source, study="calibration", run=f"{source}:initial model", dataset=dataset,
                           eval_dataset=config.get("eval_dataset") or dataset), "epoch": 0, **initial}]
    for entry in data["runs"]:
        for objective, result in entry.items():
            if objective != "seed":
                rows += _run_rows(result, _parameters({**config, "objective": objective, "seed": entry["seed"]},
                                                      source=source, study="calibration",
                                                      run=f"{source}:seed {entry['seed']}/{objective}"))
    return rows


def _throughput_rows(data: Mapping, source: str) -> list[dict]:
    images = data.get("batch", 0) * data.get("steps", 0)
    rows = []
    for framework, by_objective in data["frameworks"].items():
        for objective, timing in by_objective.items():
            rounds = timing.get("seconds") or []
            per_round = {"img_per_s_slowest": images / max(rounds), "img_per_s_fastest": images / min(rounds)} \
                if rounds and images else {}
            rows.append({**_parameters(None, source=source, study="throughput", run=f"{source}:{framework}/{objective}",
                                       objective=objective, framework=framework),
                         **_metrics(timing), **per_round})
    return rows


def _geometry_rows(data: Mapping, path: Path) -> list[dict]:
    geometry = _require(data, ["geometry"], path)
    return [{**_parameters(None, source=path.name, study="geometry", run=path.name, dataset=data.get("dataset"),
                           eval_dataset=data.get("dataset")), "epoch": 0, **_metrics(geometry)}]


def _dynamics_rows(data: Mapping, path: Path) -> list[dict]:
    diagnostics = _require(data, ["dynamics", "diagnostics"], path)
    return _run_rows({"diagnostics": diagnostics}, _parameters(None, source=path.name, study="dynamics", run=path.name,
                                                               objective=data["dynamics"].get("objective")))


def _fine_tuning_rows(data: Mapping, path: Path) -> list[dict]:
    recorded = data.get("parameters", {})
    return [row for objective, result in _require(data, ["runs"], path).items()
            for row in _run_rows(result, _parameters(
                None, source=path.name, study="fine_tuning", run=f"{path.name}/{objective}", objective=objective,
                seed=recorded.get("seed"), dataset=recorded.get("dataset"), eval_dataset=recorded.get("eval_dataset")))]


#: What chapters 1–4 write into their output folder, and how each file becomes rows.
_CHAPTER_FILES = {"geometry.json": _geometry_rows, "saturation.json": _dynamics_rows,
                  "fine_tuning.json": _fine_tuning_rows,
                  "ablations.json": lambda data, path: _ablation_rows(data, path.name)}


def stale_studies(ablations: Mapping, calibration: Mapping) -> list[str]:
    """The full-grid studies of ``ablations`` fine-tuned from another checkpoint than ``calibration``'s: results of a
    model that is no longer the one judged (e.g. the toy before a new one was shipped), which must not be read as its
    results. The scorecard leaves them out, so their claims are judged on chapter 4's runs or not measured."""
    judged = calibration.get("base_config", {}).get("checkpoint")
    return [study for study, record in ablations.get("studies", {}).items()
            if judged is not None and record.get("checkpoint") not in (None, judged)]


def read_results(
    output_dir: str | Path | None = None,
    *,
    calibration: str | Path | None = None,
    ablations: str | Path | None = None,
    throughput: str | Path | None = None,
    transfer_dir: str | Path | None = None,
) -> Table:
    """The tidy table of everything measured.

    ``output_dir`` holds what chapters 1–4 write (``geometry.json``, ``saturation.json``, ``fine_tuning.json``,
    ``ablations.json``; absent ones leave their rows out); ``calibration`` is ``python -m hnclip_core calibrate``'s
    file; ``ablations`` the collected full grids of ``make ablations``, whose studies replace chapter 4's;
    (full-grid studies of another model than the calibration's are left out: :func:`stale_studies`);
    ``throughput`` the JSON of ``benchmarks/framework_throughput.py --json``; ``transfer_dir`` the output folder of a
    second run of chapter 4 evaluated on another benchmark (its γ sweep gives rows with that ``eval_dataset``).
    """
    rows: list[dict] = []
    for name, reader in _CHAPTER_FILES.items():
        path = Path(output_dir or "") / name
        if output_dir is not None and path.is_file():
            rows += reader(_read(path), path)
    if transfer_dir is not None:
        path = Path(transfer_dir) / "ablations.json"
        rows += _study_rows("gamma", _require(_read(path), ["gamma"], path), f"{path.name} (transfer run)")
    if ablations is not None:
        path = Path(ablations)
        data = _read(path)
        _require(data, ["studies"], path)
        stale = stale_studies(data, _read(Path(calibration))) if calibration is not None else []
        if stale:
            log.warning("%s: left out %s, run on another model than %s's", path.name, ", ".join(stale),
                        Path(calibration).name)
        grids = _ablation_rows({k: v for k, v in data.items() if k not in stale
                                and not (k == "gamma_transfer" and "gamma" in stale)}, f"{path.name} (full grid)")
        replaced = {r["study"] for r in grids}
        rows = [r for r in rows if r["study"] not in replaced] + grids
    if calibration is not None:
        path = Path(calibration)
        data = _read(path)
        _require(data, ["runs"], path)
        rows += _calibration_rows(data, path.name)
    if throughput is not None:
        path = Path(throughput)
        data = _read(path)
        _require(data, ["frameworks"], path)
        rows += _throughput_rows(data, path.name)
    return Table(tuple(rows))
