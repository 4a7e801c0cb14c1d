"""The chapters' trained numbers match the committed run within the seed-derived tolerance
(:mod:`hnclip_core.replication.committed`).

Runs after nbval has executed the chapters (``make test`` and ``make notebook-test`` set ``HNCLIP_CHAPTER_OUTPUT``
to their output folder); the unit tests of the comparison itself run always.
"""

import json
import os
from pathlib import Path

import pytest

from hnclip_core.replication.committed import kind, tolerances, trained_numbers

ROOT = Path(__file__).resolve().parent.parent
REFERENCE = ROOT / "results" / "chapter_numbers.json"
CALIBRATION = ROOT / "results" / "calibration.json"
OUTPUT = os.environ.get("HNCLIP_CHAPTER_OUTPUT")


@pytest.mark.skipif(OUTPUT is None, reason="set HNCLIP_CHAPTER_OUTPUT to a chapters' output folder (make test does)")
def test_trained_numbers_match_the_committed_run():
    reference = json.loads(REFERENCE.read_text())
    measured = trained_numbers(OUTPUT)
    assert sorted(measured) == sorted(reference), "the chapters wrote other metrics than the committed run"
    allowed = tolerances(CALIBRATION)
    off = {k: (measured[k], v) for k, v in reference.items() if abs(measured[k] - v) > allowed[kind(k)] + 1e-9}
    assert not off, f"beyond {allowed}: " + ", ".join(f"{k}: {m} vs {v}" for k, (m, v) in off.items())


def test_numbers_are_collected_from_every_results_file(tmp_path):
    (tmp_path / "fine_tuning.json").write_text(json.dumps(
        {"runs": {"clip": {"last": {"mean_r1": 40.5, "t2i_r1": 41.0, "seconds": 3}, "history": [{"mean_r1": 1}]}}}))
    (tmp_path / "saturation.json").write_text(json.dumps({"dynamics": {"diagnostics": [{"solved_clip": 0.5}]}}))
    assert trained_numbers(tmp_path) == {
        "fine_tuning/runs/clip/last/mean_r1": 40.5, "fine_tuning/runs/clip/last/t2i_r1": 41.0,
        "saturation/dynamics/diagnostics/0/solved_clip": 0.5,
    }


def test_tolerance_is_three_seed_deviations_with_a_floor(tmp_path):
    def run(seed, r1, solved, hn_r1):
        def entry(r):
            return {"history": [{"epoch": 0, "mean_r1": 30.0}, {"epoch": 1, "t2i_r1": r, "i2t_r1": r, "mean_r1": r}],
                    "diagnostics": [{"epoch": 1, "solved_clip": solved, "solved_hn": 0.0}]}
        return {"seed": seed, "clip": entry(r1), "hn": entry(3 * r1), "hn+tok": entry(hn_r1)}  # hn: not counted

    calibration = tmp_path / "calibration.json"
    calibration.write_text(json.dumps({"runs": [run(0, 40.0, 0.4, 40.0), run(1, 42.0, 0.5, 41.0),
                                                run(2, 44.0, 0.6, 42.0)]}))
    spread = tolerances(calibration)
    assert spread["recall"] == pytest.approx(6.0)  # the larger objective's spread (InfoNCE's 2, HN-CLIP's 1)
    assert spread["solved_clip"] == pytest.approx(0.3) and spread["solved_hn"] == 0.01  # each share its own spread
    assert spread["micro_solved_clip"] == 0.01  # not measured by the calibration: the floor of one printed unit
    assert kind("saturation/x/solved_hn") == "solved_hn" and kind("fine_tuning/x/mean_r1") == "recall"
