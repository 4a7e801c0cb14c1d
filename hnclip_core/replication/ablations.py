"""The paper's ablation studies, defined once: what each varies at full and at reduced scale.

:data:`STUDIES` is the one definition. Chapter 4 trains every study's points at ``scale="reduced"``
(``Study.points``); ``python -m hnclip_core.replication.ablations`` (``make ablations``) runs them at
``scale="full"`` as papermill grids over ``notebooks/ablation_run`` (:mod:`hnclip_core.replication.batch`, one
executed notebook and ``run.json`` per point), then :func:`collect` reads the points back by their parameters
into one section per study, keyed by the parameters it varies, and writes them, with each study's run time, to
``results/ablations.json``; chapter 5 draws its tables and figures from that file, and
:func:`hnclip_core.replication.tidy.read_results` turns it into the scorecard's tidy table.

=================  ==========================================  ==========================================
study              full scale (reduced: chapter 4)             paper
=================  ==========================================  ==========================================
``components``     InfoNCE, + L_tok, L_HN, HN-CLIP             Table 3b, Table A5; convergence Fig. 5, A9
``gamma``          γ ∈ {0, 0.25, 0.5, 0.75, 1} ({0, 0.5, 1})   Table 3a, Table A6 (+ transfer column)
``margin_source``  Ḡ recomputed / frozen                       Table 3c, Table A2, App. B.2
``seeds``          seeds 0, 1, 2 (0, 1) × InfoNCE, HN-CLIP     Table A8, Table A11
``transfer``       train on synthetic / synthetic-alt          Table A10, Table A7 (chapter 4: (f))
``fractions``      5/20/50/100 % (5/25 %) × InfoNCE, HN-CLIP   Fig. 6, Table A9
``temperature``    fixed s ∈ {25, 100} × γ ∈ {0, 0.25, 1}      App. B.2, §3.5
``plug_and_play``  6 frameworks × InfoNCE / L_HN               Table 2, Table A4, App. D.2 (full only)
=================  ==========================================  ==========================================
"""

from __future__ import annotations

import argparse
import contextlib
import itertools
import json
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields
from pathlib import Path

from ..files import file_sha256, write_text_atomically
from ..frameworks import FRAMEWORKS
from .batch import POINT_FILE, GridSpec, collect_json, load_summary, run_grid
from .experiment import Experiment
from .objectives import BASELINES, METHOD, OBJECTIVES
from .report import DIRECTIONS, markdown_table, recall_table

__all__ = [
    "CHAPTER_STUDIES", "SCALES", "STUDIES", "Study", "chapter_plan", "collect",
    "committed_grids_apply", "grid_spec", "section", "components_table",
    "fractions_table", "margin_source_table",
    "plug_and_play_table", "run_studies", "seeds_table", "slim", "strongest_baseline", "temperature_table",
    "throughput_table", "timing_table", "transfer_table", "write_results",
]

REPOSITORY = Path(__file__).resolve().parents[2]
RESULTS_FILE = REPOSITORY / "results" / "ablations.json"
#: Where ``make ablations`` runs each study (``<root>/<study>``) and the run cache the studies share (a
#: configuration that appears in two studies trains once).
RUNS_ROOT = Path("runs/ablations")
#: The training recipe of every point at each scale (a study's own values override it).
SCALES = {
    "full": {"epochs": 3, "train_fraction": 1.0, "warmup_steps": 10},
    "reduced": {"epochs": 2, "train_fraction": 0.25, "warmup_steps": 2},
}


