"""The paper's ablation studies as papermill grids, their results collected into one file, and their tables.

Each study is a grid file in ``ablations/`` run by :mod:`hnclip_core.replication.batch` over ``notebooks/ablation_run``
(one training configuration per point, ``run.json`` per point). ``python -m hnclip_core.replication.ablations`` (``make
ablations``) runs every grid, then :func:`collect` reads the points back by their parameters (not their folder
names) into one section per study, keyed by the parameters the study varies, and writes them, with each study's run
time, to ``results/ablations.json``; chapter 5 draws its tables and figures from that file, and
:func:`hnclip_core.replication.tidy.read_results` turns it into the scorecard's tidy table.

=================  ======================================  ==========================================
study              grid                                    paper
=================  ======================================  ==========================================
``gamma``          γ ∈ {0, 0.25, 0.5, 0.75, 1}, L_tok on   Table 3a, Table A6 (+ transfer column)
``components``     clip, tok, hn, hn+tok                   Table 3b, Table A5; convergence Fig. 5, A9
``margin_source``  Ḡ recomputed / frozen                   Table 3c, Table A2, App. B.2
``fractions``      5/20/50/100 % × clip, tok, hn+tok       Fig. 6, Table A9
``seeds``          seeds 0, 1, 2 × clip, hn+tok            Table A8, Table A11
``transfer``       train on synthetic / synthetic-alt      Table A10, Table A7
``temperature``    fixed s ∈ {25, 100} × γ               App. B.2, §3.5
``plug_and_play``  6 frameworks × InfoNCE / L_HN           Table 2, Table A4, App. D.2
=================  ======================================  ==========================================
"""

from __future__ import annotations

import argparse
import contextlib
import json
import statistics
import sys
import time
from collections.abc import Mapping, Sequence
from pathlib import Path

from .batch import POINT_FILE, collect_json, load_spec, load_summary, run_grid
from .experiment import OBJECTIVES
from .report import DIRECTIONS, markdown_table, recall_table

__all__ = [
    "BASELINES", "STUDIES", "collect", "components_table", "fractions_table", "margin_source_table",
    "plug_and_play_table", "run_studies", "seeds_table", "slim", "strongest_baseline", "temperature_table",
    "throughput_table", "timing_table", "transfer_table", "write_results",
]

REPOSITORY = Path(__file__).resolve().parents[2]
GRID_DIR = REPOSITORY / "ablations"
RESULTS_FILE = REPOSITORY / "results" / "ablations.json"
#: Studies in the order they run (cheap, often-shared configurations first).
STUDIES = ("components", "gamma", "margin_source", "seeds", "transfer", "fractions", "temperature", "plug_and_play")
#: The baselines available on the embedded default (plain fine-tuning with or without L_tok).
BASELINES = ("clip", "tok")
METHOD = "hn+tok"
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


def _section(runs: Sequence[Mapping], study: str) -> dict:
    """One study's points, keyed by the parameters it varies (:data:`hnclip_core.replication.tidy.STUDY_KEYS`)."""
    out: dict = {}
    for run in runs:
        p, result = run["parameters"], _result(run)
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
            rows.update({name: row for name, row in run["transfer"].items() if name not in rows})
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


def collect(runs_root: str | Path, studies: Sequence[str] = STUDIES) -> dict:
    """Every finished study under ``runs_root`` (one folder per study, as the grid files name them) as the
    sections of :func:`_section`, plus ``studies``: per study its points, failures and summed seconds."""
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
        }
        if not runs:
            continue
        collected[study] = _section(runs, study)
        if study == "gamma":
            transfer, name = _gamma_transfer(runs)
            if transfer:
                collected["gamma_transfer"] = transfer
                collected["studies"]["gamma"]["transfer_dataset"] = name
    return collected


def run_studies(studies: Sequence[str] = STUDIES, grid_dir: str | Path = GRID_DIR, output: str | Path | None =
                RESULTS_FILE, force: bool = False) -> dict:
    """Run each study's grid (completed points are skipped), then collect and write them to ``output``.

    The grids run from the repository root (their relative paths are written from there), so this works
    from any directory. Every study's ``output_dir`` must be ``<runs root>/<study>``.
    """
    unknown = [s for s in studies if s not in STUDIES]
    if unknown:
        raise ValueError(f"unknown study {unknown}; studies: {', '.join(STUDIES)}")
    started = time.perf_counter()
    runs_roots = set()
    with contextlib.chdir(REPOSITORY):
        for study in studies:
            grid_file = Path(grid_dir) / f"{study}.yaml"
            runs_roots.add(load_spec(grid_file).output_dir.resolve().parent)
            print(f"== {study}: {grid_file}", file=sys.stderr)
            run_grid(grid_file, force=force)
    if len(runs_roots) != 1:
        raise ValueError(f"the grid files put their studies in different folders: {sorted(map(str, runs_roots))}")
    collected = collect(runs_roots.pop(), studies)
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
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(merged, indent=1))
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
        margin = (f"{runs[METHOD]['last']['mean_r1'] - runs[best]['last']['mean_r1']:+.1f} ({best})"
                  if best and METHOD in runs else "–")
        rows.append([f"{100 * float(fraction):g} %", *cells, margin])
    return markdown_table(["data", *(f"{m} avg R@1" for m in methods), "hn+tok − strongest baseline"], rows)


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
        rows.append([method, len(values["mean_r1"]), *(_mean_std(values[k]) for k in [*metrics, "mean_r1"]),
                     f"{spread:.1f}"])
    header = ["method", "seeds", *(f"{name} R@{k}" for _, name in DIRECTIONS for k in (1, 5, 10)), "avg R@1",
              "max|Δ|"]
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
            entries = [("zero-shot", first["zero_shot"])] + [(m, ev[test]["last"]) for m, ev in methods.items()
                                                             if test in ev]
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
    """Table 2 / A4: per framework its InfoNCE baseline, the same recipe with L_HN as the global term, and Δ."""
    columns = [f"{d}_r{k}" for d, _ in DIRECTIONS for k in (1, 5, 10)] + ["mean_r1"]
    rows = []
    for framework, runs in plug_and_play.items():
        if "clip" in runs:
            rows.append([framework, *(f"{runs['clip']['last'][c]:.1f}" for c in columns)])
        if "hn" in runs:
            rows.append(["+ L_HN", *(f"{runs['hn']['last'][c]:.1f}" for c in columns)])
        if "clip" in runs and "hn" in runs:
            rows.append(["Δ", *(f"{runs['hn']['last'][c] - runs['clip']['last'][c]:+.1f}" for c in columns)])
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
    """Points and summed seconds of each study (what ``make ablations`` took, per grid)."""
    rows = [[name, f"{s['completed']}/{s['points']}", f"{s['seconds'] / 60:.1f}",
             ", ".join(s["failed"]) or "–"] for name, s in studies.items()]
    total = sum(s["seconds"] for s in studies.values())
    rows.append(["total", "", f"{total / 60:.1f}", ""])
    return markdown_table(["study", "points done", "minutes", "failed points"], rows)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m hnclip_core.replication.ablations",
                                     description="Run the ablation grids (ablations/*.yaml) and collect them.")
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
