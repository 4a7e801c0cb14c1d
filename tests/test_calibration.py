"""The four calibration checks pass and fail on hand-made run summaries (calibration.py)."""

import pytest

from hnclip_core.calibration import evaluate_checks


def run(seed, solved_clip, solved_hn, zero, hn_r1, clip_r1, zero_shot):
    diagnostics = [
        {"epoch": e + 1, "solved_clip": sc, "solved_hn": sh, "grad_zero_clip": zero}
        for e, (sc, sh) in enumerate(zip(solved_clip, solved_hn, strict=True))
    ]
    return {
        "seed": seed,
        "hn+tok": {"diagnostics": diagnostics, "best": {"mean_r1": hn_r1}},
        "clip": {"best": {"mean_r1": clip_r1}, "zero_shot": {"mean_r1": zero_shot}},
    }


GEOMETRY_OK = {"mean_pairwise": 0.7, "mean_hardest": 0.95}


def test_all_checks_pass_when_the_phenomenon_is_there():
    runs = [run(s, [0.8, 1.0], [0.5, 0.7], 0.1, 60 + s, 55, 40) for s in range(3)]
    checks = evaluate_checks(runs, GEOMETRY_OK)
    assert [c["passed"] for c in checks] == [True, True, True, True]
    assert checks[0]["value"] == pytest.approx(0.8) and checks[2]["value"] == pytest.approx(6.0)


def test_each_check_fails_on_its_own():
    saturating_too_little = [run(s, [0.3, 1.0], [0.5, 0.7], 0.0, 60, 55, 40) for s in range(3)]
    assert [c["passed"] for c in evaluate_checks(saturating_too_little, GEOMETRY_OK)] == [False, True, True, True]
    hn_dies_in_epoch_2 = [run(0, [0.8, 1.0], [0.5, 0.85], 0.0, 60, 55, 40)]
    assert [c["passed"] for c in evaluate_checks(hn_dies_in_epoch_2, GEOMETRY_OK)] == [True, False, True, True]
    small_gain = [run(0, [0.8, 1.0], [0.5, 0.7], 0.0, 56.5, 55, 40)]
    assert [c["passed"] for c in evaluate_checks(small_gain, GEOMETRY_OK)] == [True, True, False, True]
    below_zero_shot = [run(0, [0.8, 1.0], [0.5, 0.7], 0.0, 30, 20, 40)]
    assert evaluate_checks(below_zero_shot, GEOMETRY_OK)[2]["passed"] is False
    isotropic = {"mean_pairwise": 0.2, "mean_hardest": 0.98}
    assert [c["passed"] for c in evaluate_checks([run(0, [0.8], [0.5], 0.0, 60, 55, 40)], isotropic)][3] is False
