"""The ablation studies: grid files that run, results collected by their parameters, tables and figures."""

import contextlib
import json
import subprocess
import sys

import pytest
from matplotlib.figure import Figure

from hnclip_core.replication import ablations
from hnclip_core.replication.ablations import (
    REPOSITORY,
    STUDIES,
    collect,
    components_table,
    fractions_table,
    grid_spec,
    margin_source_table,
    plug_and_play_table,
    seeds_table,
    strongest_baseline,
    temperature_table,
    throughput_table,
    timing_table,
    transfer_table,
    write_results,
)
from hnclip_core.replication.batch import run_grid
from hnclip_core.replication.experiment import Experiment
from hnclip_core.replication.plots.ablations import (
    plot_margin_annealing,
    plot_plug_and_play,
    plot_sample_efficiency,
    plot_seed_convergence,
    plot_temperature_grid,
)
from hnclip_core.replication.scorecard import judge
from hnclip_core.replication.significance import seed_spread
from hnclip_core.replication.tidy import read_results


def test_every_study_is_a_grid_that_the_runner_accepts_at_full_scale():
    expected_points = {"gamma": 5, "components": 4, "margin_source": 2, "fractions": 8, "seeds": 6,
                       "transfer": 6, "temperature": 6, "plug_and_play": 12}
    with contextlib.chdir(REPOSITORY):
        for name, study in STUDIES.items():
            spec = grid_spec(study)
            assert spec.notebook.as_posix() == "notebooks/ablation_run.ipynb"
            assert spec.output_dir.as_posix() == f"runs/ablations/{name}"  # collect() finds studies by name
            assert spec.parameters["runs_dir"] == "runs/ablations/cache"
            points = run_grid(spec, dry_run=True)  # checks every parameter name and type against the notebook
            assert len(points) == expected_points[name] == len(study.points("full")), name


def test_a_study_at_reduced_scale_is_what_chapter_4_runs():
    gamma = STUDIES["gamma"]
    assert [p["gamma"] for p in gamma.points("reduced")] == [0.0, 0.5, 1.0]
    assert all(p["objective"] == "hn+tok" and p["epochs"] == 2 and p["train_fraction"] == 0.25
               for p in gamma.points("reduced"))
    fractions = STUDIES["fractions"].points("full")
    assert {p["train_fraction"] for p in fractions} == {0.05, 0.2, 0.5, 1.0}  # the grid beats the scale's recipe
    assert all(p["accumulation_steps"] == 2 for p in fractions)
    with pytest.raises(ValueError, match="full scale only"):
        STUDIES["plug_and_play"].points("reduced")
    with pytest.raises(ValueError, match="scale must be one of"):
        gamma.points("tiny")


def test_chapter_4_reads_the_committed_grids_only_where_they_are_its_own_experiment():
    assert set(ablations.CHAPTER_STUDIES) == {name for name, study in STUDIES.items() if study.reduced is not None}
    default = Experiment(output_dir="anywhere", device="cpu", progress=False)  # where and how fast: not learned
    assert ablations.committed_grids_apply(default)
    trained, read = ablations.chapter_plan(default, "reduced")
    assert trained == ("gamma", "components")
    assert read == ("margin_source", "fractions", "seeds", "temperature")
    assert ablations.chapter_plan(default, "full") == (ablations.CHAPTER_STUDIES, ())
    assert ablations.chapter_plan(default, "reduced", ["seeds", "gamma"]) == (
        ("gamma", "seeds"), ("components", "margin_source", "fractions", "temperature"))
    with pytest.raises(ValueError, match="chapter 4's studies are"):
        ablations.chapter_plan(default, "reduced", ["transfer"])
    for changed in ({"seed": 1}, {"lr": 1e-5}, {"micro_batch_size": 8}, {"dataset": "synthetic-alt"},
                    {"eval_dataset": "synthetic-alt"}):
        other = Experiment(**changed)
        assert not ablations.committed_grids_apply(other), changed
        assert ablations.chapter_plan(other, "reduced") == (ablations.CHAPTER_STUDIES, ())  # trains everything
        with pytest.raises(ValueError, match="train every study here"):
            ablations.chapter_plan(other, "reduced", ["gamma"])


