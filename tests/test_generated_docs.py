"""The README's and docs' measured numbers are rendered from results/, and nothing outside the rendered blocks is a
measured number typed by hand."""

import json
import shutil
from pathlib import Path

import pytest

from hnclip_core.replication import generated_docs
from hnclip_core.replication.generated_docs import DOCUMENTS, REPOSITORY, Results, regenerate, without_generated
from tests.prose_numbers import stale_numbers_in_document

RESULTS = REPOSITORY / "results"


@pytest.mark.parametrize("name", DOCUMENTS)
def test_committed_documents_are_rendered_from_the_committed_results(name):
    text = (REPOSITORY / name).read_text()
    assert generated_docs.BLOCK.search(text), f"{name} has no generated block"
    assert regenerate(text, Results(RESULTS)) == text, f"{name} is stale: run `make docs`"


@pytest.mark.parametrize("name", DOCUMENTS)
def test_typed_prose_of_the_documents_states_no_measured_number(name):
    typed = without_generated((REPOSITORY / name).read_text())
    settings = "\n".join((REPOSITORY / name).read_text() for name in ("Makefile", "pyproject.toml"))
    stale = stale_numbers_in_document(typed, inputs=settings)
    assert not stale, f"{name}: render these from results/ (a generated block):\n" + "\n".join(map(str, stale))


@pytest.fixture
def results_copy(tmp_path) -> Path:
    for name in generated_docs.PRODUCERS:
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
