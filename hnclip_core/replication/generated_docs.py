"""The measured numbers of the README and the docs, rendered from ``results/`` so that no typed sentence can drift.

A document marks each place where measured numbers go with a block::

    <!-- generated: scorecard -->
    …rendered here…
    <!-- end generated -->

and :func:`regenerate` replaces every block's body by what its renderer (:data:`RENDERERS`) makes of the committed
results: ``calibration.json`` (``python -m hnclip_core calibrate``), ``scorecard.json`` (chapter 5's verdicts,
copied there by ``make notebooks``), ``timings.json`` (``benchmarks/time_commands.py``), the other benchmarks'
``--json`` files (:data:`PRODUCERS`), the paper data and the shipped toy's record. Outside the blocks a document
states no measured number (``tests/test_generated_docs.py`` checks both). ``make docs`` rewrites the files;
``--check`` only says which are stale.
"""

from __future__ import annotations

import argparse
import inspect
import re
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from statistics import fmean, median, stdev

from ..files import write_text_atomically
from ..losses import token_loss
from ..toy.model import shipped_toy_record
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
from .results_files import Results
from .scorecard import CALIBRATION, CLAIMS, DAMAGE_LIMITATION, STATUSES, Verdict, calibration_view, design_targets
from .tidy import read_results

REPOSITORY = Path(__file__).resolve().parents[2]
#: The documents with generated blocks, relative to the repository.
DOCUMENTS = ("README.md", "docs/results.md", "docs/frameworks.md", "docs/tutorial.md", "docs/batch-runs.md",
             "docs/benchmarks.md", "docs/package.md")
BLOCK = re.compile(r"(?P<open><!-- generated: (?P<name>[\w-]+) -->\n)(?P<body>.*?)(?P<close><!-- end generated -->)",
                   re.DOTALL)
#: The README's headline claims, in its order.
HEADLINE = ("infonce_saturates", "geometry", "hn_stays_active", "gradient_ratio", "beats_infonce", "beats_zero_shot")
METHODS = {"clip": "InfoNCE (`clip`)", "hn+tok": "HN-CLIP (`hn+tok`)"}


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
    targets = design_targets(calibration_view(read_results(calibration=results.path("calibration.json"))))
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
    record = shipped_toy_record()
    measured_on = results.calibration["base_config"].get("checkpoint")
    if measured_on and measured_on != record["file"]:
        raise ValueError(f"results/calibration.json was measured on {measured_on}, not on the shipped toy "
                         f"{record['file']}: re-run `python -m hnclip_core calibrate`")
    regime = results.calibration["zero_shot_regime"]

    def percent(x: float) -> str:
        return f"{100 * x:.0f} %"

    return (f"The shipped toy: `{record['file']}` (recipe digest `{record['recipe_digest']}`, "
            f"{record['parameters'] / 1e6:.1f} M parameters), pretrained through the plain camera. Zero-shot on the "
            f"embedded benchmark (camera `{results.calibration['benchmark']['camera']}`): "
            f"{percent(regime['solved_share'])} of random "
            f"16-pair micro-batches solved (L_CLIP < 1e-3), {percent(regime['twin_error_share'])} of top-1 errors on "
            f"near-twins, {percent(regime['own_family_top1'])} of top-1 in the query's own family, average R@1 "
            f"{fmean([regime['t2i_r1'], regime['i2t_r1']]):.1f}.")


def real_batches_caption(results: Results) -> str:
    """The caption of the README's figure (chapter 2's random micro-batches), with the share of solved micro-batches
    the calibration measured on the initial model beside the paper's (Fig. 4)."""
    solved = results.calibration["zero_shot_regime"]["solved_share"]
    camera = results.calibration["benchmark"]["camera"]
    paper_solved = paper.SATURATION["solved_clip_first_epoch"]
    how_many = "most" if solved > 0.5 else "a minority"
    return (f"*Chapter 2, before any fine-tuning: random 16-pair micro-batches of the synthetic benchmark (camera "
            f"`{camera}`) under the shipped toy Long-CLIP. InfoNCE (blue) is below the \"solved\" level 10⁻³ on "
            f"{how_many} of them ({100 * solved:.0f} % of random micro-batches of the train split in "
            f"`results/calibration.json`; the paper: {100 * paper_solved:.0f} % within epoch 1, Fig. 4). L_HN (orange) "
            f"stays above that level on the same batches; the right panel shows which batches InfoNCE still works on, "
            f"by their most similar caption pair.*")


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
    allowed = tolerances(results.path("calibration.json"))
    return (f"From the committed calibration: {allowed['recall']:.1f} points for a Recall@1; for the share of "
            f"micro-batches solved under InfoNCE / under L_HN {allowed['micro_solved_clip']:.2f} / "
            f"{allowed['micro_solved_hn']:.2f}, and for the share of whole optimizer steps solved "
            f"{allowed['solved_clip']:.2f} / {allowed['solved_hn']:.2f}.")


