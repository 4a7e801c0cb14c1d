"""Tables (report.py) and the chapter figures on tiny inputs: the shared training curves of plots/training.py
and chapters 1 and 3's own figures (notebooks/chapter01_helpers.py, chapter03_helpers.py)."""

import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from PIL import Image

from hnclip_core.data.pairs import ImageCaptionPair
from hnclip_core.evaluate import rank_changes, retrieval_examples, top_k_images
from hnclip_core.replication.geometry import caption_similarity_stats, in_batch_hardness
from hnclip_core.replication.paper import CAPTION_GEOMETRY, DOCCI_RECALL, paper_mean_r1
from hnclip_core.replication.plots import METHOD_COLOURS, save_figure
from hnclip_core.replication.plots.ablations import plot_sample_efficiency, plot_seed_convergence
from hnclip_core.replication.plots.training import method_name, plot_convergence, plot_metric_sweep
from hnclip_core.replication.report import geometry_table, recall_table

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))

from chapter01_helpers import (  # noqa: E402
    camera_parts,
    differing_phrases,
    near_duplicate_pairs,
    near_twin_html,
    plot_batch_matrix,
    plot_caption_similarity,
    plot_hardness_buckets,
    plot_near_twins,
)
from chapter03_helpers import plot_retrievals, plot_training_losses, reading_the_convergence  # noqa: E402


def metrics_row(epoch, value):
    row = {"epoch": epoch, "mean_r1": value, "train_loss": 1.0 / (epoch + 1)}
    for direction in ("t2i", "i2t"):
        row.update({f"{direction}_r{k}": value + k for k in (1, 5, 10)})
    return row


def test_recall_table_layout_and_paper_rows():
    table = recall_table({"clip": metrics_row(3, 30.04), "hn+tok": metrics_row(3, 32.46)}, paper=DOCCI_RECALL)
    lines = table.splitlines()
    assert lines[0] == "| method | T→I R@1 | T→I R@5 | T→I R@10 | I→T R@1 | I→T R@5 | I→T R@10 | avg R@1 |"
    assert lines[2] == "| clip | 31.0 | 35.0 | 40.0 | 31.0 | 35.0 | 40.0 | 30.0 |"
    assert lines[3].endswith("| 32.5 |")
    assert "paper (DOCCI, Long-CLIP-L): hn+tok | 88.2 | 98.5 | 99.4 | 86.2 | 98.1 | 99.2 | 87.2 |" in table
    assert paper_mean_r1("hn+tok") == pytest.approx((88.25 + 86.24) / 2)
    only_r1 = recall_table({"a": metrics_row(1, 10.0)}, ks=(1,), paper={"x": {"t2i": (1, 2, 3), "i2t": (4, 5, 6)}})
    assert only_r1.splitlines()[-1] == "| paper (DOCCI, Long-CLIP-L): x | 1.0 | 4.0 | 2.5 |"


def test_geometry_table():
    table = geometry_table({"ours": {"mean_pairwise": 0.5475, "mean_hardest": 0.98262}}, CAPTION_GEOMETRY)
    assert "| ours | 0.547 | 0.983 |" in table and "| paper: DOCCI | 0.84 | 0.93 |" in table


def test_differing_phrases_is_a_word_level_diff():
    a = "a large red star on the left and a small blue ring"
    b = "a small red star on the left and a large blue ring"
    assert differing_phrases(a, b) == (["large", "small"], ["small", "large"])
    assert differing_phrases(a, a) == ([], [])


def test_a_camera_is_described_by_what_it_does():
    from hnclip_core.toy.synthetic import CAMERAS, Camera

    assert camera_parts(CAMERAS["plain"]) == "nothing: the rendering as it is"
    assert camera_parts(Camera(cast=0.16)) == "a 16 % warm colour cast"
    assert camera_parts(Camera(cast=0.2, noise=6.0, blur=0.4)) == (
        "a 20 % warm colour cast, sensor noise of σ 6 levels and a blur of 0.4 px")
    assert camera_parts(Camera(blur=1.0)) == "a blur of 1 px"