@dataclass(frozen=True)
class Study:
    """One ablation of the paper: the parameters it varies at each scale (a grid: every combination is a
    point), those it fixes, and where the paper reports it. ``reduced=None``: not run in chapter 4."""

    name: str
    paper: str
    full: Mapping[str, tuple]
    reduced: Mapping[str, tuple] | None
    fixed: Mapping[str, object] = field(default_factory=dict)
    #: benchmarks every trained model is also evaluated on (``make ablations``; {name: data root or None})
    transfer: Mapping[str, str | None] = field(default_factory=dict)

    def grid(self, scale: str) -> dict[str, list]:
        if scale not in SCALES:
            raise ValueError(f"scale must be one of {list(SCALES)}, got {scale!r}")
        grid = self.full if scale == "full" else self.reduced
        if grid is None:
            raise ValueError(f"study {self.name!r} runs at full scale only (make ablations)")
        return {name: list(values) for name, values in grid.items()}

    def points(self, scale: str, grid: Mapping[str, Sequence] | None = None,
               recipe: Mapping[str, object] | None = None) -> list[dict]:
        """The run parameters of every point at ``scale``: the scale's recipe (``recipe`` overrides some of it),
        the fixed values, and the grid's (``grid`` replaces some of the scale's values, e.g. fewer γ)."""
        grid = {**self.grid(scale), **(grid or {})}
        unknown = sorted(set(grid) - set(self.full))
        if unknown:
            raise ValueError(f"study {self.name!r} varies {sorted(self.full)}, not {unknown}")
        base = {**SCALES[scale], **(recipe or {}), **self.fixed}
        return [{**base, **dict(zip(grid, values, strict=True))} for values in itertools.product(*grid.values())]


BOTH = ("clip", "hn+tok")
#: Every study, in the order ``make ablations`` runs them (cheap, often-shared configurations first).
STUDIES: dict[str, Study] = {study.name: study for study in (
    Study("components", "Table 3b, Table A5", {"objective": tuple(OBJECTIVES)}, {"objective": tuple(OBJECTIVES)}),
    Study("gamma", "Table 3a, Table A6", {"gamma": (0.0, 0.25, 0.5, 0.75, 1.0)}, {"gamma": (0.0, 0.5, 1.0)},
          fixed={"objective": "hn+tok"}, transfer={"synthetic-alt": None}),
    Study("margin_source", "Table 3c, Table A2", {"margin_source": ("recomputed", "frozen")},
          {"margin_source": ("recomputed", "frozen")}, fixed={"objective": "hn+tok"}),
    Study("seeds", "Table A8, Table A11", {"seed": (0, 1, 2), "objective": BOTH}, {"seed": (0, 1), "objective": BOTH}),
    Study("transfer", "Table A10", {"dataset": ("synthetic", "synthetic-alt"), "objective": ("clip", "tok", "hn+tok")},
          None, transfer={"synthetic": None, "synthetic-alt": None}),
    # 5 % of the synthetic training set is 100 pairs, fewer than one batch of 128: effective batch 32 (16 × 2)
    Study("fractions", "Fig. 6, Table A9", {"train_fraction": (0.05, 0.2, 0.5, 1.0), "objective": BOTH},
          {"train_fraction": (0.05, 0.25), "objective": BOTH}, fixed={"accumulation_steps": 2}),
    # s·γ = 25 is reached at both temperatures (γ = 1 at s = 25, γ = 0.25 at s = 100)
    Study("temperature", "App. B.2", {"logit_scale": (25.0, 100.0), "gamma": (0.0, 0.25, 1.0)},
          {"logit_scale": (25.0, 100.0), "gamma": (0.0, 1.0)}, fixed={"objective": "hn+tok"}),
    Study("plug_and_play", "Table 2, Table A4", {"framework": FRAMEWORKS, "objective": ("clip", "hn")}, None),
)}


#: Chapter 4's studies in its section order, (a)–(e) and (g) ((f) re-evaluates runs of (a)); the others run at
#: full scale only.
CHAPTER_STUDIES = ("gamma", "components", "margin_source", "fractions", "seeds", "temperature")
#: What chapter 4 trains where the committed full grids can stand in for the rest: the two knobs of the loss.
CHAPTER_TRAINS_BY_DEFAULT = ("gamma", "components")
#: Experiment fields that do not change what a run learns (the scale sets epochs and train_fraction).
_NOT_LEARNED = {"device", "output_dir", "runs_dir", "progress", "epochs", "train_fraction"}