def measured_under(record: Mapping) -> str:
    """The conditions a benchmark's ``--json`` record (``benchmarks/conditions.py``) was measured under, in words."""
    machine = record["machine"]
    threads = _count(machine["torch_threads"], "torch thread")
    text = (f"{machine['cores']} CPU cores ({machine['processor']}, {threads}, "
            f"torch {machine['torch']}), {record['date']}, commit `{(record.get('commit') or 'unknown')[:7]}`"
            + (" with uncommitted changes" if record.get("work_tree_modified") else ""))
    load = record.get("load_average_at_start")
    if load:
        text += f"; load average {load[0]:.2f} when it started"
    if record.get("note"):
        text += f" ({record['note']})"
    return text


def _count(n: int, word: str) -> str:
    return f"{n} {word}{'s' * (n != 1)}"


def _gallery(n: int) -> str:
    return f"{n // 1000}k" if n % 1000 == 0 else str(n)


def recall_speed(results: Results) -> str:
    """``benchmarks/recall_speed.py``: the median time of ``recall_at_k`` and of its score product per gallery size
    and width, and the product's share at the largest case."""
    record = results.recall_speed
    rows, shares = [], {}
    for case in record["cases"]:
        total, product = median(case["recall_at_k_seconds"]), median(case["matmul_seconds"])
        shares[case["n"], case["dim"]] = product / total
        rows.append([_gallery(case["n"]), case["dim"], f"{total:.2f} s", f"{product:.2f} s",
                     f"{total - product:.2f} s"])
    n, dim = max(shares)
    return (f"Medians of {record['repeats']} interleaved repeats (`results/recall_speed.json`), measured on "
            f"{measured_under(record)}:\n\n"
            + markdown_table(["N × N", "D", "`recall_at_k`", "of which the score product", "ranking"], rows)
            + f"\n\nAt N = {_gallery(n)} and D = {dim} the score product is {100 * shares[n, dim]:.0f} % of the time.")


def train_throughput(results: Results) -> str:
    """``benchmarks/train_throughput.py``: the toy's training img/s per objective, its time relative to InfoNCE, and
    how much InfoNCE's own rounds varied (what a ratio near 1 can be told apart from)."""
    record = results.train_throughput
    batch = record["micro_batch_size"] * record["accumulation_steps"]
    seconds = record["seconds"]
    base = median(seconds["clip"])
    parts = []
    for name, runs in seconds.items():
        part = f"`{name}` {batch * record['steps'] / median(runs):.1f} img/s"
        if name != "clip":
            part += f" (×{median(runs) / base:.3f} the time of `clip`)"
        parts.append(part)
    clip = seconds["clip"]
    return (f"Effective batch {batch} = {record['micro_batch_size']} × {record['accumulation_steps']} "
            f"({record['accumulation']}), {record['rounds']} interleaved rounds of {record['steps']} steps, medians "
            f"(`results/train_throughput.json`), measured on {measured_under(record)}: {', '.join(parts)}. "
            f"The rounds of `clip` alone took {min(clip):.2f}–{max(clip):.2f} s, a spread of "
            f"{100 * (max(clip) - min(clip)) / base:.0f} % of their median: smaller time differences are not "
            f"resolved by this run.")


#: The largest value glibc's dynamic mmap threshold grows to on 64-bit Linux (DEFAULT_MMAP_THRESHOLD_MAX).
GLIBC_MMAP_THRESHOLD_MAX = 32 * 2**20
DEFAULT_MAX_ELEMENTS = inspect.signature(token_loss).parameters["max_elements"].default


