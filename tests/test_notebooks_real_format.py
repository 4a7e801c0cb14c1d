"""Every chapter notebook, run headless by the tutorial runner on real-format data with a Long-CLIP-format checkpoint.

The committed notebooks are executed at the embedded default by nbval (``make test``); this test covers the
other path: a user's own checkpoint and benchmark files. The data are small folders in DOCCI's release format
(training and in-domain evaluation) and in Urban-1K's (the transfer evaluation of chapters 3–4), written here;
the checkpoint is the tiny random one of ``conftest.py``.
"""

import json
from pathlib import Path

import nbformat
import pytest

from hnclip_core.data import load_pairs
from hnclip_core.replication.ablations import collect
from hnclip_core.replication.batch import run_grid
from hnclip_core.replication.tidy import read_results
from hnclip_core.replication.tutorial import chapter_notebooks, run_tutorial
from hnclip_core.toy.synthetic import SyntheticConfig, write_synthetic_benchmark

pytestmark = pytest.mark.slow  # every chapter executed on real-format data: minutes

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"


@pytest.fixture(scope="module")
def docci_root(tmp_path_factory) -> Path:
    """32 train / 16 test pairs in DOCCI's format (docci_descriptions.jsonlines + images/)."""
    config = SyntheticConfig(seed=11, num_train_families=8, num_test_families=4, num_val_families=4, image_size=32)
    return write_synthetic_benchmark(tmp_path_factory.mktemp("docci") / "docci", config)


@pytest.fixture(scope="module")
def urban_root(tmp_path_factory, docci_root) -> Path:
    """The 16 test pairs again, in Urban-1K's format (image/<id>.jpg, caption/<id>.txt), ids 1…16."""
    root = tmp_path_factory.mktemp("urban1k") / "Urban1k"
    (root / "image").mkdir(parents=True)
    (root / "caption").mkdir()
    for number, pair in enumerate(load_pairs("docci", docci_root, "test"), start=1):
        pair.load_image().save(root / "image" / f"{number}.jpg", quality=95)
        (root / "caption" / f"{number}.txt").write_text(pair.caption + "\n", encoding="utf-8")
    return root


@pytest.fixture(scope="module")
def tutorial_run(tmp_path_factory, tiny_checkpoint, docci_root, urban_root):
    output = tmp_path_factory.mktemp("tutorial")
    overrides = {
        "backbone": str(tiny_checkpoint), "dataset": "docci", "data_root": str(docci_root),
        "eval_dataset": "urban1k", "eval_data_root": str(urban_root), "device": "cpu",
        "micro_batch_size": 4, "accumulation_steps": 2, "epochs": 1, "dynamics_epochs": 1,
        "train_fraction": 1.0, "dynamics_fraction": 1.0, "in_batch_size": 8,
        "recipe": {"epochs": 1, "train_fraction": 1.0, "warmup_steps": 1},
        "grids": {"gamma": {"gamma": [0.0, 0.5]}, "fractions": {"train_fraction": [0.5, 1.0]}, "seeds": {"seed": [0]},
                  "temperature": {"logit_scale": [25.0], "gamma": [0.0, 1.0]}},
        "transfer_dataset": "docci", "transfer_data_root": str(docci_root),
    }
    return output, run_tutorial(output, NOTEBOOKS, overrides, progress=False)


def test_every_chapter_runs_on_real_format_data(tutorial_run):
    output, summary = tutorial_run
    assert [c["notebook"] for c in summary["chapters"]] == [p.name for p in chapter_notebooks(NOTEBOOKS)]
    for chapter in summary["chapters"]:
        executed = nbformat.read(output / "notebooks" / chapter["notebook"], as_version=4)
        errors = [o for cell in executed.cells for o in cell.get("outputs", []) if o.get("output_type") == "error"]
        assert not errors, chapter["notebook"]
        parameters = executed.metadata.papermill.parameters
        assert parameters["interactive"] is False and parameters["output_dir"] == str(output)


