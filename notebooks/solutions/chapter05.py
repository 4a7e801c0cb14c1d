"""Solutions to the exercises of chapter 5 (``notebooks/05_results.py``): reading a verdict off the results
files instead of taking the scorecard's word for it.

``calibration`` is ``results/calibration.json`` as a dict; ``diagnostics`` the per-epoch rows of a gradient
monitor (``saturation.json``'s ``dynamics.diagnostics``). ``tests/test_exercises.py`` checks them.
"""

from __future__ import annotations

import math
import random
import statistics

from hnclip_core.replication.significance import compare

__all__ = ["seed_gains", "gain_significance", "halving_gains", "saturation_share", "paired_power", "exercise1",
           "exercise2", "exercise3"]


def seed_gains(calibration: dict) -> list[float]:
    """HN-CLIP − InfoNCE average R@1 at the last epoch, one number per seed."""
    return [run["hn+tok"]["last"]["mean_r1"] - run["clip"]["last"]["mean_r1"] for run in calibration["runs"]]


def gain_significance(gains: list[float]) -> dict[str, float]:
    """Mean gain, its standard error over seeds and the ratio of the two (a t statistic with n − 1 d.o.f.)."""
    mean = statistics.fmean(gains)
    stderr = statistics.stdev(gains) / math.sqrt(len(gains))
    return {"mean": mean, "stderr": stderr, "t": mean / stderr if stderr else math.inf}


def halving_gains(gains: list[float]) -> list[float]:
    """The gains x of one more seed at which the t statistic of ``gains + [x]`` is half that of ``gains``.

    With n gains of mean m and sum of squared deviations SS, one more gain x gives the mean m' = (nm + x)/(n + 1)
    and SS' = SS + n/(n + 1)·(x − m)², so t' = m'·√(n(n + 1)/SS'). Setting t' = c = t/2 and squaring gives
    (1 − c²)x² + 2m(n + c²)x + m²(n² − c²) − c²(n + 1)SS/n = 0, whose roots with m' of the sign of c are
    returned, in increasing order. A gain at or below the first root halves t, or worse; when t/2 > 1 a
    second root exists above m, because a gain far above the others widens the spread faster than it raises
    the mean (t' tends to 1 as x grows). Empty when t is infinite or 0.
    """
    n = len(gains)
    t = gain_significance(gains)["t"]
    if n < 2 or not math.isfinite(t) or t == 0:
        return []
    m = statistics.fmean(gains)
    ss = sum((g - m) ** 2 for g in gains)
    c = t / 2
    a, b, k = 1 - c * c, 2 * m * (n + c * c), m * m * (n * n - c * c) - c * c * (n + 1) * ss / n
    if abs(a) < 1e-12:
        roots = [-k / b] if b else []
    else:
        discriminant = b * b - 4 * a * k
        if discriminant < 0:
            return []
        roots = [(-b - math.sqrt(discriminant)) / (2 * a), (-b + math.sqrt(discriminant)) / (2 * a)]
    return sorted(x for x in roots if (n * m + x) * c > 0)


def saturation_share(diagnostics: list[dict], epoch: int = 1) -> float:
    """Share of the measured micro-batches of ``epoch`` whose InfoNCE loss is below 1e-3 (Fig. 4's 80 %)."""
    row = next(r for r in diagnostics if r["epoch"] == epoch)
    return row.get("micro_solved_clip", row["solved_clip"])


def exercise1(calibration: dict) -> dict:
    """Is HN-CLIP's gain over InfoNCE larger than the seeds' noise? (mean, standard error, t, and the fourth
    seed's gains that would halve t: ``halving_gains``, see :func:`halving_gains`)

    Answer (how many standard errors): ``t`` = mean / (stdev/√n) is the number of standard errors. With n
    seeds it is a Student t statistic with n − 1 degrees of freedom, 2 for the calibration's three seeds. Such
    a t has heavy tails: a two-sided 95 % test needs t > 4.30 at 2 d.o.f., and t > 3.18 at 3. Read ``t``
    against these values, not against the normal 1.96. A gain of a few standard errors over three seeds is
    suggestive, not settled. The paper itself re-runs only one extra seed, of one benchmark (Table A8: two
    seeds, HN-CLIP's largest seed-to-seed difference 1.44 over six metrics).

    Answer (what a fourth seed would have to show to halve the confidence): taking "confidence" to be t, a
    fourth gain x changes the mean to (3m + x)/4 and adds ¾(x − m)² to the sum of squares.
    ``halving_gains`` solves t(x) = t/2. Its first root is the answer: a fourth seed whose gain is at or
    below it halves t. Compare that root with the current mean and with the seeds' lowest gain. A root well
    inside the observed range means that one ordinary seed could halve the confidence, so the evidence is
    thin. A root far below, or below zero (InfoNCE winning that seed), means it is robust. A seed equal to the
    mean *raises* t by the factor √2: it leaves the sum of squares unchanged, adds a degree of freedom, and
    grows √n, so SE shrinks by 1/√2. When t/2 > 1 there is a second root above the mean: a seed far better
    than all the others also halves t, because it widens the spread more than it moves the mean.
    """
    gains = seed_gains(calibration)
    return {**gain_significance(gains), "halving_gains": halving_gains(gains)}