def test_the_convergence_reading_states_the_leads_and_leaves_the_verdict_to_the_seed_spread():
    def run(*values):
        return {"history": [metrics_row(epoch, value) for epoch, value in enumerate(values)]}

    text = reading_the_convergence({"clip": run(50.0, 55.0, 56.0), "hn+tok": run(50.0, 55.1, 56.7)}, "clip", "hn+tok")
    assert "ahead of InfoNCE in every epoch, in both retrieval directions (+0.1, +0.7 points" in text
    assert "claim holds" not in text and text.endswith("against the seed spread σ in chapter 5.")
    behind = reading_the_convergence({"clip": run(50.0, 55.0, 56.0), "hn+tok": run(50.0, 54.0, 56.0)}, "clip",
                                     "hn+tok")
    assert "HN-CLIP is not ahead of InfoNCE in any epoch (-1.0, +0.0 points" in behind


def test_rank_changes_and_retrieval_examples():
    before, after = torch.tensor([1, 5, 2, 9]), torch.tensor([1, 1, 4, 2])
    assert rank_changes(before, after, best=2, worst=1) == {
        "improved": 2, "worsened": 1, "unchanged": 1, "best": [3, 1], "worst": [2]}
    eye = torch.eye(4)
    assert top_k_images(eye, eye, [2, 0], k=2)[:, 0].tolist() == [2, 0]
    shuffled = eye[[1, 0, 2, 3]]  # the "baseline" confuses captions 0 and 1
    examples = retrieval_examples({"clip": (eye, shuffled), "hn": (eye, eye)}, "clip", "hn", best=2, worst=1, k=2)
    assert examples["queries"] == [0, 1] and examples["ranks"]["hn"] == [1, 1]
    assert examples["ranks"]["clip"] == [4, 4]  # ties count against the query
    assert examples["titles"] == ["hn gains most"] * 2


@pytest.fixture
def pairs(tmp_path):
    result = []
    for i in range(4):
        path = tmp_path / f"{i}.png"
        Image.fromarray(np.full((8, 8, 3), 40 * i, dtype=np.uint8)).save(path)
        result.append(ImageCaptionPair(path, f"a {'red' if i % 2 else 'blue'} square number {i} on the left"))
    return result


def test_every_chapter_figure_draws_and_saves(tmp_path, pairs):
    torch.manual_seed(0)
    features = torch.nn.functional.normalize(torch.randn(4, 8), dim=-1)
    captions = [p.caption for p in pairs]
    geometry = caption_similarity_stats(features)
    twins = near_duplicate_pairs(features, captions, top=2)
    figures = {
        "similarity": (plot_caption_similarity(geometry, "tiny", CAPTION_GEOMETRY), 2),
        "matrix": (plot_batch_matrix(features @ features.T, captions), 2),
        "buckets": (plot_hardness_buckets({"in-batch": in_batch_hardness(features, batch_size=2),
                                           "all": geometry.bucket_fractions}), 1),
        "twins": (plot_near_twins(twins, [(pairs[t.i].load_image(), pairs[t.j].load_image()) for t in twins],
                                  captions), 4),
    }
    history = [metrics_row(0, 20.0), metrics_row(1, 25.0)]
    results = {"clip": {"history": history}, "hn+tok": {"history": history}}
    eye = torch.eye(4)
    examples = retrieval_examples({"clip": (eye, eye[[1, 0, 2, 3]]), "hn": (eye, eye)}, "clip", "hn", k=2)
    figures["convergence"] = (plot_convergence(results), 2)
    figures["losses"] = (plot_training_losses(results), 1)
    figures["retrievals"] = (plot_retrievals(examples, pairs), 2 * 2 * 2 + 2)
    figures["sweep"] = (plot_metric_sweep([0, 0.5], {"R@1": [1, 2]}, "γ", "R@1", "t", baseline={"zs": 1.0}), 1)
    for name, (fig, axes) in figures.items():
        assert len(fig.axes) == axes, name
        assert save_figure(fig, tmp_path / "figures", name).is_file()
    assert save_figure(figures["sweep"][0], None, "x") is None
    unchanged = retrieval_examples({"a": (eye, eye), "b": (eye, eye)}, "a", "b")
    assert unchanged["queries"] == [] and len(plot_retrievals(unchanged, pairs).axes) == 1
    html = near_twin_html(twins[0], captions)
    assert html.count("<mark>") >= 2 and "cosine" in html


