"""The qualitative words of computed prose, each chosen by one function of the numbers it describes.

A chapter's reading says "falls", "most", "every" or "ahead of" only through these functions, so a sentence stays
true when the runs change, and ``tests/test_words.py`` and the chapters' reading tests perturb the numbers and see
each word flip where it should:

* :func:`compared` and :func:`gap_note`: whether A is ahead of, level with or behind B, by
  :func:`~hnclip_core.replication.significance.compare`'s one rule at one seed (beyond 2√2σ);
* :func:`trend`: which way a series goes from its first value to its last (and :func:`turns`, where it turns);
* :func:`how_many`: "all 6", "none of the 6", "4 of 6";
* :func:`most_or_few`: "most", "about half" or "few" for a share; :func:`at_least`: "all" or "at least 44 %".
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from itertools import pairwise

from .significance import SINGLE_RUN_MARGIN, compare

__all__ = ["at_least", "compared", "gap_note", "how_many", "most_or_few", "trend", "turns"]

#: A change smaller than this share of the larger of its two ends reads as "stays level" (:func:`trend`).
LEVEL = 0.05


def compared(gap: float, sigma: float, ahead: str = "ahead of", level: str = "level with",
             behind: str = "behind") -> str:
    """How ``gap`` = A − B of two single runs reads by the project's one rule
    (:func:`~hnclip_core.replication.significance.compare` at one seed: A beats B beyond 2√2σ, σ the seed spread;
    exactly 2√2σ does not): ``ahead`` (A is ``ahead`` B), ``level`` (within 2√2σ) or ``behind``."""
    comparison = compare(gap, 0.0, sigma)
    return ahead if comparison.beats else behind if comparison.behind else level


def gap_note(gap: float, sigma: float) -> str:
    """``gap`` and how it sits against 2√2σ, the spread of a difference of two runs, for a parenthesis:
    "+0.70, within 2√2σ = 1.86"."""
    if math.isnan(sigma):
        return f"{gap:+.2f}, no σ measured"
    margin = SINGLE_RUN_MARGIN * sigma
    return f"{gap:+.2f}, {'within' if compared(gap, sigma) == 'level with' else 'beyond'} 2√2σ = {margin:.2f}"


def trend(values: Sequence[float], level: float = LEVEL, rises: str = "rises", falls: str = "falls",
          stays: str = "stays level") -> str:
    """Which way ``values`` go from the first to the last: ``stays`` when the change is at most ``level`` of the
    larger end's size (a loss from 0.0100 to 0.0104 stays level; from 0.009 to 0.018 it rises)."""
    first, last = values[0], values[-1]
    if abs(last - first) <= level * max(abs(first), abs(last)):
        return stays
    return rises if last > first else falls


def turns(values: Sequence[float], at: str = "at ") -> str:
    """A note for a series that does not move one way, naming where it turns (its position counted from 1, after
    ``at``): " (not monotonically: lowest at 2)"; "" for a monotone series or fewer than three values."""
    steps = [b - a for a, b in pairwise(values)]
    if len(values) < 3 or all(s > 0 for s in steps) or all(s < 0 for s in steps):
        return ""
    low, high = min(range(len(values)), key=values.__getitem__), max(range(len(values)), key=values.__getitem__)
    if 0 < low < len(values) - 1:
        return f" (not monotonically: lowest {at}{low + 1})"
    if 0 < high < len(values) - 1:
        return f" (not monotonically: highest {at}{high + 1})"
    return " (not monotonically)"


def how_many(count: int, total: int, things: str = "") -> str:
    """``count`` of ``total`` in words: "all 6 runs", "none of the 6 runs", "both runs", "4 of 6 runs"."""
    noun = f" {things}" if things else ""
    if total == 2 and count == 2:
        return f"both{noun}"
    if count == total:
        return f"all {total}{noun}"
    if count == 0:
        return f"none of the {total}{noun}"
    return f"{count} of {total}{noun}"


def most_or_few(share: float) -> str:
    """"most" above 60 %, "few" below 40 %, "about half" between (inclusive): for a share in [0, 1]."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"a share is in [0, 1], got {share}")
    return "most" if share > 0.6 else "few" if share < 0.4 else "about half"


def at_least(least: float) -> str:
    """The least share of several, in words: "all" where it is 100 % (not "at least 100 %"), "none" where nothing
    is, else "at least 44 %"."""
    if least >= 1.0:
        return "all"
    return "none" if least <= 0.0 else f"at least {100 * least:.0f} %"
