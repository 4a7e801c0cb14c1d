"""The tidy results table (replication/tidy.py): built from every file the project writes, and its queries."""

import json
import math
from pathlib import Path

import pytest

from hnclip_core.replication.scorecard import calibration_view, judge
from hnclip_core.replication.significance import seed_spread
from hnclip_core.replication.tidy import PARAMETERS, NotMeasured, Table, read_results, stale_studies

RESULTS = Path(__file__).resolve().parent.parent / "results"


def run(mean, epochs=2, **config):
    """A training result as Experiment.run returns it (``config`` only where given)."""
    rows = [{"epoch": e, "t2i_r1": mean - 2 + e, "i2t_r1": mean - 2 + e, "mean_r1": mean - 2 + e,
             "caption_mean_similarity": 0.6 - 0.05 * e, "logit_scale": 100.0} for e in range(epochs + 1)]
    return {**({"config": config} if config else {}), "zero_shot": rows[0], "best": rows[-1], "last": rows[-1],
            "history": rows}


def diagnostics():
    return [{"epoch": e, "measurements": 4, "solved_clip": 0.2, "micro_solved_clip": 0.8, "solved_hn": 0.0,
             "micro_solved_hn": 0.0, "grad_zero_clip": 0.0, "median_grad_ratio": 50.0, "cosine_mean": 0.1,
             "cosine_std": 0.2} for e in (1, 2)]


