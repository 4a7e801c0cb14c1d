"""The README's and docs' measured numbers are rendered from results/, and nothing outside the rendered blocks is a
measured number typed by hand."""

import importlib.util
import json
import shutil
from pathlib import Path

import pytest

from hnclip_core.replication import generated_docs
from hnclip_core.replication.generated_docs import DOCUMENTS, REPOSITORY, regenerate, without_generated
from hnclip_core.replication.results_files import PRODUCERS, Results
from tests.prose_numbers import stale_numbers_in_document

RESULTS = REPOSITORY / "results"


@pytest.mark.parametrize("name", DOCUMENTS)
def test_committed_documents_are_rendered_from_the_committed_results(name):
    text = (REPOSITORY / name).read_text()
    assert generated_docs.BLOCK.search(text), f"{name} has no generated block"
    assert regenerate(text, Results(RESULTS)) == text, f"{name} is stale: run `make docs`"


#: Inputs only some documents name: the benchmarks' settings (shapes, sizes, rounds), the positional rows that
#: ``longclip`` keeps frozen.
DOCUMENT_INPUTS = {"docs/benchmarks.md": sorted(str(p.relative_to(REPOSITORY)) for p in
                                                (REPOSITORY / "benchmarks").glob("*.py")),
                   "docs/package.md": ["hnclip_core/longclip.py"]}


@pytest.mark.parametrize("name", DOCUMENTS)
def test_typed_prose_of_the_documents_states_no_measured_number(name):
    typed = without_generated((REPOSITORY / name).read_text())
    # inputs a document may name: the make settings, the ablation grids' parameters and its own scripts' settings
    sources = ("Makefile", "pyproject.toml", "hnclip_core/replication/ablations.py", *DOCUMENT_INPUTS.get(name, ()))
    settings = "\n".join((REPOSITORY / source).read_text() for source in sources)
    stale = stale_numbers_in_document(typed, inputs=settings)
    assert not stale, f"{name}: render these from results/ (a generated block):\n" + "\n".join(map(str, stale))


@pytest.fixture
def results_copy(tmp_path) -> Path:
    for name in PRODUCERS:
        if (RESULTS / name).is_file():  # timings.json exists only once benchmarks/time_commands.py has run
            shutil.copy(RESULTS / name, tmp_path / name)
    return tmp_path


def test_a_changed_result_changes_the_documents(results_copy):
    path = results_copy / "calibration.json"
    calibration = json.loads(path.read_text())
    for run in calibration["runs"]:
        run["clip"]["last"]["mean_r1"] = 12.34
    path.write_text(json.dumps(calibration))
    scorecard = json.loads((results_copy / "scorecard.json").read_text())
    scorecard[0]["status"] = "not measured"
    (results_copy / "scorecard.json").write_text(json.dumps(scorecard))
    readme, results = ((REPOSITORY / name).read_text() for name in DOCUMENTS[:2])
    changed = regenerate(results, Results(results_copy))
    assert "12.3" in changed and "12.34, 12.34, 12.34" in changed and changed != results
    assert "not measured" in regenerate(readme, Results(results_copy)) + changed


def test_an_unknown_block_and_a_missing_file_are_named(tmp_path):
    with pytest.raises(KeyError, match="unknown generated block 'nonsense'"):
        regenerate("<!-- generated: nonsense -->\n<!-- end generated -->", Results(RESULTS))
    with pytest.raises(FileNotFoundError, match="`make notebooks` writes it"):
        regenerate("<!-- generated: scorecard -->\nold\n<!-- end generated -->", Results(tmp_path))


def test_a_calibration_of_another_checkpoint_is_refused(results_copy):
    path = results_copy / "calibration.json"
    calibration = json.loads(path.read_text())
    calibration["base_config"]["checkpoint"] = "toy-longclip-0000000000.pt"
    path.write_text(json.dumps(calibration))
    with pytest.raises(ValueError, match="not on the shipped toy"):
        regenerate("<!-- generated: toy -->\n<!-- end generated -->", Results(results_copy))


def test_check_reports_a_stale_document(results_copy, monkeypatch, tmp_path, capsys):
    folder = tmp_path / "repository"
    for name in DOCUMENTS:
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(without_generated((REPOSITORY / name).read_text()))
    monkeypatch.setattr(generated_docs, "REPOSITORY", folder)
    assert generated_docs.main(["--check", "--results-dir", str(results_copy)]) == 1
    assert "stale: README.md, docs/results.md" in capsys.readouterr().out
    assert generated_docs.main(["--results-dir", str(results_copy)]) == 0
    assert generated_docs.main(["--check", "--results-dir", str(results_copy)]) == 0