def committed_grids_apply(experiment: Experiment) -> bool:
    """Whether the committed full grids (``results/ablations.json``) can stand in for runs of ``experiment``:
    ``make ablations`` trained them with every setting at its default — the toy on the synthetic benchmark, its
    learning rate, micro-batches of 16 × 8, seed 0 — and only there are they the same experiment."""
    default = Experiment()
    return all(getattr(experiment, f.name) == getattr(default, f.name)
               for f in fields(Experiment) if f.init and f.name not in _NOT_LEARNED)


def chapter_plan(experiment: Experiment, scale: str,
                 trained_here: Sequence[str] | None = None) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Which of chapter 4's studies it trains at ``scale`` and which it reads from the committed full grids, as
    ``(trained, read)`` in section order.

    ``trained_here=None`` trains (a) and (b) at reduced scale where :func:`committed_grids_apply`, and every study
    otherwise. Raises ``ValueError`` for a name that is not a chapter study, and where a study would be read but
    the committed grids are not this experiment's.
    """
    applies = committed_grids_apply(experiment)
    if trained_here is None:
        trained_here = CHAPTER_TRAINS_BY_DEFAULT if applies and scale == "reduced" else CHAPTER_STUDIES
    unknown = sorted(set(trained_here) - set(CHAPTER_STUDIES))
    if unknown:
        raise ValueError(f"trained_here names {unknown}; chapter 4's studies are {list(CHAPTER_STUDIES)}")
    trained = tuple(name for name in CHAPTER_STUDIES if name in trained_here)
    read = tuple(name for name in CHAPTER_STUDIES if name not in trained_here)
    if read and not applies:
        raise ValueError("the committed full grids are the toy's, fine-tuned on synthetic data with the default "
                         f"settings: with other settings train every study here (trained_here=None), not {list(read)}")
    return trained, read


def grid_spec(study: Study) -> GridSpec:
    """The papermill grid of ``study`` at full scale over ``notebooks/ablation_run`` (paths from the repository)."""
    parameters = {**SCALES["full"], **study.fixed, "runs_dir": str(RUNS_ROOT / "cache")}
    if study.transfer:
        parameters["transfer"] = dict(study.transfer)
    return GridSpec(Path("notebooks/ablation_run.ipynb"), RUNS_ROOT / study.name, parameters, study.grid("full"))


COMPONENT_LABELS = {"clip": "L_tok ✗ · L_HN ✗ (InfoNCE)", "tok": "L_tok ✓ · L_HN ✗", "hn": "L_tok ✗ · L_HN ✓",
                    "hn+tok": "L_tok ✓ · L_HN ✓ (HN-CLIP)"}
_KEPT = ("config", "zero_shot", "best", "last", "history")


def _number_key(value: float) -> str:
    return f"{float(value):g}"


def _result(run: Mapping) -> dict:
    return {k: run["result"][k] for k in _KEPT if k in run["result"]}


def slim(data):
    """``data`` with every training result (a dict with ``last`` and ``history``) cut to what the tables and
    the tidy table read: its config, zero-shot, best and last rows and history (no run folder, no
    diagnostics)."""
    if isinstance(data, Mapping):
        if "last" in data and "history" in data:
            return {k: data[k] for k in _KEPT if k in data}
        return {k: slim(v) for k, v in data.items()}
    return data


def section(study: str, runs: Sequence[tuple[Mapping, Mapping]]) -> dict:
    """One study's ``(parameters, result)`` points, keyed by the parameters it varies (numbers as strings;
    :data:`hnclip_core.replication.tidy.STUDY_KEYS`)."""
    out: dict = {}
    for p, result in runs:
        if study == "gamma":
            out[_number_key(p["gamma"])] = result
        elif study == "components":
            out[p["objective"]] = result
        elif study == "margin_source":
            out[p["margin_source"]] = result
        elif study == "fractions":
            out.setdefault(_number_key(p["train_fraction"]), {})[p["objective"]] = result
        elif study == "seeds":
            out.setdefault(str(p["seed"]), {})[p["objective"]] = result
        elif study == "temperature":
            out.setdefault(_number_key(p["logit_scale"]), {})[_number_key(p["gamma"])] = result
        elif study == "plug_and_play":
            out.setdefault(p.get("framework", "longclip"), {})[p["objective"]] = result
        elif study == "transfer":
            rows = out.setdefault(p["dataset"], {}).setdefault(p["objective"], {})
            rows[p["eval_dataset"]] = {"zero_shot": result["zero_shot"], "last": result["last"]}
            rows.update({name: row for name, row in result["transfer"].items() if name not in rows})
        else:
            raise ValueError(f"unknown study {study!r}; studies: {', '.join(STUDIES)}")
    return out


def _gamma_transfer(runs: Sequence[Mapping]) -> tuple[dict, str | None]:
    """The γ sweep evaluated on its (single) transfer benchmark, for the scorecard's transfer claim."""
    names = {name for run in runs for name in run["transfer"]}
    if len(names) != 1:
        return {}, None
    (name,) = names
    return {_number_key(run["parameters"]["gamma"]): run["transfer"][name] for run in runs}, name