def _setting_label(row: Mapping) -> str:
    if row["setting"] == "unchunked":
        return "unchunked"
    return f"`{row['setting']}`" + (" (default)" if row["max_elements"] == DEFAULT_MAX_ELEMENTS else "")


def _good_runs(row: Mapping) -> list[dict]:
    return [] if row["skipped"] else [r for r in row["runs"] if "error" not in r]


def token_loss_memory(results: Results) -> str:
    """``benchmarks/token_loss_memory.py``: peak extra memory and time of L_tok per chunk setting, the agreement of
    their losses and gradients, the default's saving over the unchunked tensor, and glibc's fragmentation."""
    record = results.token_loss_memory
    measured = record["default"]
    b, p, t = measured["batch"], measured["patches"], measured["tokens"]
    precision = "bf16" if measured["autocast"] else "fp32"
    rows, peaks, times = [], {}, {}
    for row in measured["settings"]:
        good = _good_runs(row)
        if good:
            peaks[row["setting"]] = max(r["extra_bytes"] for r in good)
            times[row["setting"]] = median(r["seconds"] for r in good)
            memory, seconds = f"{peaks[row['setting']] / 1e9:.2f} GB", f"{times[row['setting']]:.0f} s"
        else:
            memory = seconds = row["skipped"] or (row["runs"][-1]["error"] if row["runs"] else "not run")
        rows.append([_setting_label(row), row["images_per_chunk"], memory, seconds])
    memory_rule = ("peak RSS growth, with `MALLOC_MMAP_THRESHOLD_` = " + str(measured["malloc_mmap_threshold"])
                   if measured["device"] == "cpu" else "`max_memory_allocated` growth")
    text = (f"The full B×B×P×T similarity tensor would be {b * b * p * t * measured['element_bytes'] / 1e9:.2f} GB "
            f"in {precision}. One process per setting, {_count(measured['rounds'], 'round')} on device "
            f"{measured['device']} (memory: {memory_rule}; `results/token_loss_memory.json`), measured on "
            f"{measured_under(measured)}:\n\n"
            + markdown_table(["setting", "images / chunk", "peak extra memory", "time"], rows))
    differences = [row["max_abs_difference"] for row in measured["settings"]
                   if row["max_abs_difference"] and row["setting"] != measured["reference"]]
    if differences:
        scale = measured["reference_scale"]
        loss = max(d["loss"] for d in differences)
        gradient = max(max(d["image"], d["text"]) for d in differences)
        largest = max(scale["image"], scale["text"])
        text += (f"\n\nAgainst the {measured['reference']} run: loss "
                 + ("identical" if loss == 0 else f"within {loss:.1e}")
                 + f", input gradients within {gradient:.1e} (of values up to {largest:.1e}).")
    default = next((row["setting"] for row in measured["settings"] if row["max_elements"] == DEFAULT_MAX_ELEMENTS),
                   None)
    if "unchunked" in peaks and default in peaks:
        text += (f" The default chunking needs {peaks['unchunked'] / peaks[default]:.0f}× less memory than forming "
                 f"the tensor at once, in ×{times[default] / times['unchunked']:.2f} its time.")
    return text + "\n\n" + _glibc_fragmentation(record)


def _glibc_fragmentation(record: Mapping) -> str:
    glibc = record.get("glibc_dynamic_threshold")
    if glibc is None:
        return "With glibc's default malloc settings (`--glibc-dynamic-threshold`): not measured."
    default = {row["setting"]: row for row in record["default"]["settings"]}
    sentences = []
    for row in glibc["settings"]:
        good = _good_runs(row)
        if not good:
            continue
        under = ", below the 32 MiB that glibc's mmap threshold grows to, so served from its heap" \
            if row["chunk_bytes"] < GLIBC_MMAP_THRESHOLD_MAX else ""
        sentence = (f"the setting {_setting_label(row)} ({_count(row['images_per_chunk'], 'image')} per chunk, "
                    f"chunks of {row['chunk_bytes'] / 1e6:.1f} MB{under}) grows "
                    f"RSS by {max(r['extra_bytes'] for r in good) / 1e9:.2f} GB")
        same = _good_runs(default.get(row["setting"], {"skipped": True}))
        if same:
            sentence += (f", against {max(r['extra_bytes'] for r in same) / 1e9:.2f} GB with every large allocation "
                         f"its own mapping: the live tensors are the same, the rest is heap fragmentation")
        sentences.append(sentence)
    if not sentences:
        return "With glibc's default malloc settings (`--glibc-dynamic-threshold`): no setting ran."
    return (f"With glibc's default malloc settings (`--glibc-dynamic-threshold`, measured {glibc['date']}): "
            + "; ".join(sentences) + ".")


