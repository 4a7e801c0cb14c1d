"""Chapter 3's computed sentences (notebooks/chapter03_helpers.py), rendered against perturbed runs: which way each
curve goes, and which model is ahead in which epochs, follow the numbers."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))

from chapter03_helpers import reading_the_convergence  # noqa: E402


def _run(*mean_r1, t2i_shift=0.0):
    return {"history": [{"epoch": e, "mean_r1": r, "t2i_r1": r + t2i_shift, "i2t_r1": r - t2i_shift}
                        for e, r in enumerate(mean_r1)]}


def test_the_convergence_reading_follows_each_curve():
    text = reading_the_convergence({"clip": _run(52.0, 56.0, 58.0), "hn+tok": _run(52.0, 58.0, 60.0)}, "clip",
                                   "hn+tok")
    assert "InfoNCE rises to 56.0 in epoch 1 (+4.0), then rises further to 58.0 by epoch 2 — above zero-shot" in text
    assert "HN-CLIP is ahead of InfoNCE in every epoch, in both retrieval directions (+2.0, +2.0" in text
    text = reading_the_convergence({"clip": _run(52.0, 50.0, 49.0), "hn+tok": _run(52.0, 51.0, 48.0)}, "clip",
                                   "hn+tok")
    assert "InfoNCE falls to 50.0 in epoch 1 (-2.0), then falls further to 49.0 by epoch 2 — below zero-shot" in text
    assert "Both lose retrieval in epoch 1, InfoNCE more." in text
    assert "HN-CLIP is ahead of InfoNCE in epoch 1 of 2 (+1.0, -1.0" in text


def test_a_lead_on_the_mean_names_the_direction_it_misses():
    runs = {"clip": _run(52.0, 56.0, 58.0), "hn+tok": _run(52.0, 57.0, 59.0, t2i_shift=1.5)}
    text = reading_the_convergence(runs, "clip", "hn+tok")
    assert "ahead of InfoNCE in every epoch on average (+1.0, +1.0 points by epoch), but behind it in I→T" in text
    level = reading_the_convergence({"clip": _run(52.0, 56.0, 58.0), "hn+tok": _run(52.0, 56.0, 58.0)}, "clip",
                                    "hn+tok")
    assert "HN-CLIP is not ahead of InfoNCE in any epoch" in level


def test_the_size_of_the_lead_is_worded_against_the_papers():
    from chapter03_helpers import reading_the_results

    def reading(hn_clip):
        rows = {name: {"mean_r1": r1, **{f"{d}_r5": 99.0 for d in ("t2i", "i2t")}}
                for name, r1 in (("zero-shot", 52.0), ("InfoNCE", 58.0), ("HN-CLIP", hn_clip))}
        paper = {"zero-shot": 72.8, "clip": 85.3, "hn+tok": 87.3}  # a lead of +2.0
        return reading_the_results(rows, "clip", "hn+tok", paper, None, None, 1000, 2000, is_toy=False)

    assert "by 1.2 points of average R@1, less than the paper's +2.0" in reading(59.2)
    assert "by 1.8 points of average R@1, about as much as the paper's +2.0" in reading(59.8)
    assert "by 2.6 points of average R@1, more than the paper's +2.0" in reading(60.6)