def test_unknown_study_is_refused():
    with pytest.raises(ValueError, match="unknown study"):
        ablations.run_studies(["gama"], output=None)


# ----------------------------------------------------------------------------------------- collected runs


def result(mean, epochs=2, **config):
    rows = [{"epoch": e, "t2i_r1": mean - 2 + e, "i2t_r1": mean - 2 + e, "mean_r1": mean - 2 + e,
             **{f"{d}_r{k}": 50.0 for d in ("t2i", "i2t") for k in (5, 10, 25, 50)},
             "caption_mean_similarity": 0.6 - 0.05 * e, "logit_scale": 100.0} for e in range(epochs + 1)]
    return {"config": {"checkpoint": "/models/toy-longclip-0123456789.pt", "gamma": 0.5, "margin_source": "recomputed",
                       "logit_scale": None, **config},
            "zero_shot": rows[0], "best": rows[-1], "last": rows[-1], "history": rows}


def write_study(root, study, points):
    """A finished grid as the batch runner leaves it: batch_summary.json and one run.json per point."""
    folder = root / study
    entries = []
    for index, (parameters, run, transfer) in enumerate(points):
        name = f"point{index}"
        (folder / name).mkdir(parents=True)
        (folder / name / "run.json").write_text(json.dumps(
            {"parameters": {"eval_dataset": parameters.get("dataset", "synthetic"), **parameters},
             "result": run, "transfer": transfer}))
        entries.append({"name": name, "parameters": parameters, "status": "ok", "seconds": 60.0})
    entries.append({"name": "broken", "parameters": {}, "status": "failed", "seconds": 1.0})
    (folder / "batch_summary.json").write_text(json.dumps({"points": entries}))


@pytest.fixture()
def grids(tmp_path):
    alt = {"synthetic-alt": {"zero_shot": result(20)["last"], "last": result(24)["last"]}}
    write_study(tmp_path, "gamma", [({"gamma": g}, result(20 + 10 * g), alt) for g in (0.0, 0.5, 1.0)])
    write_study(tmp_path, "components", [({"objective": o}, result(v), {})
                                         for o, v in (("clip", 20), ("tok", 21), ("hn", 25), ("hn+tok", 26))])
    write_study(tmp_path, "margin_source", [({"margin_source": s}, result(v, margin_source=s), {})
                                            for s, v in (("recomputed", 26), ("frozen", 23))])
    write_study(tmp_path, "fractions", [({"train_fraction": f, "objective": o}, result(v + 10 * f), {})
                                        for f in (0.05, 0.2, 1.0) for o, v in (("clip", 15), ("tok", 16),
                                                                               ("hn+tok", 20))])
    write_study(tmp_path, "seeds", [({"seed": s, "objective": o}, result(v + s), {})
                                    for s in (0, 1, 2) for o, v in (("clip", 20), ("hn+tok", 25))])
    write_study(tmp_path, "transfer", [
        ({"dataset": d, "objective": o}, result(v), {other: {"zero_shot": result(18)["last"],
                                                             "last": result(v - 3)["last"]}})
        for d, other in (("synthetic", "synthetic-alt"), ("synthetic-alt", "synthetic"))
        for o, v in (("clip", 20), ("hn+tok", 25))])
    write_study(tmp_path, "plug_and_play", [({"framework": f, "objective": o}, result(v + (o == "hn")), {})
                                            for f, v in (("longclip", 20), ("lora", 18)) for o in ("clip", "hn")])
    write_study(tmp_path, "temperature", [({"logit_scale": s, "gamma": g}, result(20 + (g > 0)), {})
                                          for s in (50.0, 100.0) for g in (0.0, 0.5)])
    return tmp_path


def test_collect_keys_every_study_by_its_parameters(grids):
    collected = collect(grids)
    assert set(collected["studies"]) == set(STUDIES)
    assert set(collected["gamma"]) == {"0", "0.5", "1"}
    assert collected["gamma_transfer"]["1"]["last"]["mean_r1"] == 24
    assert collected["studies"]["gamma"]["transfer_dataset"] == "synthetic-alt"
    assert set(collected["fractions"]) == {"0.05", "0.2", "1"} and set(collected["fractions"]["1"]) == {
        "clip", "tok", "hn+tok"}
    assert set(collected["seeds"]) == {"0", "1", "2"}
    assert set(collected["temperature"]) == {"50", "100"} and set(collected["temperature"]["50"]) == {"0", "0.5"}
    # in-domain evaluation from training, cross-domain from the transfer evaluation
    assert collected["transfer"]["synthetic"]["hn+tok"]["synthetic"]["last"]["mean_r1"] == 25
    assert collected["transfer"]["synthetic"]["hn+tok"]["synthetic-alt"]["last"]["mean_r1"] == 22
    study = collected["studies"]["seeds"]
    assert study["points"] == 7 and study["completed"] == 6 and study["failed"] == ["broken"]
    assert study["seconds"] == pytest.approx(361.0)