#: Sections collected from a study besides its own.
_DERIVED_SECTIONS = {"gamma": ("gamma_transfer",)}


def _point_seconds(folder: Path, entry: Mapping) -> float:
    """How long a point took when it ran: its own record's seconds, which a later invocation that skips the
    completed point (and reports 0 s for it) leaves in place."""
    record = folder / entry["name"] / POINT_FILE
    if record.is_file():
        return float(json.loads(record.read_text()).get("seconds") or 0.0)
    return float(entry["seconds"])


def portable_paths(node):
    """``node`` (a collected grid, or any part of one) with this machine's paths taken out: a run's ``output_dir``
    by its folder name, a ``checkpoint`` by its file name with its SHA-256 beside it (``checkpoint_sha256``)."""
    if isinstance(node, list):
        return [portable_paths(item) for item in node]
    if not isinstance(node, dict):
        return node
    out = {key: portable_paths(value) for key, value in node.items()}
    if isinstance(out.get("output_dir"), str):
        out["output_dir"] = Path(out["output_dir"]).name
    checkpoint = out.get("checkpoint")
    if isinstance(checkpoint, str) and Path(checkpoint).is_absolute():
        out["checkpoint"] = Path(checkpoint).name
        if Path(checkpoint).is_file():
            out["checkpoint_sha256"] = file_sha256(checkpoint)
    return out


def collect(runs_root: str | Path, studies: Sequence[str] = tuple(STUDIES)) -> dict:
    """Every finished study under ``runs_root`` (one folder per study, as the grid files name them) as the
    sections of :func:`section`, plus ``studies``: per study its points, failures and summed seconds."""
    root = Path(runs_root)
    collected: dict = {"studies": {}}
    for study in studies:
        folder = root / study
        if not (folder / "batch_summary.json").is_file():
            continue
        summary = load_summary(folder)
        runs = list(collect_json(folder, "run.json").values())
        collected["studies"][study] = {
            "points": len(summary),
            "completed": len(runs),
            "failed": [e["name"] for e in summary if e["status"] == "failed"],
            "seconds": round(sum(_point_seconds(folder, e) for e in summary), 1),
            "parameters": runs[0]["parameters"] if runs else {},
            # the model every point started from, by file name: which toy a committed grid describes
            "checkpoint": Path(runs[0]["result"]["config"]["checkpoint"]).name if runs else None,
        }
        if not runs:
            continue
        # a point's evaluations on other benchmarks: the rows of the transfer study
        points = [(run["parameters"], {**_result(run), **({"transfer": run["transfer"]} if study == "transfer"
                                                           else {})}) for run in runs]
        collected[study] = section(study, points)
        if study == "gamma":
            transfer, name = _gamma_transfer(runs)
            if transfer:
                collected["gamma_transfer"] = transfer
                collected["studies"]["gamma"]["transfer_dataset"] = name
    return portable_paths(collected)