def test_figures_name_the_objectives_as_the_paper_does():
    """Legends show the paper's names (InfoNCE, HN-CLIP, ...) for runs keyed by the short names; colours still
    follow the key."""
    assert [method_name(k) for k in ("clip", "tok", "hn", "hn+tok")] == ["InfoNCE", "InfoNCE + L_tok", "L_HN",
                                                                          "HN-CLIP"]
    assert method_name("zero-shot") == "zero-shot" and method_name("T→I R@1") == "T→I R@1"

    def legend(ax):
        return [text.get_text() for text in ax.get_legend().get_texts()]

    run = {"history": [metrics_row(0, 20.0), metrics_row(1, 25.0)], "last": metrics_row(1, 25.0),
           "zero_shot": metrics_row(0, 20.0)}
    results = {"clip": run, "hn+tok": run}
    convergence = plot_convergence(results)
    assert legend(convergence.axes[0]) == ["InfoNCE", "HN-CLIP"]
    assert legend(convergence.axes[1]) == ["InfoNCE T→I", "InfoNCE I→T", "HN-CLIP T→I", "HN-CLIP I→T"]
    assert convergence.axes[0].lines[0].get_color() == METHOD_COLOURS["clip"]
    assert legend(plot_training_losses(results).axes[0]) == ["InfoNCE", "HN-CLIP"]
    sweep = plot_metric_sweep([0, 1], {"tok": [1, 2]}, "γ", "R@1", "t", baseline={"hn": 1.0})
    assert set(legend(sweep.axes[0])) == {"InfoNCE + L_tok", "L_HN"}
    efficiency = plot_sample_efficiency({"0.5": results, "1": results}, reference="clip")
    assert legend(efficiency.axes[0]) == ["InfoNCE", "HN-CLIP", "InfoNCE at 100 % (strongest baseline)", "zero-shot"]
    seeds = plot_seed_convergence({"0": results, "1": results})
    assert legend(seeds.axes[0]) == ["InfoNCE (2 seeds)", "HN-CLIP (2 seeds)"]


def test_thresholds_and_diagnostics_tables():
    from hnclip_core.replication.paper import SATURATION
    from hnclip_core.replication.report import diagnostics_table, thresholds_table

    events = ("solved", "loss_zero", "negative_grad_zero")
    threshold = {"dtype": "float32", **{f"{e}_margin": 0.1 * (k + 1) for k, e in enumerate(events)},
                 **{f"{e}_logit_gap": 10.0 * (k + 1) for k, e in enumerate(events)}}
    assert thresholds_table([threshold]).splitlines()[2] == "| float32 | 0.100 (10.0) | 0.200 (20.0) | 0.300 (30.0) |"
    row = {"epoch": 1, "measurements": 7, "solved_clip": 0.5, "grad_zero_clip": 0.25, "solved_hn": 0.0,
           "median_grad_ratio": 123.4, "cosine_mean": 0.3}
    lines = diagnostics_table([row], SATURATION).splitlines()
    assert lines[2] == "| 1 | 7 | 50% | 25% | 100% | 123 | 0.30 |"
    assert lines[3] == "| paper (Long-CLIP-L, DOCCI) | 148 | 80% (epoch 1) | 47% | ≥ 26% | 10²–10⁶ | 0.58 (median) |"


def test_every_benchmark_record_describes_its_machine_in_one_way():
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "benchmarks"))
    try:
        import conditions
    finally:
        sys.path.pop(0)
    from hnclip_core.replication.report import describe_machine

    recorded = conditions.conditions("a note")["machine"]
    assert {"processor", "cores", "torch", "torch_threads", "open_clip"} <= set(recorded)
    line = describe_machine(recorded)
    assert f"{recorded['cores']} cores" in line and f"torch {recorded['torch']}" in line
    assert describe_machine("x86_64, 2 threads, torch 2.14") == "x86_64, 2 threads, torch 2.14"  # an older record
    scripts = Path(__file__).resolve().parent.parent.glob("benchmarks/*.py")
    writers = [p.name for p in scripts if "--json" in p.read_text() and "write_json(" not in p.read_text()]
    assert writers == [], f"{writers} write their --json records without conditions.write_json"


def test_the_paired_seeds_figure_draws_each_seeds_runs_and_their_differences():
    from hnclip_core.replication.plots.ablations import plot_paired_seeds

    fig = plot_paired_seeds({0: 60.8, 1: 60.65, 2: 60.05}, {0: 59.6, 1: 57.6, 2: 58.1}, sigma=0.66)
    runs, gaps = fig.axes
    assert len(runs.lines) == 3 and [t.get_text() for t in runs.get_xticklabels()] == ["InfoNCE", "HN-CLIP"]
    differences = gaps.lines[-1].get_ydata()
    assert list(differences) == pytest.approx([1.2, 3.05, 1.95])
    assert gaps.lines[0].get_ydata()[0] == pytest.approx(2 * 2 ** 0.5 * 0.66)  # the one-run margin, for contrast
