"""Notebook parameters → Experiment: validation messages, the load-or-train run cache, and its helpers."""

import dataclasses
import json

import pytest
import torch

from hnclip_core.replication import experiment as experiment_module
from hnclip_core.replication.experiment import Experiment, run_directory
from hnclip_core.replication.objectives import objective_parameters
from hnclip_core.toy import TOY_FINETUNE
from hnclip_core.toy.synthetic import SyntheticConfig
from hnclip_core.train import TrainConfig


def tiny_experiment(tiny_checkpoint, tiny_benchmark, tmp_path, **changes):
    values = dict(
        backbone=str(tiny_checkpoint), dataset="synthetic", data_root=str(tiny_benchmark), device="cpu",
        epochs=1, lr=1e-3, micro_batch_size=4, accumulation_steps=4, output_dir=str(tmp_path / "out"),
        progress=False,
    )
    values.update(changes)
    return Experiment(**values)


def test_parameters_are_validated_with_clear_messages(tiny_checkpoint, tmp_path):
    with pytest.raises(TypeError, match=r"parameter 'epochs' must be int, got '3' \(str\)"):
        Experiment(epochs="3")
    with pytest.raises(TypeError, match="parameter 'seed' must be int, got True"):
        Experiment(seed=True)
    Experiment(lr=1)  # an int is a valid float
    with pytest.raises(ValueError, match="unknown dataset 'docc'; valid names: docci, dci"):
        Experiment(dataset="docc")
    with pytest.raises(ValueError, match="dataset 'docci' needs data_root"):
        Experiment(dataset="docci")
    with pytest.raises(ValueError, match="dataset 'urban1k' needs eval_data_root"):
        Experiment(eval_dataset="urban1k")
    with pytest.raises(FileNotFoundError, match="neither 'toy' nor an existing checkpoint"):
        Experiment(backbone=str(tmp_path / "longclip-L.pt"))
    with pytest.raises(ValueError, match="train_fraction"):  # TrainConfig's own checks apply
        Experiment(train_fraction=0.0)
    with pytest.raises(ValueError, match=r"unknown parameter\(s\) \['gama'\]; valid: \['backbone'"):
        Experiment.from_parameters({"gama": 0.5})


def test_learning_rate_follows_the_backbone(tiny_checkpoint):
    assert Experiment().learning_rate == TOY_FINETUNE["lr"]  # the toy's calibrated preset
    assert Experiment(backbone=str(tiny_checkpoint)).learning_rate == 2e-6  # the paper's recipe
    assert Experiment(backbone=str(tiny_checkpoint), lr=1e-5).learning_rate == 1e-5


def test_output_dir_falls_back_to_the_environment_variable(tmp_path, monkeypatch):
    monkeypatch.setenv(experiment_module.OUTPUT_DIR_VARIABLE, str(tmp_path / "from-env"))
    assert Experiment().output_path == tmp_path / "from-env"
    assert Experiment(output_dir=str(tmp_path / "given")).output_path == tmp_path / "given"


def settings(objective="hn", **changes):
    config = TrainConfig(checkpoint="a.pt", **{**objective_parameters(objective), **changes})
    return {**dataclasses.asdict(config), "objective": objective, "framework": "longclip",
            "caption_augmentation": "none", "segment_file": None}


def test_run_directory_depends_on_what_the_run_computes_only(monkeypatch):
    base = run_directory("runs", settings())
    assert base == run_directory("runs", settings(progress=True, device="cpu"))
    assert base != run_directory("runs", settings(gamma=0.25))
    assert base != run_directory("runs", settings(logit_scale=50.0))
    assert base.name.startswith("hn-") and run_directory("runs", settings("hn+tok")).name.startswith("hn_tok-")
    # a run is named by what it trains: "hn+tok" at γ = 0 is "tok"
    assert run_directory("runs", settings("hn+tok", gamma=0.0)) == run_directory("runs", settings("tok"))
    # a new version of the run cache trains every run anew
    monkeypatch.setattr(experiment_module, "RUN_CACHE_VERSION", experiment_module.RUN_CACHE_VERSION + 1)
    assert run_directory("runs", settings()) != base


def test_a_new_default_benchmark_trains_the_runs_that_read_it_by_name_anew(monkeypatch, tmp_path):
    """A run of the synthetic benchmark without a data root reads SyntheticConfig()'s benchmark: when a default of it
    changes (the camera), the run is another run; a run with its own data root is not affected."""
    by_name = run_directory("runs", settings(dataset="synthetic"))
    rooted = run_directory("runs", settings(dataset="synthetic", data_root=str(tmp_path)))
    monkeypatch.setattr(experiment_module, "SyntheticConfig", lambda: SyntheticConfig(camera="plain"))
    assert run_directory("runs", settings(dataset="synthetic")) != by_name
    assert run_directory("runs", settings(dataset="synthetic", data_root=str(tmp_path))) == rooted