def run_studies(studies: Sequence[str] = tuple(STUDIES), output: str | Path | None = RESULTS_FILE,
                force: bool = False) -> dict:
    """Run each study's grid at full scale (completed points are skipped), then collect and write them to
    ``output``. The grids run from the repository root (their relative paths are written from there)."""
    unknown = [s for s in studies if s not in STUDIES]
    if unknown:
        raise ValueError(f"unknown study {unknown}; studies: {', '.join(STUDIES)}")
    started = time.perf_counter()
    with contextlib.chdir(REPOSITORY):
        for study in studies:
            print(f"== {study} ({STUDIES[study].paper})", file=sys.stderr)
            run_grid(grid_spec(STUDIES[study]), force=force)
        collected = collect(RUNS_ROOT, studies)
    collected["last_invocation"] = {"studies": list(studies), "wall_seconds": round(time.perf_counter() - started, 1)}
    if output is not None:
        collected = write_results(collected, output)
    return collected


def write_results(collected: Mapping, output: str | Path) -> dict:
    """Write ``collected`` to ``output``, keeping the studies already there that ``collected`` does not hold (so
    running some studies does not discard the others' results); returns what was written."""
    path = Path(output)
    merged = json.loads(path.read_text()) if path.is_file() else {"studies": {}}
    for study in collected["studies"]:
        for section in (study, *_DERIVED_SECTIONS.get(study, ())):
            merged.pop(section, None)
    merged.update({key: value for key, value in collected.items() if key != "studies"})
    merged["studies"] = {**merged.get("studies", {}), **collected["studies"]}
    merged = portable_paths(merged)  # parts merged from an older file too
    write_text_atomically(path, json.dumps(merged, indent=1))
    return merged


# ---------------------------------------------------------------------------------------------------------
# Tables (Markdown, the layout of the paper's)
# ---------------------------------------------------------------------------------------------------------


def strongest_baseline(runs: Mapping[str, Mapping]) -> str | None:
    """The baseline (of :data:`BASELINES`) with the highest last-epoch average R@1 among ``runs``."""
    present = [b for b in BASELINES if b in runs]
    return max(present, key=lambda b: runs[b]["last"]["mean_r1"]) if present else None


def components_table(components: Mapping[str, Mapping], ks: Sequence[int] = (1, 5, 10, 25, 50)) -> str:
    """Table 3b / A5: the four combinations of L_tok and L_HN, last epoch."""
    return recall_table({COMPONENT_LABELS[o]: components[o]["last"] for o in OBJECTIVES if o in components}, ks=ks)


def margin_source_table(margin_source: Mapping[str, Mapping]) -> str:
    """Table 3c / A2: recomputed vs frozen Ḡ, last epoch, with each one's best epoch."""
    header = ["Ḡ source"] + [f"{name} R@{k}" for _, name in DIRECTIONS for k in (1, 5, 10)] + ["avg R@1",
                                                                                                "best epoch (avg R@1)"]
    rows = []
    for source, result in margin_source.items():
        last, best = result["last"], result["best"]
        rows.append([source, *(f"{last[f'{d}_r{k}']:.1f}" for d, _ in DIRECTIONS for k in (1, 5, 10)),
                     f"{last['mean_r1']:.1f}", f"{best['epoch']} ({best['mean_r1']:.1f})"])
    return markdown_table(header, rows)


def fractions_table(fractions: Mapping[str, Mapping[str, Mapping]]) -> str:
    """Table A9's summary: average R@1 of every method at every fraction, and HN-CLIP's margin over the
    strongest baseline at that fraction."""
    methods = list(dict.fromkeys(m for runs in fractions.values() for m in runs))
    rows = []
    for fraction in sorted(fractions, key=float):
        runs = fractions[fraction]
        cells = [f"{runs[m]['last']['mean_r1']:.1f}" if m in runs else "–" for m in methods]
        best = strongest_baseline(runs)
        margin = (f"{runs[METHOD]['last']['mean_r1'] - runs[best]['last']['mean_r1']:+.1f} ({OBJECTIVES[best]})"
                  if best and METHOD in runs else "–")
        rows.append([f"{100 * float(fraction):g} %", *cells, margin])
    return markdown_table(["data", *(f"{OBJECTIVES[m]} avg R@1" for m in methods),
                           f"{OBJECTIVES[METHOD]} − strongest baseline"], rows)


