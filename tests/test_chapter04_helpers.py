"""Chapter 4's closing reading (notebooks/chapter04_helpers.py), rendered against perturbed numbers: every word
that judges a number — ahead / level / behind, all / none, rises / falls, within / more than — follows it."""

import math
import sys
from pathlib import Path

import pytest

from hnclip_core.replication.significance import SINGLE_RUN_MARGIN, SeedSpread

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))

from chapter04_helpers import (  # noqa: E402
    boost_reading,
    components_reading,
    margin_source_reading,
    sample_efficiency_reading,
    seeds_reading,
    temperature_reading,
    transfer_reading,
    yardstick_reading,
    zero_shot_reading,
)

SIGMA = 0.5  # a difference of two runs counts beyond 2√2σ = 1.41
BEYOND, WITHIN = 2.0, 1.0
PAPER_3B = {"clip": 60.0, "tok": 60.5, "hn": 62.0, "hn+tok": 62.3}


def test_the_yardstick_prints_sigma_with_what_it_is_the_sigma_of():
    spread = SeedSpread("mean_r1", 0.5, 6, 2)
    text = yardstick_reading(spread, "trained here", "(a) and (b) ran one seed each.")
    assert spread.describe() in text and f"2√2σ = {SINGLE_RUN_MARGIN * 0.5:.2f}" in text
    assert "there is no σ" in yardstick_reading(SeedSpread("mean_r1", math.nan, 0, 0), "x", "")


@pytest.mark.parametrize("finals, words, conclusion", [
    ((50.0, 49.0, 48.0), "all 3 end below it by more than 2√2σ", "costs this model accuracy"),
    ((54.0, 55.0, 56.0), "all 3 end above it by more than 2√2σ", "adds to the pre-trained model"),
    ((54.0, 52.5, 49.0), "1 of 3 ends above it by more than 2√2σ, 1 of 3 ends below it by more than 2√2σ and 1 of 3 "
                         "ends within 2√2σ of it", None),
])
def test_against_zero_shot_counts_each_side_of_the_rule(finals, words, conclusion):
    text = zero_shot_reading(52.0, finals, SIGMA)
    assert words in text
    assert (conclusion is None and "pre-trained" not in text) or (conclusion is not None and conclusion in text)


@pytest.mark.parametrize("hn, word", [(58.0 + BEYOND, "ahead of"), (58.0 + WITHIN, "level with"),
                                      (58.0 - BEYOND, "behind")])
def test_components_follow_each_gap(hn, word):
    text = components_reading({"clip": 58.0, "tok": 58.0, "hn": hn, "hn+tok": hn}, PAPER_3B, SIGMA)
    assert f"L_HN alone is {word} InfoNCE" in text and "L_tok alone is level with InfoNCE" in text
    assert "adding L_tok to L_HN changes nothing beyond 2√2σ" in text
    assert "moves InfoNCE by +0.50 and adds +0.30 to L_HN" in text


@pytest.mark.parametrize("delta, word", [(BEYOND, "helps"), (0.0, "changes nothing beyond 2√2σ"),
                                         (-BEYOND, "costs accuracy")])
def test_what_adding_the_token_term_does_follows_its_gap(delta, word):
    text = components_reading({"clip": 58.0, "tok": 58.0, "hn": 60.0, "hn+tok": 60.0 + delta}, PAPER_3B, SIGMA)
    assert f"adding L_tok to L_HN {word}" in text


def test_the_boost_reading_names_every_gamma_that_falls_short():
    assert "every γ > 0 is ahead of it" in boost_reading({0.0: 55.0, 0.5: 58.0, 1.0: 57.5}, SIGMA)
    text = boost_reading({0.0: 55.0, 0.5: 58.0, 1.0: 56.0}, SIGMA)
    assert "not every γ > 0" in text and "γ = 1 (+1.00, within" in text and "γ = 0.5" not in text.split(":")[1]
    assert "(beyond 2√2σ)" in text  # 58.0 and 56.0 lie 2.0 apart
    assert "(within 2√2σ)" in boost_reading({0.0: 55.0, 0.5: 58.0, 1.0: 57.5}, SIGMA)


def test_transfer_says_whether_the_ranking_holds():
    home = {"clip": 58.0, "tok": 57.0, "hn+tok": 60.0}
    same = transfer_reading("alt", home, {"clip": 50.0, "tok": 49.0, "hn+tok": 53.0}, 52.0, SIGMA)
    assert "rank as they do in-domain (HN-CLIP > InfoNCE > InfoNCE + L_tok)" in same
    assert "HN-CLIP is ahead of InfoNCE there" in same and "2 of 3 end below the zero-shot" in same
    other = transfer_reading("alt", home, {"clip": 53.0, "tok": 49.0, "hn+tok": 52.5}, 52.0, SIGMA)
    assert "rank differently from in-domain" in other and "HN-CLIP is level with InfoNCE there" in other


