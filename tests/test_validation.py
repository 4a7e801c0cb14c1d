"""The validation sweep (validation.py): every run is evaluated on the validation split, never on test, and the
chosen rate is the baseline's best there on the mean of the seeds."""

import json

from hnclip_core.replication import validation
from hnclip_core.train import TrainConfig


def test_the_sweep_evaluates_on_validation_and_chooses_the_baselines_best_rate(monkeypatch, tmp_path):
    seen = []

    def fake_train(config):
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
    assert json.loads((tmp_path / "validation.json").read_text())["runs"][0]["per_epoch_r1"] == [40.0, 59.0, 60.0]


def test_the_toys_fine_tuning_rate_is_the_one_the_committed_sweep_chose():
    from pathlib import Path

    from hnclip_core.toy.model import TOY_FINETUNE, shipped_toy_path

    committed = Path(__file__).resolve().parent.parent / "results" / "validation.json"
    record = json.loads(committed.read_text())
    assert TOY_FINETUNE["lr"] == validation.chosen_rate(committed)
    assert record["base_config"]["checkpoint"] == shipped_toy_path().name  # chosen for the shipped toy
    assert {run["seed"] for run in record["runs"]} >= {0, 1}
