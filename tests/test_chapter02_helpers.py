"""Chapter 2's computed reading of the gradient dynamics (notebooks/chapter02_helpers.py), rendered against perturbed
monitor summaries: whether the two gradients are called aligned follows the share of positive cosines and the
random-direction baseline, as the scorecard's gradient_aligned rule does."""

import sys
from pathlib import Path

from hnclip_core.replication.paper import SATURATION

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))

from chapter02_helpers import reading_the_dynamics  # noqa: E402

HISTORY = [{"epoch": 0, "mean_r1": 52.0}, {"epoch": 1, "mean_r1": 55.0}]


def _epoch(epoch, **changes):
    summary = {"epoch": epoch, "micro_solved_clip": 0.6, "micro_solved_hn": 0.2, "solved_clip": 0.6, "solved_hn": 0.2,
               "grad_zero_clip": 0.0, "median_grad_ratio": 40.0, "cosine_median": 0.2, "cosine_positive": 1.0,
               "cosines": 5, "parameters": 2_000_000}  # random directions: cosine 0 ± 0.0007
    return {**summary, **changes}


def _reading(*epochs):
    return reading_the_dynamics(0.6, list(epochs), HISTORY, SATURATION)


def test_aligned_when_positive_far_more_often_than_random_directions():
    text = _reading(_epoch(1), _epoch(2, cosine_positive=0.8))
    assert "and positively aligned with it: the two gradients' cosine is positive on 90 % of the measurements" not in \
        text  # exactly at the rule's 90 % is not beyond it
    assert "not consistently aligned with it: the two gradients' cosine is positive on 90 %" in text
    text = _reading(_epoch(1), _epoch(2, cosine_positive=1.0))
    assert "and positively aligned with it: the two gradients' cosine is positive on 100 % of the measurements" in text
    assert "random directions in these 2.0 M parameters would be on 50 % (cosine 0 ± 0.0007)" in text


def test_a_median_within_random_spread_is_not_aligned():
    text = _reading(_epoch(1), _epoch(2, cosine_median=0.002))  # 3/√P = 0.0021
    assert "not consistently aligned with it" in text and "median of 0.00–0.20 per epoch" in text
    assert "and positively aligned" in _reading(_epoch(1), _epoch(2, cosine_median=0.003))


def test_the_regime_words_follow_the_solved_shares():
    assert "a strong initialisation in the paper's sense" in _reading(_epoch(1))
    assert "not yet the paper's strong initialisation" in reading_the_dynamics(0.4, [_epoch(1)], HISTORY, SATURATION)
    assert "the saturation of §2.4, measured rather than constructed" in _reading(_epoch(1, micro_solved_hn=0.5))
    # InfoNCE solves at most half of them in one epoch: no saturation claimed
    assert "measured rather than constructed" not in _reading(_epoch(1, micro_solved_clip=0.5, micro_solved_hn=0.5))
    # L_HN active on fewer batches than the paper's least epoch (26 %)
    assert "measured rather than constructed" not in _reading(_epoch(1, micro_solved_hn=0.8))


def test_the_gradient_words_follow_the_measurements():
    assert "No fp32 gradient of InfoNCE is exactly zero in any measurement" in _reading(_epoch(1))
    assert "exactly zero in up to 40 % of an epoch's measurements" in _reading(_epoch(1, grad_zero_clip=0.4))
    assert "40 times larger than InfoNCE's (per-epoch median), below the paper's range" in _reading(_epoch(1))
    assert "within the paper's range" in _reading(_epoch(1, median_grad_ratio=1e3))
    assert "above the paper's range" in _reading(_epoch(1, median_grad_ratio=1e7))


def test_the_recall_words_follow_the_history():
    assert "fine-tuning helps already" in _reading(_epoch(1))
    falls = reading_the_dynamics(0.6, [_epoch(1)], [{"epoch": 0, "mean_r1": 52.0}, {"epoch": 1, "mean_r1": 50.0}],
                                 SATURATION)
    assert "from 52.0 (zero-shot) to 50.0 after one epoch — in these short epochs fine-tuning costs" in falls