def test_writing_some_studies_keeps_the_others(grids, tmp_path):
    output = tmp_path / "ablations.json"
    everything = write_results(collect(grids), output)
    assert set(everything["studies"]) == set(STUDIES)
    stale = {**everything, "gamma_transfer": {"1": "stale"}, "seeds": {"0": "stale"}}
    output.write_text(json.dumps(stale))
    merged = write_results(collect(grids, ["gamma"]), output)
    assert json.loads(output.read_text()) == merged
    assert set(merged["studies"]) == set(STUDIES) and merged["seeds"] == {"0": "stale"}  # untouched
    assert merged["gamma_transfer"]["1"]["last"]["mean_r1"] == 24  # replaced with the gamma study
    # a section derived from a study does not outlive a rerun of that study that no longer yields it
    without_transfer = {k: v for k, v in collect(grids, ["gamma"]).items() if k != "gamma_transfer"}
    assert "gamma_transfer" not in write_results(without_transfer, output)


def test_collected_grids_feed_the_scorecard(grids, tmp_path):
    path = tmp_path / "ablations.json"
    path.write_text(json.dumps(collect(grids)))
    table = read_results(ablations=path)
    assert table.where(study="fractions").last().values("mean_r1", "train_fraction", "objective")[0.2, "hn+tok"] == 22
    spread = seed_spread(table)  # seeds 0, 1, 2 of clip and of hn+tok: + 0, 1, 2
    assert (spread.value, spread.configurations) == (pytest.approx(1.0), 2)
    status = {r.claim_id: r.status for r in judge(table)}
    assert status["gamma_beats_zero"] == status["recomputed_beats_frozen"] == "reproduced"  # margins 5 and 3
    assert status["components"] == "not reproduced"  # hn+tok − hn = 1 < 2√2σ: L_tok adds within noise
    assert status["data_efficiency"] == "not reproduced"  # hn+tok at 20 %: 22 < tok at 100 %: 26
    assert status["cross_domain"] == "reproduced"  # 22 vs 17 and zero-shot 18
    assert status["temperature_plateau"] == status["plug_and_play"] == "not reproduced"  # gains of 1 < 2√2σ
    assert status["seed_spread"] == "not reproduced"  # 25, 26, 27: spread 2 ≥ the paper's 1.44