def exercise2(calibration: dict) -> list[float]:
    """The saturation check by hand: epoch-1 solved share of each seed's InfoNCE run.

    Answer (against section 7's claim and the paper's 80 %): each value is the share of the measured epoch-1
    micro-batches of one seed's InfoNCE run whose L_CLIP is below 1e-3. Under naive accumulation each
    micro-batch of 16 is a contrastive batch of its own, and the project counts these as the batches of the
    paper's Fig. 4. The scorecard's ``infonce_saturates`` rule asks for more than 50 % in *every* monitored
    run of the results. That includes these InfoNCE runs, but also the calibration's HN-CLIP runs (where the
    monitor scores L_CLIP on the batches of HN-CLIP's own trajectory) and any other run with a gradient
    monitor, such as chapter 2's dynamics run. So if every value here is above 0.5 but the claim is not
    reproduced, a run that this list does not contain is the one below; the verdict's explanation names the
    run with the least share. If the values lie between 0.5 and 0.8,
    the claim reproduces in the rule's sense but more weakly than the paper's 80 % (Fig. 4, §2.4).

    Answer (why the share of whole optimizer steps is much lower): a step's ``solved_clip`` asks whether the
    *mean* of its 8 micro-batch losses is below 1e-3, that is, whether their sum is below 8e-3. The losses span
    orders of magnitude. A solved micro-batch's loss is far below 1e-3, while an unsolved one, typically a
    micro-batch that holds a near-twin pair (chapter 2, section 4), is often far above 8e-3. A twin pair
    that its positives do not lead at all contributes 2 ln 2/B ≈ 0.09 at B = 16 on its own. A
    single unsolved micro-batch therefore makes the whole step unsolved, and a step counts as solved only if
    practically all 8 are. If each micro-batch were solved independently with probability p, the step share
    would be about p⁸. For the paper's 80 % that is 0.8⁸ ≈ 0.17, and for p = 0.5 it is 0.5⁸ ≈ 0.004. The step
    share answers another question (is the whole effective batch of 128 solved?), and the paper's 80 % is a
    statement about batches, not steps.
    """
    return [saturation_share(run["clip"]["diagnostics"]) for run in calibration["runs"]]


def paired_power(lead: float, spread: float, seeds: int, trials: int = 20_000, seed: int = 0) -> float:
    """The share of ``trials`` simulated experiments of ``seeds`` seeds in which the scorecard's paired rule
    (:func:`~hnclip_core.replication.significance.compare`) says HN-CLIP beats InfoNCE, when each seed's
    difference is drawn from N(``lead``, ``spread``²) (a seeded generator)."""
    draw = random.Random(seed).gauss
    baseline = dict.fromkeys(range(seeds), 0.0)
    wins = sum(compare({k: draw(lead, spread) for k in range(seeds)}, baseline, math.nan).beats
               for _ in range(trials))
    return wins / trials


def exercise3(calibration: dict, leads=(0.0, 1.0, 2.0), seeds=(2, 3, 5, 8), trials: int = 20_000) -> dict:
    """How many seeds the paired rule needs: its power at each true lead and number of seeds, for the spread of
    the calibration's per-seed differences.

    The numbers below are the committed calibration's (sd(d) = 0.93 over its three seeds; 20,000 trials each).

    Answer (wins where there is none): the rule says "beats" in 15 % of trials at 2 seeds, 9 % at 3, 3 % at 5.
    Its mean-beyond-2-SE clause alone is a Student t test at t > 2 with n − 1 degrees of freedom, which with 2
    of them noise passes in 9 % of one-sided trials (the two-sided 95 % line there is t > 4.30, exercise 1). So
    at the calibration's 3 seeds about one verdict in eleven could be noise, not one in twenty. A lead of +2
    (twice sd(d)) is found in about 92 % of trials from 3 seeds on.

    Answer (why power falls with seeds): a lead of +1, about sd(d), is found in about half of the trials at 2–3
    seeds and in *fewer* with more: 46 % at 5, 30 % at 8. The clause "ahead at every seed" is the reason: each
    seed's difference is positive with probability Φ(1/0.93) ≈ 0.86, and 0.86⁸ ≈ 0.30. The rule calls a lead
    only when no seed contradicts it, so a lead as small as the seeds' spread is refused ever more often as
    seeds are added, where a rule on the mean alone would grow surer with n. Three seeds can find the +2 the toy
    was designed for and cannot settle a lead the size of the seed noise.
    """
    spread = statistics.stdev(seed_gains(calibration))
    return {"spread": spread, "power": {(lead, n): paired_power(lead, spread, n, trials)
                                        for lead in leads for n in seeds}}


if __name__ == "__main__":
    from pathlib import Path

    from hnclip_core.replication.results_files import Results

    calibration = Results(Path(__file__).resolve().parents[2] / "results").calibration
    print(exercise1(calibration), exercise2(calibration))
    print({f"lead {lead:+g}, {n} seeds": round(p, 3) for (lead, n), p in exercise3(calibration)["power"].items()})
