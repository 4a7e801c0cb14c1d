"""The one home of the project's statistics: σ from independent runs, each counted once; one paired rule for
"A beats B", which fails exactly at its threshold."""

import math

import pytest

from hnclip_core.replication.significance import SINGLE_RUN_MARGIN, compare, seed_spread
from hnclip_core.replication.tidy import PARAMETERS, Table


def runs(objective, values, source="calibration.json", study="calibration", **params):
    return tuple({**dict.fromkeys(PARAMETERS), "source": source, "study": study, "run": f"{source}:{objective}{k}",
                  "objective": objective, "seed": k, "epoch": 3, "mean_r1": v, **params}
                 for k, v in enumerate(values))


def test_sigma_pools_configurations_that_differ_only_in_their_seed():
    spread = seed_spread(Table(runs("clip", (1.0, 2.0, 3.0)) + runs("hn", (5.0, 5.0))))
    assert spread.value == pytest.approx(math.sqrt((2 * 1.0 + 1 * 0.0) / 3))  # variances 1 and 0, weights n − 1
    assert (spread.runs, spread.configurations) == (5, 2)
    assert "pooled over 2 configurations" in spread.describe() and "5 independent runs" in spread.describe()
    # another recipe (here: another accumulation) is another configuration, not more seeds of this one
    other = runs("clip", (10.0, 20.0), accumulation_steps=2)
    assert seed_spread(Table(runs("clip", (1.0, 2.0, 3.0)) + other)).configurations == 2


def test_a_run_that_two_files_record_is_counted_once():
    calibration = runs("clip", (1.0, 2.0, 3.0))
    seeds_study = runs("clip", (1.0, 2.0, 3.0), source="ablations.json", study="seeds")  # the same three runs
    alone, twice = seed_spread(Table(calibration)), seed_spread(Table(calibration + seeds_study))
    assert twice.value == alone.value == pytest.approx(1.0) and twice.runs == alone.runs == 3
    # rows of one run that differ by float noise are one run, at their mean
    noisy = runs("clip", (1.0 + 1e-7, 2.0, 3.0), source="ablations.json", study="seeds")
    assert seed_spread(Table(calibration + noisy)).runs == 3


def test_without_two_seeds_of_one_configuration_there_is_no_sigma():
    spread = seed_spread(Table(runs("clip", (1.0,)) + runs("hn", (2.0,))))
    assert not spread.measured and math.isnan(spread.value) and "no configuration" in spread.describe()


def test_over_seeds_a_beats_b_when_ahead_at_every_seed_and_beyond_two_standard_errors():
    ahead = compare({0: 3.0, 1: 4.0, 2: 5.0}, {0: 1.0, 1: 1.0, 2: 1.0}, sigma=99.0)  # σ is not used
    assert ahead.beats and not ahead.behind and ahead.mean == pytest.approx(3.0)
    assert ahead.margin == pytest.approx(2 * 1.0 / math.sqrt(3))
    one_seed_behind = compare({0: 9.0, 1: 9.0, 2: 0.5}, {0: 1.0, 1: 1.0, 2: 1.0}, sigma=0.1)
    assert not one_seed_behind.beats and one_seed_behind.level
    noisy = compare({0: 1.1, 1: 5.0}, {0: 1.0, 1: 1.0}, sigma=0.1)  # ahead at both, mean 2.05 < 2 SE 3.9
    assert noisy.level
    # exactly at 2 SE: d = (1, 3): mean 2, sd √2, 2 SE = 2
    at = compare({0: 2.0, 1: 4.0}, {0: 1.0, 1: 1.0}, sigma=0.1)
    assert at.margin == pytest.approx(at.mean) and not at.beats
    assert compare({0: 1.0, 1: 1.0, 2: 1.0}, {0: 3.0, 1: 4.0, 2: 5.0}, 0.5).behind  # the mirror image


def test_at_one_seed_a_beats_b_beyond_twice_the_spread_of_a_difference_of_two_runs():
    sigma = 0.5
    assert SINGLE_RUN_MARGIN == pytest.approx(2 * math.sqrt(2))
    assert compare(31.5, 30.0, sigma).beats  # +1.5 > 1.414
    assert compare(30.0 + math.sqrt(2), 30.0, sigma).level  # exactly 2√2σ: not past it
    assert compare(30.0 + 1.0, 30.0, sigma).level and compare(28.0, 30.0, sigma).behind
    assert compare({0: 31.5}, {0: 30.0, 1: 20.0}, sigma).beats  # one common seed: the one-run rule
    assert "2√2σ 1.41" in compare(31.5, 30.0, sigma).describe()
    assert not compare(31.5, 30.0, math.nan).beats  # no σ, no verdict


def test_compare_needs_a_common_seed_and_like_arguments():
    with pytest.raises(ValueError, match="no seed ran both"):
        compare({0: 1.0}, {1: 1.0}, 0.5)
    with pytest.raises(TypeError):
        compare({0: 1.0}, 1.0, 0.5)


def test_the_lead_is_the_closer_condition_in_units_of_the_margin():
    ahead = compare({0: 3.0, 1: 2.0, 2: 4.0}, {0: 0.0, 1: 0.0, 2: 0.0}, sigma=1.0)  # mean 3, 2 SE 2/√3
    assert ahead.beats and ahead.lead() == pytest.approx((3 - 2 / math.sqrt(3)) / (2 / math.sqrt(3)))
    one_seed_behind = compare({0: 3.0, 1: -0.5, 2: 6.0}, {0: 0.0, 1: 0.0, 2: 0.0}, sigma=1.0)
    assert not one_seed_behind.beats and one_seed_behind.lead() < 0  # the least seed decides
    assert compare(1.0, 0.0, sigma=1.0).lead() == pytest.approx((1 - SINGLE_RUN_MARGIN) / SINGLE_RUN_MARGIN)
    level = compare({0: 1.0, 1: 1.0}, {0: 1.0, 1: 1.0}, sigma=0.5)  # no standard error: the unit is 2√2σ
    assert level.lead() == 0 and -level.lead(-1) == 0