def _mean_std(values: Sequence[float]) -> str:
    return f"{statistics.fmean(values):.1f} ± {statistics.stdev(values):.1f}" if len(values) > 1 else \
        f"{values[0]:.1f}"


def seeds_table(seeds: Mapping[str, Mapping[str, Mapping]]) -> str:
    """Table A8 / A11: mean ± sample standard deviation over seeds of last-epoch R@1/5/10, and max|Δ|, the
    largest difference between two seeds over the six metrics."""
    methods = list(dict.fromkeys(m for runs in seeds.values() for m in runs))
    metrics = [f"{d}_r{k}" for d, _ in DIRECTIONS for k in (1, 5, 10)]
    rows = []
    for method in methods:
        values = {key: [runs[method]["last"][key] for runs in seeds.values() if method in runs]
                  for key in [*metrics, "mean_r1"]}
        spread = max(max(v) - min(v) for key, v in values.items() if key != "mean_r1")
        rows.append([OBJECTIVES[method], len(values["mean_r1"]), *(_mean_std(values[k]) for k in [*metrics, "mean_r1"]),
                     f"{spread:.1f}"])
    header = ["method", "seeds", *(f"{name} R@{k}" for _, name in DIRECTIONS for k in (1, 5, 10)), "avg R@1",
              "max \\|Δ\\|"]
    return markdown_table(header, rows)


def transfer_table(transfer: Mapping[str, Mapping[str, Mapping]]) -> str:
    """Table A10: each method trained on one benchmark and tested on every benchmark, last epoch; the
    zero-shot backbone first for each test benchmark."""
    header = ["trained on → tested on", "method", *(f"{n} R@{k}" for _, n in DIRECTIONS for k in (1, 5, 10)),
              "avg R@1"]
    rows = []
    for train, methods in transfer.items():
        tests = list(dict.fromkeys(t for evaluations in methods.values() for t in evaluations))
        tests.sort(key=lambda t: t != train)  # in-domain first, as in Table A10
        for test in tests:
            first = next(ev[test] for ev in methods.values() if test in ev)
            entries = [("zero-shot", first["zero_shot"])] + [(OBJECTIVES[m], ev[test]["last"])
                                                             for m, ev in methods.items() if test in ev]
            for method, row in entries:
                rows.append([f"{train} → {test}" + (" (in-domain)" if test == train else ""), method,
                             *(f"{row[f'{d}_r{k}']:.1f}" for d, _ in DIRECTIONS for k in (1, 5, 10)),
                             f"{row['mean_r1']:.1f}"])
    return markdown_table(header, rows)


def temperature_table(temperature: Mapping[str, Mapping[str, Mapping]]) -> str:
    """Average R@1 (last epoch) for every fixed inverse temperature s (rows) and γ (columns), with s·γ."""
    gammas = sorted({g for by_gamma in temperature.values() for g in by_gamma}, key=float)
    rows = []
    for s in sorted(temperature, key=float):
        by_gamma = temperature[s]
        rows.append([f"s = {s}", *(f"{by_gamma[g]['last']['mean_r1']:.1f} (s·γ {float(s) * float(g):g})"
                                   if g in by_gamma else "–" for g in gammas)])
    return markdown_table(["fixed s", *(f"γ = {g}" for g in gammas)], rows)


