"""The validation sweeps (validation.py): every reading is taken on the validation split, never on test; the chosen
camera is the strongest that keeps the regime, the chosen rate the baseline's best on the mean of the seeds."""

import json
from pathlib import Path

import hnclip_core.longclip
import hnclip_core.toy.regime
import hnclip_core.toy.synthetic
from hnclip_core.replication import validation
from hnclip_core.train import TrainConfig

COMMITTED = Path(__file__).resolve().parent.parent / "results" / "validation.json"


def test_the_camera_is_the_strongest_that_keeps_the_regime_on_validation(monkeypatch, tmp_path):
    splits = []
    # solved share falls with the cast; twin errors stay high except through the strongest camera
    regime = {"plain": (0.7, 0.9), "soft": (0.55, 0.85), "mid": (0.45, 0.9), "strong": (0.6, 0.7)}
    monkeypatch.setattr(hnclip_core.longclip, "load_longclip", lambda path: (None, None, None))
    monkeypatch.setattr(hnclip_core.toy.regime, "benchmark_tensors",
                        lambda split, config: splits.append((split, config.camera)) or config.camera)
    monkeypatch.setattr(hnclip_core.toy.regime, "zero_shot_regime", lambda model, train, test, tokenizer: dict(
        zip(("solved_share", "twin_error_share"), regime[test], strict=True)))
    monkeypatch.setattr(hnclip_core.toy.synthetic, "SyntheticConfig",
                        lambda camera: type("Config", (), {"camera": camera}))
    results = validation.sweep_cameras("toy.pt", tuple(regime), output=tmp_path / "validation.json")
    assert {split for split, _ in splits} == {"val"}
    assert results["chosen"] == "soft" == validation.chosen_camera(tmp_path / "validation.json")
    assert validation.sweep_cameras("toy.pt", ("mid", "strong"))["chosen"] is None


def test_the_sweep_evaluates_on_validation_and_chooses_the_baselines_best_rate(monkeypatch, tmp_path):
    seen = []

    def fake_train(config, hooks=None):
        seen.append(config)
        # seed 0 prefers 1e-4, seed 1 prefers 3e-5 by more: the mean of the seeds decides
        last = {(1e-4, 0): 60.0, (1e-4, 1): 50.0, (3e-5, 0): 59.0, (3e-5, 1): 56.0}[(config.lr, config.seed)]
        history = [{"epoch": 0, "mean_r1": 40.0}, {"epoch": 1, "mean_r1": last - 1, "train_loss": 0.2},
                   {"epoch": 2, "mean_r1": last, "train_loss": 0.1}]
        return {"history": history}

    monkeypatch.setattr(validation, "train", fake_train)
    base = TrainConfig.from_dict({"checkpoint": "toy.pt", "dataset": "synthetic", "epochs": 2, "gamma": 0.5})
    results = validation.sweep_rates(base, [1e-4, 3e-5], [0, 1], output=tmp_path / "validation.json")
    assert {c.eval_split for c in seen} == {"val"} and {(c.gamma, c.token_weight) for c in seen} == {(0.0, 0.0)}
    assert results["chosen_lr"] == 3e-5 == validation.chosen_rate(tmp_path / "validation.json")
    recorded = json.loads((tmp_path / "validation.json").read_text())["learning_rate"]
    assert recorded["runs"][0]["per_epoch_r1"] == [40.0, 59.0, 60.0]

    # a framework's own rate: trained with its hooks, recorded beside the toy's, which it leaves alone
    hooks = []
    monkeypatch.setattr(validation, "train", lambda config, hooks=None: hooks_seen(hooks) or fake_train(config))

    def hooks_seen(framework):
        hooks.append(type(framework).__name__)

    validation.sweep_rates(base, [1e-4, 3e-5], [0, 1], output=tmp_path / "validation.json", framework="goal")
    recorded = json.loads((tmp_path / "validation.json").read_text())
    assert set(hooks) == {"GoalFramework"} and recorded["framework_rates"]["goal"]["chosen_lr"] == 3e-5
    assert recorded["learning_rate"]["framework"] == "longclip" and validation.chosen_rate(
        tmp_path / "validation.json") == 3e-5


def test_the_committed_sweeps_are_the_shipped_toys_and_the_rate_is_the_preset():
    from hnclip_core.toy.model import TOY_FINETUNE, shipped_toy_path
    from hnclip_core.toy.regime import meets_regime_targets

    record = json.loads(COMMITTED.read_text())
    cameras = record["camera"]
    assert cameras["checkpoint"] == shipped_toy_path().name
    keeps = [meets_regime_targets(reading, cameras["targets"]) for reading in cameras["readings"].values()]
    assert cameras["chosen"] == [camera for camera, kept in zip(cameras["readings"], keeps, strict=True) if kept][-1]
    assert TOY_FINETUNE["lr"] == validation.chosen_rate(COMMITTED)
    rates = record["learning_rate"]
    assert rates["base_config"]["checkpoint"] == shipped_toy_path().name  # chosen for the shipped toy
    assert {run["seed"] for run in rates["runs"]} >= {0, 1}


def test_the_committed_framework_sweeps_say_whether_a_recipe_beats_zero_shot():
    """results/validation.json's framework_rates: each framework's InfoNCE recipe on the validation split, from the
    shipped toy; epoch 0 of every run is the zero-shot model, so whether a rate repairs the framework is readable."""
    from hnclip_core.toy.model import shipped_toy_path

    for framework, sweep in json.loads(COMMITTED.read_text()).get("framework_rates", {}).items():
        assert sweep["framework"] == framework and sweep["split"] == "val" and sweep["objective"] == "clip"
        assert sweep["base_config"]["checkpoint"] == shipped_toy_path().name
        zero_shot = {run["per_epoch_r1"][0] for run in sweep["runs"]}
        assert len(zero_shot) == 1  # one model to start from
        assert sweep["chosen_lr"] in {run["lr"] for run in sweep["runs"]}
