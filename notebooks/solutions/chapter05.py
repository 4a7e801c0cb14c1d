"""Solutions to the exercises of chapter 5 (``notebooks/05_results.py``): reading a verdict off the results
files instead of taking the scorecard's word for it.

``calibration`` is ``results/calibration.json`` as a dict; ``diagnostics`` the per-epoch rows of a gradient
monitor (``saturation.json``'s ``dynamics.diagnostics``). ``tests/test_exercises.py`` checks them.
"""

from __future__ import annotations

import math
import statistics

__all__ = ["seed_gains", "gain_significance", "saturation_share", "exercise1", "exercise2"]


def seed_gains(calibration: dict) -> list[float]:
    """HN-CLIP − InfoNCE average R@1 at the last epoch, one number per seed."""
    return [run["hn+tok"]["last"]["mean_r1"] - run["clip"]["last"]["mean_r1"] for run in calibration["runs"]]


def gain_significance(gains: list[float]) -> dict[str, float]:
    """Mean gain, its standard error over seeds and the ratio of the two (a t statistic with n − 1 d.o.f.)."""
    mean = statistics.fmean(gains)
    stderr = statistics.stdev(gains) / math.sqrt(len(gains))
    return {"mean": mean, "stderr": stderr, "t": mean / stderr if stderr else math.inf}


def saturation_share(diagnostics: list[dict], epoch: int = 1) -> float:
    """Share of the measured micro-batches of ``epoch`` whose InfoNCE loss is below 1e-3 (Fig. 4's 80 %)."""
    row = next(r for r in diagnostics if r["epoch"] == epoch)
    return row.get("micro_solved_clip", row["solved_clip"])


def exercise1(calibration: dict) -> dict[str, float]:
    """Is HN-CLIP's gain over InfoNCE larger than the seeds' noise? (mean, standard error, t)"""
    return gain_significance(seed_gains(calibration))


def exercise2(calibration: dict) -> list[float]:
    """The saturation check by hand: epoch-1 solved share of each seed's InfoNCE run."""
    return [saturation_share(run["clip"]["diagnostics"]) for run in calibration["runs"]]


if __name__ == "__main__":
    import json
    from pathlib import Path

    calibration = json.loads((Path(__file__).resolve().parents[2] / "results" / "calibration.json").read_text())
    print(exercise1(calibration), exercise2(calibration))
