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


def _losses_reading(clip_curve, zero_clip=(0.020, 0.020), after_clip=(0.010, 0.010), solved=0.6):
    """reading_the_losses on two epochs: InfoNCE's training curve, the zero-shot model's and the trained model's mean
    L_CLIP on each epoch's 10 micro-batches, and the share of epoch 1's solved under the zero-shot model."""
    import torch
    from chapter03_helpers import reading_the_losses

    def batches(mean, solved_share=0.0):  # 10 micro-batches with this mean, the first ones below 1e-3
        low = int(round(10 * solved_share))
        values = [0.0005] * low + [0.0] * (10 - low)
        rest = (10 * mean - 0.0005 * low) / max(1, 10 - low)
        return torch.tensor([v if i < low else rest for i, v in enumerate(values)])

    results = {"clip": {"history": [{"epoch": 0}] + [{"epoch": e + 1, "train_loss": v}
                                                     for e, v in enumerate(clip_curve)]},
               "hn+tok": {"history": [{"epoch": 0}, {"epoch": 1, "train_loss": 5.0}, {"epoch": 2, "train_loss": 4.0}]}}
    hn = torch.full((10,), 6.0)
    losses = {"zero-shot": {e + 1: {"clip": batches(m, solved if e == 0 else 0.0), "hn": hn}
                            for e, m in enumerate(zero_clip)},
              "InfoNCE": {e + 1: {"clip": batches(m), "hn": hn} for e, m in enumerate(after_clip)},
              "HN-CLIP": {e + 1: {"clip": batches(m), "hn": hn / 2} for e, m in enumerate(after_clip)}}
    return reading_the_losses(results, "clip", "hn+tok", losses, "zero-shot")


def test_the_loss_reading_follows_the_curves_and_the_fixed_models():
    text = _losses_reading((0.016, 0.012))
    assert "InfoNCE's falls from 0.016 in epoch 1 to 0.012 in epoch 2" in text
    assert "InfoNCE starts saturated — the zero-shot model already solves 60 %" in text
    assert "In every epoch its training loss is below the zero-shot model's" in text and "it learns as it goes" in text
    assert "The batches explain little of the curves" in text
    text = _losses_reading((0.016, 0.030), solved=0.2)
    assert "InfoNCE's rises from 0.016 in epoch 1 to 0.03 in epoch 2" in text
    assert "it starts with most of them left to learn" in text and "starts saturated" not in text
    assert "above the zero-shot model's on the same micro-batches in epoch 2 of 2" in text
    assert "so the curve's rise comes from the weights in motion, not from a worse end point" in text
    moving = _losses_reading((0.016, 0.012), zero_clip=(0.020, 0.030))
    assert "Some of what the curves do is the batches, not the model" in moving
    assert "HN-CLIP model after training has reduced it" in moving and "far above InfoNCE's" in moving