def _time_commands(monkeypatch):
    """benchmarks/time_commands.py as ``python benchmarks/time_commands.py`` loads it: its folder on the path."""
    monkeypatch.syspath_prepend(str(REPOSITORY / "benchmarks"))
    spec = importlib.util.spec_from_file_location("time_commands", REPOSITORY / "benchmarks" / "time_commands.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_measured_timings_render_the_tutorials_blocks(results_copy, monkeypatch):
    output = ("collected\n===== 598 passed, 1 skipped, 2 warnings in 545.32s (0:09:05) =====\n"
              "make[1]: leaving\n========== 23 passed in 11.02s ==========\n")
    runs = _time_commands(monkeypatch).pytest_runs(output)
    assert runs == [{"counts": {"passed": 598, "skipped": 1, "warnings": 2}, "seconds": 545.32},
                    {"counts": {"passed": 23}, "seconds": 11.02}]
    machine = {"cores": 2, "processor": "x86_64", "torch": "2.14.1"}
    chapters = [{"notebook": f"0{i}_chapter.ipynb", "seconds": 10.0 * i, "peak_kernel_memory_mb": 1000 + i}
                for i in range(1, 6)]
    (results_copy / "timings.json").write_text(json.dumps({"commands": {
        "make test": {"commit": "abcdef0123", "env": {}, "wall_seconds": 654.0, "peak_memory_gb": 2.14,
                      "pytest": runs, "import_memory_mb": 840, "date": "2026-12-03", "machine": machine},
        "make tutorial": {"commit": "abcdef0123", "env": {}, "wall_seconds": 510.0, "peak_memory_gb": 2.07,
                          "pytest": [], "import_memory_mb": 840, "chapters": chapters, "date": "2026-12-03",
                          "machine": machine}}}))
    text = regenerate((REPOSITORY / "docs/tutorial.md").read_text(), Results(results_copy))
    assert "**10.9 min**" in text and "598 passed, 1 skipped, 2 warnings in 9.1 min" in text
    assert "chapters 10 s, 20 s, 30 s, 40 s, 50 s" in text and "**8.5 min**" in text
    assert "| peak kernel memory | 1.00 GB |" in text and "0.16 GB |" in text  # 1005 MB less the import's 840
    assert "has not been timed yet" not in text
    assert "has not been timed yet" in regenerate("<!-- generated: timings -->\n<!-- end generated -->",
                                                  Results(results_copy / "not-measured"))


def _edit(results_dir: Path, name: str, change) -> None:
    path = results_dir / name
    record = json.loads(path.read_text())
    change(record)
    path.write_text(json.dumps(record))


def test_measured_benchmarks_render_their_blocks(results_copy):
    def recall(record):
        last = record["cases"][-1]
        last["recall_at_k_seconds"], last["matmul_seconds"] = [9.87] * 3, [1.23] * 3

    def train(record):
        record.update(micro_batch_size=16, accumulation_steps=8, steps=2)
        record["seconds"] = {"clip": [1.0, 1.1, 0.9], "hn": [2.0] * 3, "hn+tok": [4.0] * 3}

    def token(record):
        next(row for row in record["default"]["settings"] if row["setting"] == "unchunked")["runs"] = \
            [{"extra_bytes": 12.34e9, "seconds": 321.0, "loss": 1.0}]
        del record["glibc_dynamic_threshold"]

    def install(record):
        record["cases"]["core"]["install_seconds"] = 123.4
        del record["cases"]["lab-with-torch"]

    for name, change in (("recall_speed.json", recall), ("train_throughput.json", train),
                         ("token_loss_memory.json", token), ("install_size.json", install)):
        _edit(results_copy, name, change)
    benchmarks = regenerate((REPOSITORY / "docs/benchmarks.md").read_text(), Results(results_copy))
    assert "| 9.87 s | 1.23 s | 8.64 s |" in benchmarks and "the score product is 12 % of the time" in benchmarks
    assert "`clip` 256.0 img/s, `hn` 128.0 img/s (×2.000 the time of `clip`)" in benchmarks
    assert "0.90–1.10 s, a spread of 20 %" in benchmarks
    assert "| unchunked | 128 | 12.34 GB | 321 s |" in benchmarks
    assert "(`--glibc-dynamic-threshold`): not measured." in benchmarks
    package = regenerate((REPOSITORY / "docs/package.md").read_text(), Results(results_copy))
    assert "| 123 s |" in package and "not measured with the extra" in package
