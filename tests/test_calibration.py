"""The calibration checks pass and fail on hand-made run summaries (calibration.py)."""

import pytest

from hnclip_core.replication.calibration import evaluate_checks


def run(seed, solved_clip=(0.8, 1.0), solved_hn=(0.5, 0.7), ratio=500.0, similarity=0.7, hn_r1=60, clip_r1=55,
        zero_shot=40):
    def diagnostics(solved):
        return [{"epoch": e + 1, "micro_solved_clip": s, "micro_solved_hn": h, "median_grad_ratio": ratio}
                for e, (s, h) in enumerate(zip(solved, solved_hn, strict=True))]

    history = [{"epoch": 0, "caption_mean_similarity": 0.8}, {"epoch": 1, "caption_mean_similarity": similarity}]
    return {
        "seed": seed,
        "hn+tok": {"diagnostics": diagnostics(solved_clip), "history": history, "last": {"mean_r1": hn_r1}},
        "clip": {"diagnostics": diagnostics(solved_clip), "last": {"mean_r1": clip_r1},
                 "zero_shot": {"mean_r1": zero_shot}},
    }


GEOMETRY = {"mean_pairwise": 0.8, "mean_hardest": 0.95}
REGIME = {"solved_share": 0.6, "twin_error_share": 0.85, "own_family_top1": 0.97}


def verdicts(runs, geometry=GEOMETRY, regime=REGIME):
    return [c["passed"] for c in evaluate_checks(runs, geometry, regime)]


def test_all_checks_pass_when_the_phenomenon_is_there():
    runs = [run(s, hn_r1=60 + s) for s in range(3)]
    checks = evaluate_checks(runs, GEOMETRY, REGIME)
    assert all(c["passed"] for c in checks)
    assert checks[2]["value"] == pytest.approx(0.8) and checks[6]["value"] == pytest.approx(6.0)


@pytest.mark.parametrize(
    ("failing", "kwargs", "geometry", "regime"),
    [
        (0, {}, GEOMETRY, {**REGIME, "solved_share": 0.4}),
        (0, {}, GEOMETRY, {**REGIME, "twin_error_share": 0.5}),
        (0, {}, GEOMETRY, {**REGIME, "own_family_top1": 0.9}),
        (1, {}, {"mean_pairwise": 0.6, "mean_hardest": 0.95}, REGIME),
        (1, {}, {"mean_pairwise": 0.8, "mean_hardest": 0.995}, REGIME),  # twins the encoder cannot tell apart
        (2, {"solved_clip": (0.3, 1.0)}, GEOMETRY, REGIME),
        (3, {"solved_hn": (0.5, 0.85)}, GEOMETRY, REGIME),  # L_HN dies in epoch 2
        (4, {"ratio": 50.0}, GEOMETRY, REGIME),
        (5, {"similarity": 0.3}, GEOMETRY, REGIME),
        (6, {"hn_r1": 57.5}, GEOMETRY, REGIME),  # a gain of 2.5 < 3
        (6, {"hn_r1": 45, "clip_r1": 30}, GEOMETRY, REGIME),  # InfoNCE below zero-shot
    ],
)
def test_each_check_fails_on_its_own(failing, kwargs, geometry, regime):
    expected = [k != failing for k in range(7)]
    assert verdicts([run(0, **kwargs)], geometry, regime) == expected


def test_the_gain_must_hold_on_every_seed_not_only_on_average():
    runs = [run(0, hn_r1=65), run(1, hn_r1=56)]  # mean gain 5.5, seed 1 only +1
    assert verdicts(runs)[6] is False
