"""Calibration (calibration.py, ``calibrate``): it records runs and judges nothing; its checks are the scorecard's
calibration view (their rules are tested in test_scorecard.py)."""

import dataclasses
import json
import shutil
from pathlib import Path

import pytest

from hnclip_core.replication import calibration
from hnclip_core.replication.cli import main
from hnclip_core.replication.scorecard import CALIBRATION
from hnclip_core.toy.model import TOY_FINETUNE
from hnclip_core.toy.synthetic import SyntheticConfig
from hnclip_core.train import TrainConfig

COMMITTED = Path(__file__).resolve().parent.parent / "results" / "calibration.json"


def fake_train(config: TrainConfig) -> dict:
    """A training result whose numbers depend on the objective (γ, λ) and the seed."""
    boosted = config.gamma > 0
    history = [{"epoch": e, "t2i_r1": 40 + e * (3 + 2 * boosted) + config.seed, "i2t_r1": 40 + e * (3 + 2 * boosted),
                "mean_r1": 40 + e * (3 + 2 * boosted) + config.seed / 2, "caption_mean_similarity": 0.7,
                **({"train_loss": 1 / e} if e else {})}
               for e in range(config.epochs + 1)]
    diagnostics = [{"epoch": e, "measurements": 4, "solved_clip": 0.5, "micro_solved_clip": 0.8, "solved_hn": 0.0,
                    "micro_solved_hn": 0.1, "grad_zero_clip": 0.0, "median_grad_ratio": 500.0, "cosine_mean": 0.5,
                    "cosine_std": 0.1, "cosine_median": 0.5, "cosine_positive": 1.0, "cosines": 4,
                    "parameters": 1000} for e in range(1, config.epochs + 1)]
    return {"config": {}, "zero_shot": history[0], "best": history[-1], "last": history[-1], "history": history,
            "diagnostics": diagnostics, "run_dir": "not kept"}


def test_run_calibration_records_runs_and_judges_nothing(monkeypatch, tmp_path):
    monkeypatch.setattr(calibration, "train", fake_train)
    monkeypatch.setattr(calibration, "caption_geometry_of", lambda config, progress: {"mean_pairwise": 0.85,
                                                                                      "mean_hardest": 0.93})
    monkeypatch.setattr(calibration, "zero_shot_regime_of", lambda config: {
        "solved_share": 0.6, "twin_error_share": 0.85, "own_family_top1": 0.97})
    monkeypatch.setattr(calibration, "token_alignment_of", lambda config: {"token_t2i_top1": 0.5})
    base = TrainConfig.from_dict({"checkpoint": "toy.pt", "dataset": "synthetic", "epochs": 2})
    output = tmp_path / "calibration.json"
    results = calibration.run_calibration(base, seeds=(0, 1, 2), output=output)
    written = json.loads(output.read_text())
    assert written == json.loads(json.dumps(results, default=float)) and "checks" not in written
    assert [set(run) for run in written["runs"]] == [{"seed", "clip", "hn", "hn+tok"}] * 3
    assert written["benchmark"] == dataclasses.asdict(SyntheticConfig())  # which camera, families and seed
    assert "run_dir" not in written["runs"][0]["clip"] and written["runs"][2]["clip"]["last"]["epoch"] == 2
    verdicts = calibration.recheck(output)
    assert [v.claim_id for v in verdicts] == [c.id for c in CALIBRATION]
    by_id = {v.claim_id: v for v in verdicts}
    # the fake toy gains 2 per epoch more with L_HN: 4 points after 2 epochs at every seed
    assert by_id["hn_clip_gain"].ours["hn+tok − clip avg R@1 per seed"] == [4.0, 4.0, 4.0]
    assert {v.status for v in verdicts} == {"reproduced"}
    assert json.loads(output.read_text()) == written  # recheck only reads


def test_calibrate_recheck_prints_the_view_and_leaves_the_file(tmp_path, capsys):
    path = tmp_path / "calibration.json"
    shutil.copy(COMMITTED, path)
    assert main(["calibrate", "--recheck", "--output", str(path)]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert [c["check"] for c in printed] == [c.text for c in CALIBRATION]
    expected = {v.text: v.status for v in calibration.recheck(COMMITTED)}
    assert {c["check"]: c["verdict"] for c in printed} == expected
    assert path.read_bytes() == COMMITTED.read_bytes()


def test_calibrate_takes_train_options_for_a_probe(monkeypatch, tmp_path, capsys):
    """``calibrate --checkpoint P --accumulation cached …`` calibrates that checkpoint with those settings, on the toy's
    preset otherwise; seeds and the monitor stay calibrate's own."""
    seen = {}

    def record(base, seeds, output, objectives, monitor_every, progress):
        seen.update(base=base, seeds=seeds, monitor_every=monitor_every)
        shutil.copy(COMMITTED, output)

    monkeypatch.setattr(calibration, "run_calibration", record)
    probe = tmp_path / "probe.pt"
    output = tmp_path / "calibration.json"
    assert main(["calibrate", "--checkpoint", str(probe), "--accumulation", "cached", "--epochs", "2",
                 "--seeds", "0", "1", "--monitor-every", "5", "--output", str(output)]) == 0
    capsys.readouterr()
    base = seen["base"]
    assert (base.checkpoint, base.accumulation, base.epochs) == (str(probe), "cached", 2)
    assert base.lr == TOY_FINETUNE["lr"] and base.dataset == "synthetic"  # the rest is the toy's preset
    assert (seen["seeds"], seen["monitor_every"]) == ((0, 1), 5)
    with pytest.raises(SystemExit):
        main(["calibrate", "--output-dir", str(tmp_path)])  # calibrate writes one file, no run folders


def test_zero_shot_regime_reads_the_benchmark_of_the_data_root(monkeypatch, tmp_path):
    from hnclip_core.toy import regime
    from hnclip_core.toy.synthetic import SyntheticConfig

    (tmp_path / "config.json").write_text(json.dumps({"config": {"num_train_families": 7, "family_size": 2},
                                                       "generator_version": 1}))
    benchmarks = []
    monkeypatch.setattr(calibration, "load_longclip", lambda checkpoint: (None, None, None))
    monkeypatch.setattr(regime, "benchmark_tensors", lambda split, config: benchmarks.append(config))
    monkeypatch.setattr(regime, "zero_shot_regime", lambda *args: {})
    base = TrainConfig.from_dict({"checkpoint": "toy.pt", "dataset": "synthetic", "data_root": str(tmp_path)})
    calibration.zero_shot_regime_of(base)
    assert benchmarks == [SyntheticConfig(num_train_families=7, family_size=2)] * 2