@pytest.mark.parametrize("similarity, moves", [((0.13, 0.10), "falls to 0.100"), ((0.13, 0.16), "rises to 0.160"),
                                               ((0.130, 0.131), "stays level, at 0.131")])
def test_the_frozen_margin_reading_follows_the_caption_similarity(similarity, moves):
    text = margin_source_reading(58.0, 58.0 - BEYOND, similarity, 0.84, SIGMA, "the full grid")
    assert "recomputed run is ahead of the frozen one" in text and f"it {moves}" in text
    assert "far less crowded" in text and "correspondingly smaller" in text
    crowded = margin_source_reading(58.0, 58.0, (0.86, 0.80), 0.84, SIGMA, "here")
    assert "level with the frozen one" in crowded and "at least as crowded" in crowded


def test_sample_efficiency_tells_a_gain_from_damage_limitation():
    gain = {0.2: {"clip": 56.0, "hn+tok": 59.0}, 1.0: {"clip": 57.0, "tok": 56.5, "hn+tok": 60.0}}
    text = sample_efficiency_reading(gain, 52.0, SIGMA, "here", 0.2)
    assert "HN-CLIP is ahead of it at 20 %, 100 %" in text
    assert "on 20 % of the data is ahead of the strongest baseline (InfoNCE)" in text
    assert "damage limitation" not in text and "*lower*" not in text
    loss = {0.2: {"clip": 50.0, "hn+tok": 49.0}, 1.0: {"clip": 47.0, "hn+tok": 47.5}}
    text = sample_efficiency_reading(loss, 52.0, SIGMA, "here", 0.2)
    assert "level with it at 20 %, 100 %" in text and "damage limitation" in text and "InfoNCE ends *lower*" in text
    assert "comparison is not made here" in sample_efficiency_reading({0.5: loss[1.0], 1.0: loss[1.0]}, 52.0,
                                                                      SIGMA, "here", 0.2)


def _metrics(shift: float) -> dict:
    return {f"{d}_r{k}": 50.0 + shift * (k == 1) for d in ("t2i", "i2t") for k in (1, 5, 10)} | {"mean_r1": 50 + shift}


@pytest.mark.parametrize("shift, versus", [(0.5, "within"), (3.0, "more than")])
def test_the_seed_spread_is_set_beside_the_papers(shift, versus):
    text = seeds_reading([_metrics(0.0), _metrics(shift)], 1.9, 2, "here")
    assert f"is {shift:.1f} points (T→I R@1), {versus} the paper's 1.90" in text
    assert text.endswith(f"moves by {shift:.1f}.")
    assert "tends to exceed" in seeds_reading([_metrics(0.0), _metrics(shift), _metrics(0.1)], 1.9, 2, "here")


def test_the_temperature_reading_follows_the_boost_at_each_s():
    grid = {(50.0, 0.0): 55.0, (50.0, 1.0): 58.0, (100.0, 0.0): 55.0, (100.0, 0.5): 58.0, (100.0, 1.0): 57.0}
    text = temperature_reading(grid, SIGMA, "here")
    assert "every γ > 0 is ahead of γ = 0 at its s" in text and "about as much at s = 50 as at s = 100" in text
    assert "score alike" in text and "as if the boost acted through s·γ alone" in text
    grid[50.0, 1.0] = 61.0
    text = temperature_reading(grid, SIGMA, "here")
    assert "more at s = 50 than at s = 100" in text and "score differently" in text
    assert "does not act through s·γ alone" in text
    grid[50.0, 1.0] = 55.5
    assert "not ahead of γ = 0 at its s by more than 2√2σ everywhere" in temperature_reading(grid, SIGMA, "here")


def test_the_paired_reading_sets_the_paired_rule_beside_single_seeds():
    from chapter04_helpers import paired_reading

    from hnclip_core.replication.significance import compare

    text = paired_reading(compare({0: 60.8, 1: 60.65, 2: 60.05}, {0: 59.6, 1: 57.6, 2: 58.1}, 0.79))
    assert "ahead of InfoNCE at all 3 seeds (d = +1.20, +3.05, +1.95)" in text
    assert "d̄ = +2.07 is beyond 2 SE = 1.07, so by the paired rule HN-CLIP beats InfoNCE" in text
    assert "against 2√2σ = 2.23, 1 of 3 would count as a win (seed 1)" in text
    text = paired_reading(compare({0: 60.0, 1: 58.0, 2: 60.5}, {0: 59.6, 1: 58.5, 2: 59.5}, 0.79))
    assert "at 2 of 3 seeds" in text and "HN-CLIP does not beat InfoNCE" in text and "none of the 3 would" in text