def test_tables_and_figures(grids):
    collected = collect(grids)
    assert "L_tok ✓ · L_HN ✓ (HN-CLIP)" in components_table(collected["components"])
    assert "| frozen |" in margin_source_table(collected["margin_source"])
    fractions = fractions_table(collected["fractions"])
    assert "| 5 % |" in fractions and "(InfoNCE + L_tok)" in fractions and "| HN-CLIP avg R@1 |" in fractions
    assert strongest_baseline(collected["fractions"]["1"]) == "tok"
    seeds = seeds_table(collected["seeds"])
    assert "| HN-CLIP | 3 | 26.0 ± 1.0 |" in seeds
    header = seeds.splitlines()[0]  # the |s of max|Δ| are escaped: as many header cells as separator cells
    assert header.replace("\\|", "").count("|") == seeds.splitlines()[1].count("|")
    transfer = transfer_table(collected["transfer"])
    lines = [line for line in transfer.splitlines() if line.startswith("| synthetic → ")]
    assert lines[0].startswith("| synthetic → synthetic (in-domain) | zero-shot |")
    assert any(line.startswith("| synthetic → synthetic-alt | HN-CLIP |") for line in lines)
    assert "(s·γ 25)" in temperature_table(collected["temperature"])
    timing = timing_table(collected["studies"])
    assert "| total |" in timing and "| `toy-longclip-0123456789.pt` |" in timing  # which model, by file name
    table = plug_and_play_table(collected["plug_and_play"])
    assert "| lora | 18.0 |" in table and "| + L_HN | 19.0 |" in table and "| Δ | +1.0 |" in table
    for fig in (plot_margin_annealing(collected["margin_source"]),
                plot_sample_efficiency(collected["fractions"], "tok"),
                plot_seed_convergence(collected["seeds"]), plot_temperature_grid(collected["temperature"])):
        assert isinstance(fig, Figure) and fig.axes
    fig = plot_plug_and_play(collected["plug_and_play"], {"lora": 2.6})
    labels = [t.get_text() for t in fig.axes[0].texts if t.get_text()]  # the arrows are empty annotations
    assert "Δ +1.0 (paper +2.6)" in labels and len(labels) == len(collected["plug_and_play"]) + 1
    assert "zero-shot 18.0" in labels and fig.axes[0].lines[-1].get_xdata()[0] == 18.0  # the dashed line
    assert "| zero-shot | 18.0 |" in table
    broken = {**collected["plug_and_play"], "goal": {o: result(v) for o, v in (("clip", 10), ("hn", 19))}}
    for run in broken["goal"].values():
        run["zero_shot"] = {**run["zero_shot"], "mean_r1": 18.0}
    assert "| Δ (a repair) | +9.0 |" in plug_and_play_table(broken)
    labels = [t.get_text() for t in plot_plug_and_play(broken).axes[0].texts]
    assert "Δ +9.0: a repair" in labels


def test_a_rerun_that_skips_completed_points_keeps_their_measured_time(grids):
    summary_path = grids / "seeds" / "batch_summary.json"
    summary = json.loads(summary_path.read_text())
    for entry in summary["points"]:
        (grids / "seeds" / entry["name"]).mkdir(exist_ok=True)
        (grids / "seeds" / entry["name"] / "point.json").write_text(json.dumps({"seconds": 50.0}))
        entry["status"], entry["seconds"] = ("skipped", 0.0) if entry["name"] != "broken" else ("failed", 1.0)
    summary_path.write_text(json.dumps(summary))
    assert collect(grids, ["seeds"])["studies"]["seeds"]["seconds"] == pytest.approx(7 * 50.0)


def test_framework_throughput_benchmark_writes_what_the_efficiency_table_draws(tmp_path):
    output = tmp_path / "throughput.json"
    subprocess.run([sys.executable, str(REPOSITORY / "benchmarks" / "framework_throughput.py"), "--rounds", "1",
                    "--micro-batch-size", "2", "--accumulation-steps", "2", "--frameworks", "longclip", "goal",
                    "--json", str(output)], check=True, capture_output=True)
    measured = json.loads(output.read_text())
    assert measured["batch"] == 4 and list(measured["frameworks"]) == ["longclip", "goal"]
    assert measured["frameworks"]["longclip"]["clip"]["relative_time"] == 1.0
    assert all(run["img_per_s"] > 0 for runs in measured["frameworks"].values() for run in runs.values())
    table = throughput_table(measured)
    assert table.splitlines()[2].startswith("| longclip |") and "×1.00 |" in table.splitlines()[2]
    assert table.splitlines()[3].startswith("| goal |")
    with_paper = throughput_table(measured, {"longclip": {"clip": 55.5, "hn": 53.0}}).splitlines()
    assert with_paper[2].endswith("| 55.5 | 53 |") and with_paper[3].endswith("| – | – |")


def test_committed_results_name_files_not_this_machines_paths():
    """results/*.json say which checkpoint by file name and SHA-256, and which run by folder name."""
    import re
    from pathlib import Path

    from hnclip_core.replication.ablations import portable_paths

    for path in Path(__file__).resolve().parents[1].joinpath("results").glob("*.json"):
        assert not re.search(r'"(/|[A-Za-z]:\\\\)[^"]*"', path.read_text()), f"{path.name} records an absolute path"
    record = portable_paths({"config": {"checkpoint": str(Path(__file__).resolve()), "output_dir": "/x/runs/clip-1"}})
    assert record["config"]["checkpoint"] == Path(__file__).name and record["config"]["output_dir"] == "clip-1"
    assert len(record["config"]["checkpoint_sha256"]) == 64