def test_chapters_used_the_given_checkpoint_and_both_formats(tutorial_run, tiny_checkpoint):
    output, _ = tutorial_run
    geometry = json.loads((output / "geometry.json").read_text())
    assert geometry["dataset"] == "docci" and geometry["geometry"]["num_captions"] == 16
    fine_tuning = json.loads((output / "fine_tuning.json").read_text())
    assert fine_tuning["parameters"]["eval_dataset"] == "urban1k"
    for run in fine_tuning["runs"].values():
        config = json.loads((Path(run["run_dir"]) / "history.json").read_text())["config"]
        assert config["checkpoint"] == str(tiny_checkpoint)
        assert config["dataset"] == "docci" and config["eval_dataset"] == "urban1k"
        assert [h["epoch"] for h in run["history"]] == [0, 1]
    saturation = json.loads((output / "saturation.json").read_text())
    assert saturation["real_batch"]["batch_size"] == 4
    assert saturation["dynamics"]["diagnostics"][0]["measurements"] >= 1
    ablations = json.loads((output / "ablations.json").read_text())
    assert set(ablations["gamma"]) == {"0", "0.5"}
    assert set(ablations["fractions"]) == {"0.5", "1"} and set(ablations["temperature"]["25"]) == {"0", "1"}
    assert set(ablations["transfer"]["docci"]["hn+tok"]) == {"urban1k", "docci"}
    assert sorted(p.name for p in (output / "figures").glob("*.png"))  # figures were written


def test_unknown_or_mistyped_tutorial_parameter_is_refused_before_running(tmp_path):
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['gama'\]"):
        run_tutorial(tmp_path, NOTEBOOKS, {"gama": 0.5}, progress=False)
    with pytest.raises(ValueError, match="parameter 'epochs' expects int"):
        run_tutorial(tmp_path, NOTEBOOKS, {"epochs": "three"}, progress=False)
    assert not (tmp_path / "notebooks").exists()


def test_an_ablation_grid_runs_on_real_format_data_and_is_collected(tmp_path, monkeypatch, tiny_checkpoint,
                                                                     docci_root, urban_root):
    """The ablation-run notebook as a grid point: DOCCI-format training, Urban-1K-format transfer evaluation
    (the real settings DCI→DOCCI / DOCCI→Long-DCI are the same parameters), relative paths taken from the
    directory the grid is launched in, and one run cache shared by the points."""
    monkeypatch.chdir(tmp_path)
    spec = {
        "notebook": str(NOTEBOOKS / "ablation_run.ipynb"),
        "output_dir": "grids/transfer",
        "parameters": {
            "backbone": str(tiny_checkpoint), "dataset": "docci", "data_root": str(docci_root), "device": "cpu",
            "epochs": 1, "train_fraction": 1.0, "micro_batch_size": 4, "accumulation_steps": 2,
            "transfer": {"urban1k": str(urban_root)}, "runs_dir": "cache",
        },
        "grid": {"objective": ["clip", "hn+tok"]},
    }
    results = run_grid(spec, progress=False, quiet=True)
    assert [r.status for r in results] == ["ok", "ok"], [r.error for r in results]
    assert len(list((tmp_path / "cache").glob("*/history.json"))) == 2  # runs_dir resolved from the launch dir
    collected = collect(tmp_path / "grids", ["transfer"])
    transfer = collected["transfer"]["docci"]
    assert set(transfer) == {"clip", "hn+tok"} and set(transfer["hn+tok"]) == {"docci", "urban1k"}
    run = json.loads((tmp_path / "grids" / "transfer" / "objective=hn+tok" / "run.json").read_text())
    assert run["result"]["config"]["checkpoint"] == str(tiny_checkpoint)
    assert run["transfer"]["urban1k"]["last"]["mean_r1"] == transfer["hn+tok"]["urban1k"]["last"]["mean_r1"]
    path = tmp_path / "ablations.json"
    path.write_text(json.dumps(collected))
    cross = read_results(ablations=path).where(study="transfer", dataset="docci", eval_dataset="urban1k").last()
    assert cross.values("mean_r1", "objective") == {o: transfer[o]["urban1k"]["last"]["mean_r1"]
                                                    for o in ("clip", "hn+tok")}
    assert cross.column("epoch") == [1]  # the cross-domain evaluation is of the last epoch