def write_outputs(folder, gamma_config=None):
    """What chapters 1–4 write (chapter 4's studies keyed as ablations.collect keys them)."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "geometry.json").write_text(json.dumps(
        {"dataset": "synthetic", "backbone": "toy", "geometry": {"mean_pairwise": 0.55, "mean_hardest": 0.98}}))
    (folder / "saturation.json").write_text(json.dumps({"dynamics": {"objective": "hn+tok",
                                                                     "diagnostics": diagnostics()}}))
    (folder / "fine_tuning.json").write_text(json.dumps(
        {"parameters": {"dataset": "synthetic", "eval_dataset": "synthetic", "seed": 0},
         "runs": {"clip": run(28.0), "hn+tok": run(30.0)}}))
    (folder / "ablations.json").write_text(json.dumps({
        "scale": {"epochs": 2},
        "gamma": {"0": run(18.0, **(gamma_config or {})), "0.5": run(25.0, **(gamma_config or {}))},
        "components": {o: run(v) for o, v in (("clip", 20.0), ("tok", 19.0), ("hn", 25.0), ("hn+tok", 24.8))},
        "margin_source": {"recomputed": run(24.0), "frozen": run(23.0)},
        "seeds": {str(s): {"clip": run(28.0 + s), "hn+tok": run(30.0)} for s in (0, 1)},
    }))


def test_chapter_outputs_become_rows_per_run_and_epoch(tmp_path):
    write_outputs(tmp_path)
    table = read_results(tmp_path)
    assert table.column("study") == ["geometry", "dynamics", "fine_tuning", "gamma", "components", "margin_source",
                                     "seeds"]
    assert all(set(PARAMETERS) <= set(r) for r in table)
    fine_tuning = table.where(study="fine_tuning", objective="hn+tok")
    assert fine_tuning.column("epoch") == [0, 1, 2] and fine_tuning.column("seed") == [0]
    assert fine_tuning.last().one("mean_r1") == 30.0 and fine_tuning.last().one("s") == 100.0
    assert table.where(study="dynamics").values("micro_solved_clip", "epoch") == {1: 0.8, 2: 0.8}
    assert table.where(study="geometry").one("mean_pairwise") == 0.55
    assert table.where(study="gamma").last().values("mean_r1", "gamma") == {0.0: 18.0, 0.5: 25.0}
    assert table.where(study="seeds").last().values("mean_r1", "seed", "objective")[1, "clip"] == 29.0
    assert read_results(tmp_path / "nothing here").rows == ()


def test_a_config_names_the_objective_by_its_gamma_and_lambda(tmp_path):
    """Configs still naming an objective (the committed grids) and configs of γ and λ give the same column."""
    old = {"objective": "hn+tok", "gamma": 0.5, "token_weight": 1.0, "seed": 0, "dataset": "synthetic"}
    write_outputs(tmp_path, gamma_config=old)
    gamma = read_results(tmp_path).where(study="gamma").last()
    assert {r["gamma"]: r["objective"] for r in gamma} == {0.0: "tok", 0.5: "hn+tok"}  # γ = 0 with L_tok: tok
    assert gamma.column("token_weight") == [1.0] and gamma.column("dataset") == ["synthetic"]
    new = {"objective": "clip", "gamma": 0.0, "token_weight": 0.0}
    (tmp_path / "ablations.json").write_text(json.dumps({"components": {"clip": run(20.0, **new)}}))
    assert read_results(tmp_path).where(study="components").column("objective") == ["clip"]


def test_calibration_throughput_and_full_grids(tmp_path):
    write_outputs(tmp_path / "tutorial")
    calibration = tmp_path / "calibration.json"
    base = {"objective": "hn+tok", "gamma": 0.5, "token_weight": 1.0, "dataset": "synthetic", "seed": 0}
    calibration.write_text(json.dumps({
        "base_config": base, "geometry": {"mean_pairwise": 0.14, "mean_hardest": 0.96},
        "zero_shot_regime": {"solved_share": 0.79, "twin_error_share": 0.92, "own_family_top1": 0.97,
                             "logit_scale": 78.0},
        "runs": [{"seed": s, "clip": {**run(28.0), "diagnostics": diagnostics()}, "hn+tok": run(30.0 + s)}
                 for s in (0, 1, 2)]}))
    grids = tmp_path / "ablations.json"
    grids.write_text(json.dumps({"studies": {"gamma": {"transfer_dataset": "synthetic-alt"}},
                                 "gamma": {"0": run(30.0), "0.5": run(25.0)},
                                 "gamma_transfer": {g: {"zero_shot": run(20.0)["zero_shot"],
                                                        "last": {"t2i_r1": v, "i2t_r1": v, "mean_r1": v}}
                                                    for g, v in (("0", 20.0), ("0.5", 22.0))}}))
    throughput = tmp_path / "framework_throughput.json"
    throughput.write_text(json.dumps({"batch": 128, "steps": 2, "frameworks": {
        "longclip": {"hn": {"img_per_s": 64.0, "seconds": [4.0, 3.2]}}}}))
    table = read_results(tmp_path / "tutorial", calibration=calibration, ablations=grids, throughput=throughput)

    initial = table.where(study="calibration", objective=None)
    assert initial.one("solved_share") == 0.79 and initial.one("mean_pairwise") == 0.14 and initial.one("s") == 78.0
    runs = table.where(study="calibration").last()
    assert runs.values("mean_r1", "seed", "objective") == {(0, "clip"): 28.0, (0, "hn+tok"): 30.0,
                                                           (1, "clip"): 28.0, (1, "hn+tok"): 31.0,
                                                           (2, "clip"): 28.0, (2, "hn+tok"): 32.0}
    assert table.where(study="calibration", objective="clip", seed=2, epoch=1).one("micro_solved_clip") == 0.8
    # the full grids' γ study replaces chapter 4's; its transfer evaluations are rows of the same runs
    gamma = table.where(study="gamma")
    assert gamma.column("source") == ["ablations.json (full grid)"]
    assert gamma.where(eval_dataset="synthetic-alt").last().values("mean_r1", "gamma") == {0.0: 20.0, 0.5: 22.0}
    assert gamma.where(eval_dataset="synthetic-alt").last().column("epoch") == [2]
    assert table.where(study="components").column("source") == ["ablations.json"]  # not in the grids: kept
    speed = table.where(study="throughput")
    assert speed.one("img_per_s_slowest") == 64.0 and speed.one("img_per_s_fastest") == 80.0
    # pooled over calibration clip (28, 28, 28), hn+tok (30, 31, 32) and chapter 4 clip (28, 29), hn+tok (30, 30)
    spread = seed_spread(table)  # chapter 4's runs record no config: a configuration apart from the calibration's
    assert spread.value == pytest.approx(math.sqrt((2 * 0 + 2 * 1 + 1 * 0.5 + 1 * 0) / 6))
    assert (spread.configurations, spread.runs) == (4, 10)


def test_full_grids_of_another_model_than_the_calibrations_are_left_out(tmp_path):
    calibration = tmp_path / "calibration.json"
    calibration.write_text(json.dumps({"base_config": {"checkpoint": "toy-new.pt", "dataset": "synthetic"},
                                       "runs": []}))
    grids = tmp_path / "ablations.json"
    grids.write_text(json.dumps({"studies": {"gamma": {"checkpoint": "toy-old.pt"},
                                             "components": {"checkpoint": "toy-new.pt"}},
                                 "gamma": {"0": run(30.0)}, "components": {"clip": run(28.0)}}))
    assert stale_studies(json.loads(grids.read_text()), json.loads(calibration.read_text())) == ["gamma"]
    table = read_results(None, calibration=calibration, ablations=grids)
    assert table.where(study="gamma").rows == () and table.where(study="components").rows != ()


def test_a_transfer_run_gives_gamma_rows_on_its_benchmark(tmp_path):
    write_outputs(tmp_path / "tutorial")
    write_outputs(tmp_path / "transfer", gamma_config={"gamma": 0.5, "token_weight": 1.0, "dataset": "synthetic",
                                                       "eval_dataset": "synthetic-alt"})
    gamma = read_results(tmp_path / "tutorial", transfer_dir=tmp_path / "transfer").where(study="gamma")
    assert gamma.column("source") == ["ablations.json", "ablations.json (transfer run)"]
    assert gamma.where(eval_dataset="synthetic-alt").last().values("mean_r1", "gamma") == {0.0: 18.0, 0.5: 25.0}


def test_a_wrong_file_is_named(tmp_path):
    (tmp_path / "saturation.json").write_text(json.dumps({"thresholds": {}}))
    with pytest.raises(ValueError, match="saturation.json: expected key dynamics/diagnostics"):
        read_results(tmp_path)
    (tmp_path / "other.json").write_text(json.dumps({"gamma": {}}))
    with pytest.raises(ValueError, match="other.json: expected key studies"):
        read_results(None, ablations=tmp_path / "other.json")
    (tmp_path / "ablations.json").write_text(json.dumps({"studies": {}, "gama": {"0": run(1.0)}}))
    with pytest.raises(ValueError, match="unknown study 'gama'"):
        read_results(None, ablations=tmp_path / "ablations.json")


def test_queries():
    rows = tuple({**dict.fromkeys(PARAMETERS), "source": "s", "run": f"r{g}", "gamma": g, "epoch": e,
                  "mean_r1": 10 * g + e} for g in (0.0, 0.25, 1.0) for e in (0, 1, 2))
    table = Table(rows)
    assert len(table.where(gamma=0.25)) == 3 and len(table.where(gamma=(0.0, 1.0))) == 6
    assert table.where(gamma=lambda g: g > 0).last().values("mean_r1", "gamma") == {0.25: 4.5, 1.0: 12.0}
    assert table.where(gamma=0.25 + 1e-12).last().one("mean_r1") == 4.5  # numbers compare within 1e-9
    with pytest.raises(ValueError, match="both have"):
        table.values("mean_r1", "gamma")
    with pytest.raises(NotMeasured):
        table.where(gamma=0.5).one("mean_r1")
    with pytest.raises(NotMeasured, match="what is missing"):
        table.where(gamma=0.5).require("what is missing")


def test_the_committed_results_are_judged_as_reported():
    """The verdicts docs/results.md reports, from the committed files (chapters 1–3's outputs are not committed:
    their claims are judged on the calibration alone here)."""
    table = read_results(None, calibration=RESULTS / "calibration.json", ablations=RESULTS / "ablations.json",
                         throughput=RESULTS / "framework_throughput.json")
    assert [v.status for v in calibration_view(table)] == [
        "not reproduced", "not reproduced", "not reproduced", "reproduced", "not reproduced", "not reproduced",
        "not reproduced", "reproduced"]
    status = {v.claim_id: v.status for v in judge(table)}
    # chapter 3's recipe judged on the calibration's seeds
    assert {c for c, s in status.items() if s == "reproduced"} == {
        "hn_stays_active", "beats_infonce", "beats_zero_shot", "leads_from_first_epoch", "first_epoch_matches_final",
        "gamma_beats_zero", "temperature_plateau", "efficiency"}
    assert "not measured" not in status.values()
