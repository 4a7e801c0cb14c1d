"""The words computed prose picks (hnclip_core/replication/words.py): each flips where its numbers cross the line."""

import math

import pytest

from hnclip_core.replication.words import at_least, compared, gap_note, how_many, most_or_few, trend, turns


def test_comparison_words_follow_the_scorecards_one_rule():
    sigma = 0.5  # 2√2σ = 1.414: the spread of a difference of two runs, twice
    assert compared(1.5, sigma) == "ahead of" and compared(-1.5, sigma) == "behind"
    assert compared(2 ** 0.5, sigma) == "level with"  # exactly 2√2σ is not past it
    assert compared(0.7, sigma) == "level with"  # beyond σ, within the noise of two runs
    assert compared(1.5, sigma, "helps", "changes nothing", "costs") == "helps"
    assert gap_note(0.7, sigma) == "+0.70, within 2√2σ = 1.41"
    assert gap_note(-1.5, sigma) == "-1.50, beyond 2√2σ = 1.41"
    assert compared(5.0, math.nan) == "level with" and gap_note(5.0, math.nan) == "+5.00, no σ measured"


@pytest.mark.parametrize("values, word", [
    ((0.009, 0.013, 0.018), "rises"),  # chapter 3's InfoNCE loss on the toy: it rises, whatever a reader expects
    ((0.018, 0.009), "falls"),
    ((0.0100, 0.0104), "stays level"),  # 4 % of the larger end
    ((0.0100, 0.0106), "rises"),  # 6 %
    ((0.0, 0.0), "stays level"),
])
def test_a_trend_is_read_from_the_first_and_last_values(values, word):
    assert trend(values) == word


def test_a_series_that_turns_says_where():
    assert turns([3.0, 2.0, 1.0]) == "" and turns([1.0, 2.0]) == ""
    assert turns([3.0, 1.0, 2.0]) == " (not monotonically: lowest at 2)"
    assert turns([1.0, 3.0, 2.0], at="in epoch ") == " (not monotonically: highest in epoch 2)"
    assert turns([1.0, 1.0, 1.0]) == " (not monotonically)"


def test_counts_read_as_all_none_both_or_k_of_n():
    assert how_many(6, 6, "runs") == "all 6 runs"
    assert how_many(0, 6, "runs") == "none of the 6 runs"
    assert how_many(2, 2) == "both"
    assert how_many(4, 6) == "4 of 6"


@pytest.mark.parametrize("share, word", [(0.61, "most"), (0.6, "about half"), (0.4, "about half"), (0.39, "few")])
def test_most_and_few_are_decided_by_the_share(share, word):
    assert most_or_few(share) == word


def test_a_share_outside_zero_to_one_is_refused():
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        most_or_few(61.0)  # a percentage passed as a share


def test_the_least_share_of_several_reads_all_at_one():
    assert at_least(1.0) == "all" and at_least(0.0) == "none" and at_least(0.438) == "at least 44 %"
