"""The measured numbers of the README and the docs, rendered from ``results/`` so that no typed sentence can drift.

A document marks each place where measured numbers go with a block::

    <!-- generated: scorecard -->
    …rendered here…
    <!-- end generated -->

and :func:`regenerate` replaces every block's body by what its renderer (:data:`RENDERERS`) makes of the committed
results: ``calibration.json`` (``python -m hnclip_core calibrate``), ``scorecard.json`` (chapter 5's verdicts,
copied there by ``make notebooks``), ``timings.json`` (``benchmarks/time_commands.py``) and the shipped toy's
record. Outside the blocks a document states no measured
number (``tests/test_generated_docs.py`` checks both). ``make docs`` rewrites the files; ``--check`` only says
which are stale.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from statistics import fmean, stdev

from ..files import write_text_atomically
from ..toy.model import shipped_toy_path
from . import paper
from .ablations import plug_and_play_table, throughput_table, timing_table
from .committed import tolerances
from .report import (
    DESIGN_TARGET_STATUSES,
    format_number,
    markdown_table,
    numbers_cell,
    recall_table,
    renamed,
    verdicts_table,
)
from .scorecard import CALIBRATION, CLAIMS, DAMAGE_LIMITATION, STATUSES, Verdict, calibration_view, design_targets
from .tidy import read_results

REPOSITORY = Path(__file__).resolve().parents[2]
#: The documents with generated blocks, relative to the repository.
DOCUMENTS = ("README.md", "docs/results.md", "docs/frameworks.md", "docs/tutorial.md", "docs/batch-runs.md")
BLOCK = re.compile(r"(?P<open><!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(?P<close><!-- end generated -->)",
                   re.DOTALL)
#: The README's headline claims, in its order.
HEADLINE = ("infonce_saturates", "geometry", "hn_stays_active", "gradient_ratio", "beats_infonce", "beats_zero_shot")
#: The command that writes each results file a renderer reads.
PRODUCERS = {"calibration.json": "python -m hnclip_core calibrate", "scorecard.json": "make notebooks",
             "ablations.json": "make ablations",
             "framework_throughput.json": "python benchmarks/framework_throughput.py --json "
                                          "results/framework_throughput.json",
             "timings.json": "python benchmarks/time_commands.py test tutorial"}
METHODS = {"clip": "InfoNCE (`clip`)", "hn+tok": "HN-CLIP (`hn+tok`)"}


@dataclass(frozen=True)
class Results:
    """The committed results a renderer reads (``results_dir``: the repository's ``results/``)."""

    results_dir: Path

    def _json(self, name: str):
        path = self.results_dir / name
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: `{PRODUCERS[name]}` writes it")
        return json.loads(path.read_text())

    @cached_property
    def calibration(self) -> dict:
        return self._json("calibration.json")

    @cached_property
    def grids(self) -> dict:
        return self._json("ablations.json")

    @cached_property
    def throughput(self) -> dict:
        return self._json("framework_throughput.json")

    @cached_property
    def timings(self) -> dict[str, dict]:
        """The commands ``benchmarks/time_commands.py`` measured (none before its first run)."""
        path = self.results_dir / "timings.json"
        return json.loads(path.read_text())["commands"] if path.is_file() else {}

    def verdict(self, claim_id: str) -> Verdict:
        return next(v for v in self.scorecard if v.claim_id == claim_id)

    @cached_property
    def scorecard(self) -> list[Verdict]:
        return [Verdict(**entry) for entry in self._json("scorecard.json")]


def _counts(verdicts: list[Verdict]) -> str:
    counts = {status: sum(v.status == status for v in verdicts) for status in STATUSES}
    return ", ".join(f"**{n} {status}**" for status, n in counts.items() if n)


def scorecard_summary(results: Results) -> str:
    """One sentence: how many of the paper's claims reproduce on the embedded default, and which."""
    by_status = {status: [v.text.rstrip(".") for v in results.scorecard if v.status == status] for status in STATUSES}
    parts = [f"{status}: {'; '.join(texts)}." for status, texts in by_status.items() if texts]
    return (f"Of the paper's {len(results.scorecard)} claims the scorecard tests, on the embedded default: "
            f"{_counts(results.scorecard)}.\n\n" + "\n".join(f"* {p[0].upper()}{p[1:]}" for p in parts))


def headline(results: Results) -> str:
    """The README's table: a few claims, the paper's numbers and ours, the scorecard's verdict."""
    by_id = {v.claim_id: v for v in results.scorecard}
    def verdict(v: Verdict) -> str:
        if v.status != "reproduced":
            return f"**{v.status}**"
        return f"reproduced, as {DAMAGE_LIMITATION}: both end below zero-shot" if DAMAGE_LIMITATION in v.explanation \
            else "reproduced"

    rows = [[f"{v.text} ({v.reference})", numbers_cell(v.paper), renamed(numbers_cell(v.ours)), verdict(v)]
            for v in (by_id[claim] for claim in HEADLINE)]
    table = markdown_table(["claim of the paper", "paper: Long-CLIP-L", "ours: the embedded default", "verdict"],
                           rows)
    return f"{table}\n\nAll {len(results.scorecard)} claims: {_counts(results.scorecard)}."


def _seed_mean(runs: list[dict], objective: str, part: str) -> dict[str, float]:
    metrics = [run[objective][part] for run in runs]
    return {key: fmean(m[key] for m in metrics) for key in metrics[0] if isinstance(metrics[0][key], int | float)}


def recall(results: Results) -> str:
    """Table 1's layout: the calibration's zero-shot, InfoNCE and HN-CLIP (mean of its seeds, last epoch), and the
    paper's DOCCI rows."""
    runs = results.calibration["runs"]
    rows = {"zero-shot": _seed_mean(runs, "clip", "zero_shot")}
    rows |= {label: _seed_mean(runs, objective, "last") for objective, label in METHODS.items()}
    paper_rows = {"zero-shot": paper.DOCCI_RECALL["zero-shot"], "InfoNCE": paper.DOCCI_RECALL["clip"],
                  "HN-CLIP": paper.DOCCI_RECALL["hn+tok"]}
    per_seed = {label: [run[objective]["last"]["mean_r1"] for run in runs] for objective, label in METHODS.items()}
    spread = "; ".join(f"{label} {', '.join(f'{x:.2f}' for x in values)} (sd {stdev(values):.2f})"
                       for label, values in per_seed.items())
    config = results.calibration["base_config"]
    return (f"Mean of seeds {', '.join(str(run['seed']) for run in runs)} at chapter 3's recipe (lr "
            f"{format_number(config['lr'])}, {config['epochs']} epochs, last epoch; `results/calibration.json`). "
            f"Average R@1 per seed: {spread}.\n\n" + recall_table(rows, paper=paper_rows))


def design_targets_table(results: Results) -> str:
    """The toy's design targets, judged on the calibration (they are not claims of the paper)."""
    rules = {c.id: (c.rule, c.why) for c in CALIBRATION}
    targets = design_targets(calibration_view(read_results(calibration=results.results_dir / "calibration.json")))
    met = DESIGN_TARGET_STATUSES
    counts = ", ".join(f"**{sum(v.status == status for v in targets)} {word.strip('*')}**"
                       for status, word in met.items() if any(v.status == status for v in targets))
    return f"{counts} of {len(targets)}.\n\n" + verdicts_table(targets, rules, statuses=met)


def scorecard(results: Results) -> str:
    """Chapter 5's verdicts table: every claim, its rule, the paper's numbers and ours."""
    rules = {c.id: (c.rule, c.why) for c in CLAIMS}
    return verdicts_table(results.scorecard, rules)


def toy(results: Results) -> str:
    """The shipped toy: its file, recipe digest and zero-shot regime (as the calibration measured it)."""
    record = json.loads(shipped_toy_path().with_suffix(".json").read_text())
    measured_on = results.calibration["base_config"].get("checkpoint")
    if measured_on and measured_on != record["file"]:
        raise ValueError(f"results/calibration.json was measured on {measured_on}, not on the shipped toy "
                         f"{record['file']}: re-run `python -m hnclip_core calibrate`")
    regime = results.calibration["zero_shot_regime"]

    def percent(x: float) -> str:
        return f"{100 * x:.0f} %"

    return (f"The shipped toy: `{record['file']}` (recipe digest `{record['recipe_digest']}`, "
            f"{record['parameters'] / 1e6:.1f} M parameters). Zero-shot: {percent(regime['solved_share'])} of random "
            f"16-pair micro-batches solved (L_CLIP < 1e-3), {percent(regime['twin_error_share'])} of top-1 errors on "
            f"near-twins, {percent(regime['own_family_top1'])} of top-1 in the query's own family, average R@1 "
            f"{fmean([regime['t2i_r1'], regime['i2t_r1']]):.1f}.")


def _verdict_line(verdict: Verdict) -> str:
    return f"\n\nThe scorecard: *{verdict.text}* — {verdict.status} ({renamed(verdict.explanation)})."


def plug_and_play(results: Results) -> str:
    """Table 2's layout for the toy's frameworks (the full grid), with the model it was fine-tuned from and the
    scorecard's verdict."""
    study = results.grids["studies"]["plug_and_play"]
    parameters = study["parameters"]
    verdict = results.verdict("plug_and_play")
    return (f"The `plug_and_play` grid (`make ablations`): {parameters['epochs']} epochs, effective batch "
            f"{parameters['effective_batch']}, seed {parameters['seed']}, last epoch, fine-tuned from "
            f"`{study.get('checkpoint') or 'a model not recorded'}`.\n\n"
            + plug_and_play_table(results.grids["plug_and_play"]) + _verdict_line(verdict))


def throughput(results: Results) -> str:
    """Table A3's comparison as measured here, and the scorecard's verdict on the efficiency claim."""
    measured = results.throughput
    verdict = results.verdict("efficiency")
    setting = ", ".join(f"{key} {measured[key]}" for key in ("batch", "steps", "rounds") if key in measured)
    return (f"Measured with {setting} (`results/framework_throughput.json`).\n\n"
            + throughput_table(measured, paper.THROUGHPUT) + _verdict_line(verdict))


NOT_TIMED = "`{command}` has not been timed yet (`python benchmarks/time_commands.py test tutorial` times it)."


def _minutes(seconds: float) -> str:
    return f"{seconds / 60:.1f} min"


def _pytest_run(run: dict) -> str:
    counts = ", ".join(f"{n} {word}" for word, n in run["counts"].items())
    return f"{counts} in {_minutes(run['seconds'])}"


def timings(results: Results) -> str:
    """The wall time and peak memory of ``make test`` and ``make tutorial`` (and any other command measured) from a
    fresh clone with empty caches, as ``benchmarks/time_commands.py`` recorded them."""
    if "make test" not in results.timings:
        return NOT_TIMED.format(command="make test")
    rows = []
    for label, measured in results.timings.items():
        env = " ".join(f"{k}={v}" for k, v in measured["env"].items())
        parts = [f"pytest run {i + 1}: {_pytest_run(run)}" for i, run in enumerate(measured["pytest"])]
        if "chapters" in measured:
            parts.append("chapters " + ", ".join(f"{c['seconds']:.0f} s" for c in measured["chapters"]))
        command = f"`{env + ' ' if env else ''}{label}`"
        rows.append([command, "; ".join(parts) or "—", f"**{_minutes(measured['wall_seconds'])}**",
                     f"{measured['peak_memory_gb']:.1f} GB", f"`{measured['commit'][:7]}`, {measured['date']}"])
    machine = results.timings["make test"]["machine"]
    return (f"Measured in a fresh clone with an empty `HNCLIP_CACHE` by `benchmarks/time_commands.py` on "
            f"{machine['cores']} CPU cores ({machine['processor']}, torch {machine['torch']}), the machine otherwise "
            f"idle; peak memory is the largest process's resident set.\n\n"
            + markdown_table(["command", "what ran", "wall time", "peak memory", "commit, date"], rows))


def chapter_memory(results: Results) -> str:
    """Each chapter's peak kernel memory in ``make tutorial`` (what matters for a 1–2 GB Binder session), and how
    much of it is the import of torch and the package."""
    if "make tutorial" not in results.timings:
        return NOT_TIMED.format(command="make tutorial")
    measured = results.timings["make tutorial"]
    chapters = measured["chapters"]
    imported = measured["import_memory_mb"]
    header = ["chapter"] + [c["notebook"].split("_")[0] for c in chapters]
    rows = [["peak kernel memory"] + [f"{c['peak_kernel_memory_mb'] / 1000:.2f} GB" for c in chapters],
            ["less the import of torch, open_clip and the package"]
            + [f"{(c['peak_kernel_memory_mb'] - imported) / 1000:.2f} GB" for c in chapters]]
    return (f"Importing torch ({measured['machine']['torch']}), open_clip and the package alone takes "
            f"{imported / 1000:.2f} GB here; a CPU-only build of torch (Binder's) takes less, not measured.\n\n"
            + markdown_table(header, rows))


def ablation_timings(results: Results) -> str:
    """What each grid of ``make ablations`` took: points and the summed seconds of its trainings."""
    return ("Per grid, the summed time of its points as each ran (`results/ablations.json`; a point that shared the "
            "machine with other work took longer):\n\n" + timing_table(results.grids["studies"]))


def test_tolerances(results: Results) -> str:
    """How far a trained number of a chapter may lie from ``results/chapter_numbers.json``
    (:func:`.committed.tolerances` of the committed calibration)."""
    allowed = tolerances(results.results_dir / "calibration.json")
    return (f"From the committed calibration: {allowed['recall']:.1f} points for a Recall@1; for the share of "
            f"micro-batches solved under InfoNCE / under L_HN {allowed['micro_solved_clip']:.2f} / "
            f"{allowed['micro_solved_hn']:.2f}, and for the share of whole optimizer steps solved "
            f"{allowed['solved_clip']:.2f} / {allowed['solved_hn']:.2f}.")


RENDERERS: Mapping[str, Callable[[Results], str]] = {
    "headline": headline, "scorecard-summary": scorecard_summary, "recall": recall,
    "design-targets": design_targets_table, "scorecard": scorecard, "toy": toy,
    "plug-and-play": plug_and_play, "throughput": throughput, "timings": timings, "chapter-memory": chapter_memory,
    "test-tolerances": test_tolerances, "ablation-timings": ablation_timings,
}


def regenerate(text: str, results: Results) -> str:
    """``text`` with every generated block's body rendered afresh."""
    def render(match: re.Match) -> str:
        name = match["name"]
        if name not in RENDERERS:
            raise KeyError(f"unknown generated block {name!r} (known: {', '.join(RENDERERS)})")
        return f"{match['open']}{RENDERERS[name](results).strip()}\n{match['close']}"

    return BLOCK.sub(render, text)


def without_generated(text: str) -> str:
    """``text`` with the generated blocks' bodies left out: what was typed."""
    return BLOCK.sub(lambda m: m["open"] + m["close"], text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hnclip_core.replication.generated_docs",
                                     description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="only list the documents that are stale (exit 1)")
    parser.add_argument("--results-dir", type=Path, default=REPOSITORY / "results")
    args = parser.parse_args(argv)
    results = Results(args.results_dir)
    stale = []
    for name in DOCUMENTS:
        path = REPOSITORY / name
        text = path.read_text()
        fresh = regenerate(text, results)
        if fresh != text:
            stale.append(name)
            if not args.check:
                write_text_atomically(path, fresh)
    print(("stale: " if args.check else "rewritten: ") + (", ".join(stale) or "none"))
    return 1 if args.check and stale else 0


if __name__ == "__main__":
    sys.exit(main())
