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