def gpu_paper(results: Results) -> str:
    """The paper's Table A3 throughputs of plain fine-tuning and of HN-CLIP (from the paper data) and their ratio."""
    plain, hn_clip = paper.THROUGHPUT["longclip"]["clip"], paper.THROUGHPUT["longclip"]["hn"]
    return (f"The paper's Table A3: {plain:g} img/s plain fine-tuning, {hn_clip:g} img/s HN-CLIP on one Ascend "
            f"910B, i.e. ×{plain / hn_clip:.3f} the time.")


def _gb(n_bytes: float) -> str:
    return f"{n_bytes / 1e9:.2f} GB"


def install_size(results: Results) -> str:
    """``benchmarks/install_size.py``: time and size of a new venv with the core, and with the ``[lab]`` extra; what
    torch and its requirements take of it; the install times with torch already there."""
    record = results.install_size
    cases = record["cases"]
    machine = record["machine"]
    labels = {"core": f"the core (`pip install {record['wheel']}`)",
              "lab": "the core and the extra (`pip install 'hnclip-core[lab] @ file://…whl'`)"}
    rows = []
    for case, label in labels.items():
        measured = cases.get(case)
        rows.append([label] + ([f"{measured['install_seconds']:.0f} s", _gb(measured["site_packages_bytes"]),
                                measured["distributions"], _gb(measured["torch_and_requirements_bytes"])]
                               if measured else ["not measured"] * 4))
    torch = next((cases[c] for c in ("core", "lab") if c in cases), None)
    torch_words = (f"torch {torch['torch']}, {_gb(torch['torch_and_requirements_bytes'])} with the libraries it "
                   f"requires" if torch else "torch not measured")
    text = (f"Measured on {measured_under(record)}. Python {machine['python']}, pip {record['pip']} with its index on "
            f"local disk, so no download; {torch_words}. Sizes are `du` of the new venv's site-packages "
            f"(`results/install_size.json`):\n\n"
            + markdown_table(["a new venv with", "installed in", "site-packages", "distributions",
                              "of which torch and its requirements"], rows))
    if "core" in cases and "lab" in cases:
        core, lab = cases["core"], cases["lab"]
        text += (f"\n\nBeside torch, the core adds "
                 f"{_gb(core['site_packages_bytes'] - core['torch_and_requirements_bytes'])} and the extra another "
                 f"{_gb(lab['site_packages_bytes'] - core['site_packages_bytes'])} (peft alone brings transformers "
                 f"and accelerate).")
    with_torch = [f"{cases[c]['install_seconds']:.0f} s {words}" if c in cases else f"not measured {words}"
                  for c, words in (("core-with-torch", "for the core"), ("lab-with-torch", "with the extra"))]
    return text + f" With torch already there, installing the rest took {' and '.join(with_torch)}."


RENDERERS: Mapping[str, Callable[[Results], str]] = {
    "headline": headline, "scorecard-summary": scorecard_summary, "recall": recall,
    "design-targets": design_targets_table, "scorecard": scorecard, "toy": toy,
    "real-batches-caption": real_batches_caption,
    "plug-and-play": plug_and_play, "throughput": throughput, "timings": timings, "chapter-memory": chapter_memory,
    "test-tolerances": test_tolerances, "ablation-timings": ablation_timings, "recall-speed": recall_speed,
    "train-throughput": train_throughput, "token-loss-memory": token_loss_memory, "gpu-paper": gpu_paper,
    "install-size": install_size,
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