def test_run_is_load_or_train_and_resumes_an_interrupted_run(tiny_checkpoint, tiny_benchmark, tmp_path, monkeypatch):
    exp = tiny_experiment(tiny_checkpoint, tiny_benchmark, tmp_path)
    first = exp.run(objective="hn")
    assert [h["epoch"] for h in first["history"]] == [0, 1]

    calls = []
    real_train = experiment_module.train
    monkeypatch.setattr(experiment_module, "train", lambda config, zero_shot=None, hooks=None: calls.append(config)
                        or real_train(config, zero_shot=zero_shot, hooks=hooks))
    again = exp.run(objective="hn")
    assert calls == [] and again["history"] == first["history"]  # read back, not retrained

    other = exp.run(objective="clip")  # another configuration trains, in its own folder
    assert len(calls) == 1 and other["run_dir"] != first["run_dir"]

    # An interrupted run (history.json of fewer epochs than asked, state on disk) is resumed.
    longer = tiny_experiment(tiny_checkpoint, tiny_benchmark, tmp_path, epochs=2)
    run_dir = run_directory(longer.output_path / "runs", longer.run_settings(objective="hn")[1])
    run_dir.mkdir(parents=True)
    for name in ("history.json", "training_state.pt"):
        (run_dir / name).write_bytes((experiment_module.Path(first["run_dir"]) / name).read_bytes())
    state = torch.load(run_dir / "training_state.pt", weights_only=True)
    state["config"]["epochs"] = 2
    state["config"]["output_dir"] = str(run_dir)
    torch.save(state, run_dir / "training_state.pt")
    resumed = longer.run(objective="hn")
    assert calls[-1].resume is True
    assert [h["epoch"] for h in resumed["history"]] == [0, 1, 2]
    assert resumed["history"][1] == first["history"][1]


def test_trained_model_training_batch_and_measurements(tiny_checkpoint, tiny_benchmark, tmp_path):
    exp = tiny_experiment(tiny_checkpoint, tiny_benchmark, tmp_path)
    result = exp.run(objective="clip", monitor_every=1)
    model, _, _ = exp.load_trained_model(result)
    state = torch.load(f"{result['run_dir']}/training_state.pt", weights_only=True)["model"]
    assert all(torch.equal(model.state_dict()[k], v) for k, v in state.items())
    rows = exp.gradient_measurements(result)
    assert len(rows) == result["diagnostics"][0]["measurements"] and "loss_clip" in rows[0]

    images, texts, scale = exp.first_training_batch()
    assert images.shape == texts.shape and images.shape[0] == 4
    assert scale == pytest.approx(100.0)
    torch.testing.assert_close(images.norm(dim=-1), torch.ones(4))

    path = exp.save_json("numbers", {"a": 1.5})
    assert json.loads(path.read_text()) == {"a": 1.5} and exp.load_json("numbers") == {"a": 1.5}
    with pytest.raises(FileNotFoundError, match="run the notebook that writes missing.json first"):
        exp.load_json("missing")



def test_runs_share_their_zero_shot_evaluation_without_changing_the_training(tiny_checkpoint, tiny_benchmark,
                                                                             tmp_path, monkeypatch):
    exp = tiny_experiment(tiny_checkpoint, tiny_benchmark, tmp_path, epochs=2)
    fresh = exp.run(objective="hn")
    assert len(list((exp.runs_path / "zero_shot").glob("*.json"))) == 1
    evaluations = []
    original = experiment_module.train

    def counting_train(config, zero_shot=None, hooks=None):
        evaluations.append(zero_shot)
        return original(config, zero_shot=zero_shot, hooks=hooks)

    monkeypatch.setattr(experiment_module, "train", counting_train)
    # another objective and learning rate: the same initial model and split, so the same zero-shot row
    other = exp.run(objective="clip", lr=5e-4)
    assert evaluations[-1] is not None and other["zero_shot"]["mean_r1"] == fresh["zero_shot"]["mean_r1"]
    # a run trained with the cached zero-shot is the run trained without it, epoch for epoch
    uncached = tiny_experiment(tiny_checkpoint, tiny_benchmark, tmp_path / "uncached", epochs=2).run(
        objective="clip", lr=5e-4)
    assert evaluations[-1] is None
    strip = lambda history: [{k: v for k, v in row.items() if k != "seconds"} for row in history]  # noqa: E731
    assert strip(other["history"]) == strip(uncached["history"])
    # a configuration that may start from another model (another seed) is evaluated again
    exp.run(objective="clip", seed=1)
    assert evaluations[-1] is None and len(list((exp.runs_path / "zero_shot").glob("*.json"))) == 2

def test_evaluate_on_another_benchmark_and_a_shared_run_cache(tiny_checkpoint, tiny_benchmark, tmp_path):
    shared = tmp_path / "shared-runs"
    exp = tiny_experiment(tiny_checkpoint, tiny_benchmark, tmp_path, runs_dir=str(shared))
    result = exp.run(objective="clip")
    assert result["run_dir"].startswith(str(shared))
    other = tiny_experiment(tiny_checkpoint, tiny_benchmark, tmp_path / "elsewhere", runs_dir=str(shared))
    assert other.run(objective="clip")["history"] == result["history"]  # read from the shared cache

    # the same benchmark through evaluate_on gives the run's own last-epoch and zero-shot evaluation
    last = exp.evaluate_on("synthetic", str(tiny_benchmark), result)
    zero = exp.evaluate_on("synthetic", str(tiny_benchmark))
    for key in ("t2i_r1", "i2t_r5", "mean_r1"):
        assert last[key] == pytest.approx(result["last"][key])
        assert zero[key] == pytest.approx(result["zero_shot"][key])
    stored = list((shared / result["run_dir"].split("/")[-1]).glob("transfer-synthetic-test-*.json"))
    assert len(stored) == 1 and json.loads(stored[0].read_text())["mean_r1"] == last["mean_r1"]
    # the backbone's score is stored once for the checkpoint, and read back by every experiment sharing the cache
    stored_zero = list((shared / "zero_shot").glob("*-transfer-synthetic-test-*.json"))
    assert len(stored_zero) == 1 and json.loads(stored_zero[0].read_text()) == zero
    stored_zero[0].write_text(json.dumps({**zero, "mean_r1": -1.0}))
    assert other.evaluate_on("synthetic", str(tiny_benchmark))["mean_r1"] == -1.0
    with pytest.raises(ValueError, match="unknown dataset 'coco'"):
        exp.evaluate_on("coco")