def plug_and_play_table(plug_and_play: Mapping[str, Mapping[str, Mapping]]) -> str:
    """Table 2 / A4: the zero-shot model every framework starts from, then per framework its InfoNCE baseline, the
    same recipe with L_HN as the global term, and Δ (the paper's three-row layout) — "Δ (a repair)" where the
    InfoNCE baseline ends at or below zero-shot, so that L_HN mends a broken recipe rather than improving one."""
    columns = [f"{d}_r{k}" for d, _ in DIRECTIONS for k in (1, 5, 10)] + ["mean_r1"]
    rows = []
    first = next((runs["clip"] for runs in plug_and_play.values() if "clip" in runs), None)
    if first is not None and "zero_shot" in first:
        rows.append(["zero-shot", *(f"{first['zero_shot'][c]:.1f}" for c in columns)])
    for framework, runs in plug_and_play.items():
        if "clip" in runs:
            rows.append([framework, *(f"{runs['clip']['last'][c]:.1f}" for c in columns)])
        if "hn" in runs:
            rows.append(["+ L_HN", *(f"{runs['hn']['last'][c]:.1f}" for c in columns)])
        if "clip" in runs and "hn" in runs:
            repair = "zero_shot" in runs["clip"] and runs["clip"]["last"]["mean_r1"] <= runs["clip"]["zero_shot"][
                "mean_r1"]
            rows.append(["Δ (a repair)" if repair else "Δ",
                         *(f"{runs['hn']['last'][c] - runs['clip']['last'][c]:+.1f}" for c in columns)])
    header = ["framework", *(f"{n} R@{k}" for _, n in DIRECTIONS for k in (1, 5, 10)), "avg R@1"]
    return markdown_table(header, rows)


def throughput_table(measured: Mapping, paper: Mapping[str, Mapping[str, float]] | None = None) -> str:
    """Table A3's comparison for every framework: training img/s with InfoNCE and with L_HN as the global term,
    L_HN's time relative to InfoNCE in the same framework, and each framework's InfoNCE time relative to the first
    (Long-CLIP full fine-tuning). ``measured`` is the JSON of ``benchmarks/framework_throughput.py --json``;
    ``paper`` (framework → objective → img/s, e.g. :data:`hnclip_core.replication.paper.THROUGHPUT`) adds the
    paper's numbers where it has them."""
    frameworks = measured["frameworks"]
    first = next(iter(frameworks))
    reference = frameworks[first]["clip"]["img_per_s"]
    header = ["framework", "InfoNCE img/s", "L_HN img/s", "L_HN time / InfoNCE time",
              f"InfoNCE time / {first} InfoNCE time"]
    if paper is not None:
        header += ["paper InfoNCE img/s", "paper L_HN img/s"]
    rows = []
    for name, runs in frameworks.items():
        clip, hn = runs["clip"]["img_per_s"], runs["hn"]["img_per_s"]
        row = [name, f"{clip:.1f}", f"{hn:.1f}", f"×{clip / hn:.3f}", f"×{reference / clip:.2f}"]
        if paper is not None:
            row += [f"{paper[name][o]:g}" if o in paper.get(name, {}) else "–" for o in ("clip", "hn")]
        rows.append(row)
    return markdown_table(header, rows)


def timing_table(studies: Mapping[str, Mapping]) -> str:
    """Points, summed seconds and starting model of each study (what ``make ablations`` took, per grid)."""
    rows = [[name, f"{s['completed']}/{s['points']}", f"{s['seconds'] / 60:.1f}",
             ", ".join(s["failed"]) or "–", f"`{s.get('checkpoint') or 'not recorded'}`"]
            for name, s in studies.items()]
    total = sum(s["seconds"] for s in studies.values())
    rows.append(["total", "", f"{total / 60:.1f}", "", ""])
    return markdown_table(["study", "points done", "minutes", "failed points", "fine-tuned from"], rows)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m hnclip_core.replication.ablations",
                                     description="Run the ablation studies at full scale and collect them.")
    parser.add_argument("studies", nargs="*", default=list(STUDIES), help=f"studies to run (default: all: "
                        f"{', '.join(STUDIES)})")
    parser.add_argument("--output", default=str(RESULTS_FILE), help="where the collected results go")
    parser.add_argument("--force", action="store_true", help="run completed points again")
    parser.add_argument("--collect-only", metavar="RUNS_ROOT", help="only collect finished grids under RUNS_ROOT")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.collect_only:
        collected = write_results(collect(args.collect_only, args.studies), args.output)
    else:
        collected = run_studies(args.studies, output=args.output, force=args.force)
    print(timing_table(collected["studies"]))
    failed = [p for s in collected["studies"].values() for p in s["failed"]]
    print(f"results: {args.output}" + (f"; failed points: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
