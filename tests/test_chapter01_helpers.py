"""Chapter 1's computed words about the caption cone: each flips where its numbers cross their rule."""

import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))

from chapter01_helpers import REAL_CLIP_GEOMETRY, reading_the_cone, the_toys_cone  # noqa: E402

CROWDED = {"caption_share_mean": 0.76, "image_share_mean": 0.01, "matching_cosine": 0.35, "mean_pairwise": 0.77,
           "mean_hardest": 0.99}


def test_a_crowded_toy_across_a_gap_reads_as_a_real_clip():
    text = reading_the_cone(CROWDED)
    assert "so they crowd" in text and "they sit across a modality gap" in text
    assert f"{REAL_CLIP_GEOMETRY['mean_pairwise']:.2f}" in text


@pytest.mark.parametrize("change, phrase", [
    ({"caption_share_mean": 0.49}, "too little to crowd them"),
    ({"image_share_mean": 0.06}, "do not sit across a modality gap"),
    ({"matching_cosine": 0.41}, "do not sit across a modality gap"),
])
def test_each_word_flips_past_its_rule(change, phrase):
    assert phrase in reading_the_cone({**CROWDED, **change})


def test_the_toys_cone_is_named_from_its_recipe():
    assert "without a cone" in the_toys_cone(0.0)
    assert "α² = 0.75" in the_toys_cone(0.75) and "effective scale of 50" in the_toys_cone(0.75)


# ----------------------------------------------------------------------- §2 and §4's readings, perturbed
def _geometry(pairwise, hardest, at_twin):
    import torch

    from hnclip_core.replication.geometry import CaptionGeometry

    return CaptionGeometry(1000, pairwise, torch.zeros(1), torch.zeros(1, dtype=torch.long), hardest, torch.zeros(1),
                           False, {0.8: at_twin}, {})


@pytest.mark.parametrize("pairwise, at_twin, crowding, margins", [
    (0.13, 0.007, "spreads unrelated captions far apart while keeping near-twins close",
     "only 0.7 % of all pairs reach Ḡ ≥ 0.8, so the large margins fall on the near-twins"),
    (0.70, 0.30, "packs captions closer together than a random cloud", "so a sizeable minority of the negatives"),
    (0.86, 0.90, "packs captions into a narrow cone, as Long-CLIP-L does", "so nearly every negative gets"),
])
def test_the_geometry_reading_follows_the_crowding(pairwise, at_twin, crowding, margins):
    from chapter01_helpers import reading_the_geometry

    text = reading_the_geometry(_geometry(pairwise, 0.965, at_twin), 0.98, 0.8, 0.5, synthetic=True, toy=True)
    assert f"This text encoder {crowding}" in text and margins in text
    assert "0.96, above the paper's 0.92–0.94" in text and "by construction on the synthetic benchmark" in text
    assert ("imperfect stand-in" in text) == (pairwise < 0.79)  # below the paper's least pairwise less 0.05
    assert f"mean {pairwise:.2f}, {'within' if pairwise >= 0.84 else 'below'} the paper's" in text


def _twins(**changes):
    from chapter01_helpers import TwinsInBatches

    values = dict(twin=0.8, share_hard=0.007, with_twin=0.98, per_caption=3.0, companions=999, batch=128, micro=16,
                  in_effective=0.32, in_micro=0.045, twin_margin=0.48, other_margin=0.06, batches=62, holding=0.4,
                  pairs_in_holding=1.2)
    return TwinsInBatches(**{**values, **changes})


def test_the_batches_reading_follows_how_often_twins_meet():
    from chapter01_helpers import reading_the_batches

    text = reading_the_batches(_twins(), 0.5, (0.86, 0.99))
    assert ": far fewer. The near-twins are not missing: 98 %" in text and "a small minority" in text
    assert "the loss rarely sees a caption together with its twin" in text and "in play in only 4 %" in text
    assert "40 % of the 62 micro-batches" in text and "(1.2 pairs in those, on average)." in text
    crowded = reading_the_batches(_twins(share_hard=0.9, in_micro=0.95, holding=0.7), 0.5, (0.86, 0.99))
    assert "as there, nearly every negative" in crowded and "the loss usually sees" in crowded
    assert crowded.endswith("So the boost meets near-twins in most of the micro-batches it sees.")
    assert reading_the_batches(_twins(in_micro=0.95, holding=0.3), 0.5, (0.86, 0.99)).endswith(
        "in few of the micro-batches it sees.")
    assert "With γ" not in reading_the_batches(_twins(twin_margin=None), 0.5, (0.86, 0.99))
