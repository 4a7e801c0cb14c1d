"""The statistics of every comparison the project prints: one seed spread σ, paired differences across seeds, and
one rule for "A beats B". The scorecard, the chapters, the docs and the tests read them here; nothing else computes
a spread.

**σ, the seed spread** (:func:`seed_spread`). The pooled sample standard deviation of a metric at the last epoch
over every configuration run with more than one seed: each configuration's variance with weight (runs − 1). A run
is counted once, whichever files record it: runs that agree in every parameter of the tidy table and in the seed are
one run (the seeds study re-runs the calibration's runs; make ablations trains some configurations for two studies),
whose number is the mean of what the files record, which differ by float noise at most. σ is the spread of *one
run*: changing the seed alone moves a run that much.

**A beats B** (:func:`compare`), at the same configuration but for what is compared, by one paired rule:

* with two or more seeds that ran both A and B, the seed-by-seed differences dᵢ = Aᵢ − Bᵢ: A beats B when A is
  ahead at every seed **and** the mean difference exceeds twice its standard error, sd(d)/√n. A paired test, because
  the two runs of one seed share their data subset and batch order, so that seed noise *may* cancel in dᵢ; the test
  measures the spread of dᵢ rather than assuming it (on the shipped toy it cancels none: sd(d) 0.93 = √2σ, chapter
  5). Its error rates, simulated in chapter 5's exercise 3 at that spread: at three seeds it calls a win with no
  true lead in about 9 % of trials (the mean clause is a t test at t > 2 with 2 degrees of freedom), and finds a
  lead of twice sd(d) in about 92 %; the every-seed clause makes it refuse a lead as small as sd(d) more often the
  more seeds there are;
* with one seed (the ablation grids run one): the difference of two runs spreads by √2·σ when they are independent,
  so A beats B when A − B exceeds 2·√2·σ (:data:`SINGLE_RUN_MARGIN` σ), which two runs of one configuration exceed
  in 4.6 % of seeds (chapter 4's exercise 4). Where the runs of one seed are positively correlated the bound is
  conservative: a true gain may go unrecognised.

"B beats A" is the mirror image, and neither is a tie ("level"). A result exactly at a threshold does not pass.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from statistics import fmean, stdev, variance

from .tidy import PARAMETERS, Table

__all__ = ["SINGLE_RUN_MARGIN", "TIE", "Comparison", "SeedSpread", "compare", "seed_spread"]

#: How many σ one run must lead another of the same seed by to beat it: twice the spread √2·σ of such a difference.
SINGLE_RUN_MARGIN = 2 * math.sqrt(2)
#: R@1 values are multiples of 100/N: a difference below this is float noise, i.e. a tie.
TIE = 1e-9
#: What tells one configuration from another: every parameter but the files' labels, the seed and the epoch.
_CONFIGURATION = tuple(p for p in PARAMETERS if p not in ("source", "study", "run", "seed", "epoch"))
_METRIC_NAMES = {"mean_r1": "average R@1", "t2i_r1": "T→I R@1", "i2t_r1": "I→T R@1"}


@dataclass(frozen=True)
class SeedSpread:
    """σ of one metric (:func:`seed_spread`): ``value`` (nan without two seeds of one configuration), the
    ``runs`` it pools (each counted once) and the ``configurations`` they form."""

    metric: str
    value: float
    runs: int
    configurations: int

    @property
    def measured(self) -> bool:
        return self.configurations > 0

    def describe(self) -> str:
        """What this σ is the σ of, in one phrase."""
        name = _METRIC_NAMES.get(self.metric, self.metric)
        if not self.measured:
            return f"no seed spread of {name}: no configuration was run with two seeds"
        return (f"σ = {self.value:.2f}, the seed spread of one run's last-epoch {name} (pooled over "
                f"{self.configurations} configuration{'s' * (self.configurations != 1)} run with several seeds, "
                f"{self.runs} independent runs)")


def _independent_runs(table: Table, metric: str) -> dict[tuple, dict[int, float]]:
    """``{configuration: {seed: metric at the last epoch}}``, each run once (module docstring): where several rows
    are one run, its metric is their mean (they differ by float noise at most, e.g. across thread counts)."""
    recorded: dict[tuple, dict[int, list[float]]] = {}
    for r in table.last().having(metric):
        if r["seed"] is not None:
            configuration = tuple(r[p] for p in _CONFIGURATION)
            recorded.setdefault(configuration, {}).setdefault(r["seed"], []).append(r[metric])
    return {configuration: {seed: fmean(values) for seed, values in seeds.items()}
            for configuration, seeds in recorded.items()}


def seed_spread(table: Table, metric: str = "mean_r1") -> SeedSpread:
    """σ of ``metric`` in ``table``: the pooled sample standard deviation over seeds (module docstring)."""
    spreads = [(len(v) - 1, variance(v.values())) for v in _independent_runs(table, metric).values() if len(v) > 1]
    if not spreads:
        return SeedSpread(metric, math.nan, 0, 0)
    dof = sum(n for n, _ in spreads)
    return SeedSpread(metric, math.sqrt(sum(n * var for n, var in spreads) / dof), dof + len(spreads), len(spreads))


@dataclass(frozen=True)
class Comparison:
    """A − B by :func:`compare`'s rule: the differences by seed, and whether A beats B, B beats A, or neither."""

    differences: dict[int, float]
    sigma: float

    @property
    def seeds(self) -> int:
        return len(self.differences)

    @property
    def mean(self) -> float:
        return fmean(self.differences.values())

    @property
    def margin(self) -> float:
        """What the mean difference must exceed: 2 standard errors of the paired differences over seeds, or with one
        seed 2·√2·σ."""
        if self.seeds > 1:
            return 2 * stdev(self.differences.values()) / math.sqrt(self.seeds)
        return SINGLE_RUN_MARGIN * self.sigma

    def _ahead(self, sign: int) -> bool:
        if math.isnan(self.margin):
            return False
        every = all(sign * d > TIE for d in self.differences.values())
        return every and sign * self.mean - self.margin > TIE

    @property
    def beats(self) -> bool:
        return self._ahead(+1)

    @property
    def behind(self) -> bool:
        return self._ahead(-1)

    @property
    def level(self) -> bool:
        return not self.beats and not self.behind

    def lead(self, sign: int = +1) -> float:
        """How far A's lead (``sign`` −1: B's) lies past the rule, in units of :attr:`margin`: its closer condition,
        the mean difference beyond the margin or the least seed's difference beyond 0. Positive where that side wins;
        ``-lead(-1)`` > 0 where it is not behind. Where identical differences leave no standard error, the unit is a
        single run's margin 2√2σ."""
        least = min(sign * d for d in self.differences.values())
        unit = self.margin or SINGLE_RUN_MARGIN * self.sigma or 1.0
        return min(sign * self.mean - self.margin, least) / unit

    def describe(self) -> str:
        """The difference and the rule it was judged by, e.g. "+2.07 over 3 seeds (+1.20, +3.05, +1.95), 2 SE 1.07"."""
        if self.seeds > 1:
            each = ", ".join(f"{d:+.2f}" for d in self.differences.values())
            return f"{self.mean:+.2f} over {self.seeds} seeds ({each}), 2 SE {self.margin:.2f}"
        return f"{self.mean:+.2f} at one seed, 2√2σ {self.margin:.2f} (σ {self.sigma:.2f})"


def compare(a: Mapping[int, float] | float, b: Mapping[int, float] | float, sigma: float) -> Comparison:
    """A − B by the module's rule. ``a`` and ``b`` map seeds to a metric (the seeds both have are compared), or are
    two single runs' numbers; ``sigma`` is the metric's :func:`seed_spread`, used where one seed is compared."""
    if not isinstance(a, Mapping) or not isinstance(b, Mapping):
        if isinstance(a, Mapping) or isinstance(b, Mapping):
            raise TypeError("compare two seed mappings or two numbers, not one of each")
        return Comparison({0: a - b}, sigma)
    seeds = sorted(set(a) & set(b))
    if not seeds:
        raise ValueError(f"no seed ran both sides (seeds {sorted(a)} and {sorted(b)})")
    return Comparison({s: a[s] - b[s] for s in seeds}, sigma)
