"""The replication scorecard: the transcribed tables (results/paper) and the claims' verdicts."""

import json
import math

import pytest

from hnclip_core.replication import paper
from hnclip_core.replication.scorecard import (
    CLAIMS,
    PAPER_DIR,
    STATUSES,
    PaperTableError,
    build_scorecard,
    claims_table,
    load_paper_table,
    measurements_from_outputs,
    paper_tables,
    paper_value,
    scorecard_table,
)

EXPECTED_TABLES = {
    "table1", "table2", "table3a", "table3b", "table3c", "tableA1", "tableA2", "tableA3", "tableA4", "tableA5",
    "tableA6", "tableA7", "tableA8", "tableA9", "tableA10", "tableA11",
}


# --------------------------------------------------------------------------------------------- paper tables


def test_every_paper_file_loads_and_validates():
    tables = paper_tables()
    assert set(tables) == EXPECTED_TABLES
    assert {p.stem for p in PAPER_DIR.glob("*.json")} == EXPECTED_TABLES
    for name, table in tables.items():
        assert "2608.18521" in table.source and "page" in table.source, name
        assert table.caption and table.rows
        for row in table.rows:
            assert set(row.values) <= set(table.columns)


@pytest.mark.parametrize("name", ["1", "Table 1", "table1", "TABLE 1"])
def test_table_names(name):
    assert load_paper_table(name).name == "table1"


@pytest.mark.parametrize("name, stem", [("A5", "tableA5"), ("a5", "tableA5"), ("Table A10", "tableA10"),
                                        ("3a", "table3a"), ("Table 3c", "table3c")])
def test_appendix_and_sub_table_names(name, stem):
    assert load_paper_table(name).name == stem


# Values read by hand from the v1 text of the paper (table, method, dataset, metric, setting, value).
SPOT_CHECKS = [
    ("1", "HN-CLIP", "DOCCI", "t2i_r1", None, 88.25),
    ("1", "Long-CLIP", "DOCCI", "t2i_r1", None, 78.78),
    ("1", "StructXLIP", "Long-DCI", "i2t_r1", None, 72.30),
    ("1", "HN-CLIP", "Urban-1K", "t2i_r1", None, 91.10),
    ("1", "Δ (HN-CLIP − best competitor)", "Long-DCI", "i2t_r5", None, 0.00),
    ("2", "FineLIP + L_HN", "Long-DCI", "i2t_r1", None, 73.39),
    ("2", "Δ (FineLIP + L_HN − FineLIP)", "Long-DCI", "i2t_r1", None, 23.87),
    ("3a", "HN-CLIP", "Long-DCI", "t2i_r1", "γ=0.75", 79.96),
    ("3a", "HN-CLIP", "average (4 benchmarks)", "mean_r1", "γ=0.5", 83.86),
    ("3b", "+L_HN +L_tok", "average (DCI, Long-DCI)", "mean_r1", None, 78.75),
    ("3b", "+L_tok", "DCI", "t2i_r1", None, 79.24),
    ("3c", "Frozen Ḡ (at init)", "Urban-1K", "i2t_r1", None, 83.50),
    ("3c", "Δ (recomputed − frozen)", "Long-DCI", "t2i_r1", None, -0.90),
    ("A1", "pre-trained Long-CLIP-L text encoder", "Urban-1K", "train_pairs", None, 14579),
    ("A1", "pre-trained Long-CLIP-L text encoder", "DCI", "mean_hardest", None, 0.92),
    ("A2", "Frozen Ḡ (at init)", "DCI", "best_epoch", None, 1),
    ("A2", "Recomputed Ḡ (default)", "Long-DCI", "t2i_r10", None, 96.34),
    ("A3", "HN-CLIP (ours)", "DCI", "wall_clock_min", None, 17),
    ("A4", "DoRA + L_HN", "Urban-1K", "t2i_r1", None, 83.20),
    ("A4", "FineLIP", "DOCCI", "t2i_r1", None, 77.12),
    ("A5", "+L_HN", "Urban-1K", "i2t_r50", None, 99.80),
    ("A6", "HN-CLIP", "Urban-1K", "i2t_r25", "γ=1.0", 99.80),
    ("A7", "HN-CLIP", "Long-DCI", "t2i_r1", None, 62.60),
    ("A8", "GOAL", "Long-DCI", "i2t_r1", "seed 43", 72.03),
    ("A8", "HN-CLIP", "Long-DCI", "max_abs_delta", "max|Δ| over seeds", 1.44),
    ("A9", "HN-CLIP", "DOCCI", "t2i_r1", "20%", 85.43),
    ("A9", "Δ (HN-CLIP − GOAL)", "DCI", "mean_r1", "5%", 4.11),
    ("A10", "HN-CLIP", "DOCCI", "t2i_r1", "trained on DCI", 85.00),
    ("A10", "GOAL", "DCI", "i2t_r1", "trained on DOCCI", 69.88),
    ("A11", "HN-CLIP", "DOCCI", "t2i_r1_std", None, 0.14),
]


@pytest.mark.parametrize("table, method, dataset, metric, setting, expected", SPOT_CHECKS)
def test_transcribed_numbers(table, method, dataset, metric, setting, expected):
    assert paper_value(table, method=method, dataset=dataset, metric=metric, setting=setting) == expected


def test_row_flags():
    t1 = load_paper_table("1")
    zero_shot = {r.method for r in t1.rows if r.zero_shot}
    assert zero_shot == {"Long-CLIP"}
    assert all(r.derived for r in t1.rows if r.method.startswith("Δ"))
    assert load_paper_table("A5").find("hn+tok", "Long-DCI").replica
    # a method can be looked up by the project's objective name
    assert paper_value("A5", method="clip", dataset="DOCCI", metric="t2i_r1") == 86.45


def test_paper_py_constants_agree_with_the_tables():
    """paper.py's numbers are a subset of the transcribed tables (to be made their single source)."""
    rows = (("zero-shot", "1", "Long-CLIP"), ("clip", "A5", "InfoNCE"), ("hn+tok", "1", "HN-CLIP"))
    for method, table, label in rows:
        for direction in ("t2i", "i2t"):
            for k, value in zip((1, 5, 10), paper.DOCCI_RECALL[method][direction], strict=True):
                assert paper_value(table, method=label, dataset="DOCCI", metric=f"{direction}_r{k}") == value
    for dataset, geometry in paper.CAPTION_GEOMETRY.items():
        row = load_paper_table("A1").find("pre-trained Long-CLIP-L text encoder", dataset)
        assert row.values["mean_pairwise"] == geometry["mean_pairwise"]
        assert row.values["mean_hardest"] == geometry["mean_hardest"]


def test_lookup_errors_are_clear():
    with pytest.raises(KeyError, match="no such row"):
        paper_value("1", method="CLIP-Nonexistent", dataset="DOCCI", metric="t2i_r1")
    with pytest.raises(KeyError, match="pass setting="):
        paper_value("3a", method="HN-CLIP", dataset="DOCCI", metric="t2i_r1")
    with pytest.raises(KeyError, match="has no 't2i_r25'"):
        paper_value("1", method="HN-CLIP", dataset="DOCCI", metric="t2i_r25")
    with pytest.raises(ValueError, match="prints no number"):  # "≈ 0" in Table A4
        paper_value("A4", method="Δ (Long-CLIP + L_HN − Long-CLIP)", dataset="DOCCI", metric="t2i_r10")
    with pytest.raises(PaperTableError, match="no such file"):
        load_paper_table("A99")


def _good_table() -> dict:
    return {
        "source": "arXiv 2608.18521v1, Table 9 (page not given in the text version)",
        "caption": "a test table",
        "columns": ["t2i_r1", "i2t_r1"],
        "rows": [{"method": "HN-CLIP", "dataset": "DOCCI", "values": {"t2i_r1": 88.25, "i2t_r1": 86.24}}],
    }


def _break_missing_key(d):
    del d["caption"]


def _break_value(d):
    d["rows"][0]["values"]["t2i_r1"] = "88.25"


def _break_column(d):
    d["rows"][0]["values"]["t2i_r5"] = 98.45


def _break_source(d):
    d["source"] = "arXiv 2608.18521v1, Table 9"


def _break_duplicate(d):
    d["rows"].append(dict(d["rows"][0]))


def _break_row_key(d):
    d["rows"][0]["methd"] = "typo"


def _break_percentage(d):
    d["rows"][0]["values"]["i2t_r1"] = 862.4


@pytest.mark.parametrize("breaker, message", [
    (_break_missing_key, r"missing key\(s\) \['caption'\]"),
    (_break_value, r"rows\[0\].values\['t2i_r1'\] must be a finite number or null"),
    (_break_column, r"'t2i_r5', which is not in 'columns'"),
    (_break_source, r"must give the page"),
    (_break_duplicate, r"rows\[1\] repeats"),
    (_break_row_key, r"rows\[0\] has unknown key\(s\) \['methd'\]"),
    (_break_percentage, r"is not a percentage"),
])
def test_malformed_file_gives_a_clear_error(tmp_path, breaker, message):
    path = tmp_path / "table9.json"
    path.write_text(json.dumps(_good_table()))
    assert load_paper_table(path).rows[0].values["t2i_r1"] == 88.25
    data = _good_table()
    breaker(data)
    path.write_text(json.dumps(data))
    with pytest.raises(PaperTableError, match=message) as error:
        load_paper_table(path)
    assert str(path) in str(error.value)


def test_invalid_json_names_the_file(tmp_path):
    path = tmp_path / "tableX.json"
    path.write_text('{"source": ')
    with pytest.raises(PaperTableError, match="not valid JSON") as error:
        load_paper_table(path)
    assert str(path) in str(error.value)


# --------------------------------------------------------------------------------------------- claims


def run(t2i, i2t=None, history=None, zero=20.0):
    """A training result as train() returns it; ``history`` lists the mean R@1 of epochs 1, 2, ..."""
    i2t = t2i if i2t is None else i2t
    zero_row = {"epoch": 0, "t2i_r1": zero, "i2t_r1": zero, "mean_r1": zero}
    epochs = [{"epoch": e, "t2i_r1": v, "i2t_r1": v, "mean_r1": v} for e, v in enumerate(history or [], start=1)]
    last = {"epoch": len(epochs) or 3, "t2i_r1": t2i, "i2t_r1": i2t, "mean_r1": (t2i + i2t) / 2}
    if epochs:
        epochs[-1] = last
    return {"zero_shot": zero_row, "best": last, "last": last, "history": [zero_row, *(epochs or [last])]}


def transferred(**mean_r1_by_test):
    """One method's evaluations on several test benchmarks: {test: {"zero_shot": row, "last": row}}."""
    return {test: {"zero_shot": run(20.0)["zero_shot"], "last": run(value)["last"]}
            for test, value in mean_r1_by_test.items()}


def diag(**per_epoch):
    """Two epochs of diagnostics; each keyword gives the two epochs' values of one key."""
    base = {"measurements": 4, "solved_clip": 0.8, "solved_hn": 0.5, "grad_zero_clip": 0.0,
            "median_grad_ratio": 1e3, "cosine_mean": 0.5}
    rows = [{"epoch": e, **base} for e in (1, 2)]
    for key, values in per_epoch.items():
        for row, value in zip(rows, values, strict=True):
            row[key] = value
    return {"diagnostics": rows}



def speed(img_per_s: float) -> dict:
    """One configuration of benchmarks/framework_throughput.py's JSON."""
    return {"img_per_s": img_per_s, "relative_time": 1.0, "seconds": [1.0]}

CASES = {
    # claim id: (measurements that reproduce it, measurements that do not)
    "geometry": ({"geometry": {"mean_pairwise": 0.85, "mean_hardest": 0.93}},
                 {"geometry": {"mean_pairwise": 0.55, "mean_hardest": 0.98}}),
    "infonce_saturates": (diag(solved_clip=[0.8, 1.0]), diag(solved_clip=[0.1, 0.9])),
    "exact_zero_gradients": (diag(grad_zero_clip=[0.0, 0.47]), diag(grad_zero_clip=[0.0, 0.0])),
    "hn_stays_active": (diag(solved_hn=[0.5, 0.7]), diag(solved_hn=[0.5, 0.9])),
    "gradient_ratio": (diag(median_grad_ratio=[1e3, 1e5]), diag(median_grad_ratio=[15.0, 5.0])),
    "gradient_aligned": (diag(cosine_mean=[0.5, math.nan]), diag(cosine_mean=[0.3, -0.1])),
    "beats_infonce": ({"fine_tuning": {"hn+tok": run(30.0), "clip": run(28.0)}},
                      {"fine_tuning": {"hn+tok": run(27.0), "clip": run(28.0)}}),
    "beats_zero_shot": ({"fine_tuning": {"hn+tok": run(30.0, zero=28.0), "clip": run(28.0)}},
                        {"fine_tuning": {"hn+tok": run(25.0, zero=28.0), "clip": run(28.0)}}),
    "leads_from_first_epoch": (
        {"fine_tuning": {"hn+tok": run(30.0, history=[26, 28, 30]), "clip": run(28.0, history=[22, 25, 28])}},
        {"fine_tuning": {"hn+tok": run(30.0, history=[20, 28, 30]), "clip": run(28.0, history=[22, 25, 28])}}),
    "first_epoch_matches_final": (
        {"fine_tuning": {"hn+tok": run(31.0, history=[29, 30, 31]), "clip": run(28.0, history=[22, 25, 28])}},
        {"fine_tuning": {"hn+tok": run(30.0, history=[25, 28, 30]), "clip": run(28.0, history=[22, 25, 28])}}),
    "gamma_beats_zero": ({"gamma": {"0": run(18.0, 19.0), "0.5": run(25.0, 22.0), "1": run(24.0, 22.0)}},
                         {"gamma": {"0": run(30.0, 30.0), "0.5": run(25.0, 22.0), "1": run(24.0, 22.0)}}),
    "components": (
        {"components": {"clip": run(20.0), "tok": run(20.0), "hn": run(25.0), "hn+tok": run(25.2)}},
        {"components": {"clip": run(20.0), "tok": run(20.0), "hn": run(25.0), "hn+tok": run(23.0)}}),
    "recomputed_beats_frozen": ({"margin_source": {"recomputed": run(24.0), "frozen": run(23.0)}},
                                {"margin_source": {"recomputed": run(22.0), "frozen": run(23.0)}}),
    "milder_gamma_transfers": (
        {"gamma_transfer": {"0": run(26.0), "0.25": run(30.0), "0.5": run(29.0), "1.0": run(27.0)}},
        {"gamma_transfer": {"0.25": run(27.0), "0.5": run(29.0), "1.0": run(30.0)}}),
    "data_efficiency": ({"fractions": {"0.2": {"hn+tok": run(29.0)}, "1": {"clip": run(28.0), "hn+tok": run(31.0)}}},
                        {"fractions": {"20%": {"hn+tok": run(27.0)}, "100%": {"clip": run(28.0)}}}),
    "seed_spread": ({"seeds": {"0": {"hn+tok": run(30.0, 29.0)}, "1": {"hn+tok": run(30.5, 29.3)}}},
                    {"seeds": {"0": {"hn+tok": run(30.0, 29.0)}, "1": {"hn+tok": run(32.0, 29.3)}}}),
    "cross_domain": (
        {"transfer": {"a": {"hn+tok": transferred(a=30.0, b=26.0), "clip": transferred(a=28.0, b=24.0),
                            "tok": transferred(a=28.5, b=25.0)},
                      "b": {"hn+tok": transferred(b=31.0, a=27.0), "clip": transferred(b=29.0, a=25.5)}}},
        # in-domain ahead, but behind tok on the cross-domain a → b direction
        {"transfer": {"a": {"hn+tok": transferred(a=30.0, b=24.5), "clip": transferred(a=28.0, b=24.0),
                            "tok": transferred(a=28.5, b=25.0)}}}),
    "plug_and_play": (
        {"plug_and_play": {"longclip": {"clip": run(28.0), "hn": run(29.0)}, "lora": {"clip": run(25.0),
                                                                                     "hn": run(25.5)}}},
        {"plug_and_play": {"longclip": {"clip": run(28.0), "hn": run(29.0)}, "goal": {"clip": run(25.0),
                                                                                     "hn": run(25.0)}}}),
    "efficiency": (
        {"throughput": {"longclip": {"clip": speed(70.0), "hn": speed(69.0)}, "goal": {"clip": speed(30.0)},
                        "structxlip": {"clip": speed(50.0), "hn": speed(49.0)}}},
        # StructXLIP-style fine-tuning faster than L_HN inside Long-CLIP
        {"throughput": {"longclip": {"hn": speed(40.0)}, "goal": {"clip": speed(30.0)},
                        "structxlip": {"clip": speed(50.0)}}}),
    "temperature_plateau": (
        {"temperature": {"25": {"0": run(20.0), "1": run(22.0), "8": run(10.0)},
                         "100": {"0": run(20.0), "0.25": run(21.0), "0.5": run(23.0), "1": run(22.0)}}},
        # at s = 25, γ = 1 (s·γ 25, inside the plateau) does not beat γ = 0
        {"temperature": {"25": {"0": run(20.0), "1": run(19.0)},
                         "100": {"0": run(20.0), "0.25": run(21.0), "0.5": run(23.0), "1": run(22.0)}}}),
}

# Measurements that have the claim's section but not everything the claim needs.
INCOMPLETE = {
    "geometry": {"geometry": {"mean_pairwise": 0.85}},
    "infonce_saturates": {"diagnostics": [{"epoch": 0, "solved_clip": 1.0}]},
    "exact_zero_gradients": {"diagnostics": [{"epoch": 1, "solved_clip": 1.0}]},
    "hn_stays_active": {"diagnostics": [{"epoch": 1, "solved_clip": 1.0}]},
    "gradient_ratio": diag(median_grad_ratio=[math.nan, math.nan]),
    "gradient_aligned": diag(cosine_mean=[math.nan, math.nan]),
    "beats_infonce": {"fine_tuning": {"hn+tok": run(30.0)}},
    "beats_zero_shot": {"fine_tuning": {"hn+tok": {"last": run(30.0)["last"]}}},
    "leads_from_first_epoch": {"fine_tuning": {"hn+tok": {"last": run(30.0)["last"]}, "clip": run(28.0)}},
    "first_epoch_matches_final": {"fine_tuning": {"hn+tok": {"last": run(30.0)["last"]}, "clip": run(28.0)}},
    "gamma_beats_zero": {"gamma": {"0.5": run(25.0), "1": run(24.0)}},
    "components": {"components": {"clip": run(20.0), "hn": run(25.0), "hn+tok": run(25.2)}},
    "recomputed_beats_frozen": {"margin_source": {"recomputed": run(24.0)}},
    "milder_gamma_transfers": {"gamma_transfer": {"0": run(30.0), "0.5": run(29.0)}},
    "data_efficiency": {"fractions": {"0.2": {"hn+tok": run(29.0)}, "1": {"hn+tok": run(31.0)}}},
    "seed_spread": {"seeds": {"0": {"hn+tok": run(30.0)}, "1": {"clip": run(30.0)}}},
    "cross_domain": {"transfer": {"a": {"hn+tok": transferred(a=30.0), "clip": transferred(a=28.0, b=24.0)}}},
    "temperature_plateau": {"temperature": {"25": {"1": run(22.0)}, "100": {"0": run(20.0), "2": run(22.0)}}},
    "plug_and_play": {"plug_and_play": {"longclip": {"clip": run(28.0), "hn": run(29.0)}, "lora": {"clip": run(2)}}},
    "efficiency": {"throughput": {"longclip": {"clip": speed(70.0)}, "goal": {"clip": speed(30.0)}}},
}

CLAIM_BY_ID = {c.id: c for c in CLAIMS}


def test_every_claim_has_cases():
    assert set(CASES) == set(CLAIM_BY_ID) == set(INCOMPLETE)
    assert len(CLAIMS) >= 13
    for claim in CLAIMS:
        assert claim.text and claim.paper_reference and claim.operationalisation and claim.needs


@pytest.mark.parametrize("claim_id", sorted(CASES))
def test_claim_reproduced_when_it_should_be(claim_id):
    result = CLAIM_BY_ID[claim_id].evaluate(CASES[claim_id][0])
    assert result.status == "reproduced", result.explanation
    assert result.ours and result.paper and result.explanation


@pytest.mark.parametrize("claim_id", sorted(CASES))
def test_claim_not_reproduced_when_it_should_not_be(claim_id):
    result = CLAIM_BY_ID[claim_id].evaluate(CASES[claim_id][1])
    assert result.status == "not reproduced", result.explanation
    assert result.ours


@pytest.mark.parametrize("claim_id", sorted(CASES))
def test_claim_not_measured_without_its_inputs(claim_id):
    claim = CLAIM_BY_ID[claim_id]
    for measurements in ({}, INCOMPLETE[claim_id]):
        result = claim.evaluate(measurements)
        assert result.status == "not measured", (measurements, result.explanation)
        assert result.ours == {} and result.explanation.startswith("not measured")
        assert result.paper  # the paper's side is shown even when ours is missing


def test_claim_numbers_are_the_papers():
    paper_side = CLAIM_BY_ID["beats_infonce"].evaluate({}).paper
    assert paper_side["DOCCI hn+tok avg R@1 (Table 1)"] == pytest.approx((88.25 + 86.24) / 2)
    assert paper_side["DOCCI InfoNCE avg R@1 (Table A5)"] == pytest.approx((86.45 + 84.10) / 2)
    fractions = CLAIM_BY_ID["data_efficiency"].evaluate({}).paper
    assert fractions["DOCCI: HN-CLIP 20 % / StructXLIP 100 % avg R@1"] == pytest.approx(
        [(85.43 + 83.75) / 2, (84.73 + 82.61) / 2])


def test_gamma_claim_names_the_failing_gamma():
    result = CLAIM_BY_ID["gamma_beats_zero"].evaluate(
        {"gamma": {"0": run(20.0, 20.0), "0.25": run(25.0, 25.0), "0.75": run(25.0, 19.0)}})
    assert result.status == "not reproduced"
    assert "γ=0.75 i2t" in result.explanation and "γ=0.25" not in result.explanation.split("(")[0]


def test_scorecard_table_renders_every_claim():
    measurements = {**CASES["beats_infonce"][0], **CASES["gamma_beats_zero"][1],
                    "sources": {"fine_tuning": "fine_tuning.json"}}
    results = build_scorecard(measurements)
    assert [r.claim_id for r in results] == [c.id for c in CLAIMS]
    assert {r.status for r in results} == set(STATUSES)
    table = scorecard_table(results)
    lines = table.splitlines()
    assert len(lines) == 2 + len(CLAIMS)
    for claim, line in zip(CLAIMS, lines[2:], strict=True):
        assert line.startswith(f"| {claim.text} | {claim.paper_reference} |")
        assert line.count("|") == 7  # six cells: no stray pipes from the numbers
    assert "**not reproduced**" in table and "(fine_tuning.json)" in table
    assert len(claims_table().splitlines()) == 2 + len(CLAIMS)


# --------------------------------------------------------------------------------------------- assembling


def _write_outputs(folder, with_gamma_zero_best=False):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "geometry.json").write_text(json.dumps(
        {"dataset": "synthetic", "backbone": "toy", "geometry": {"mean_pairwise": 0.55, "mean_hardest": 0.98}}))
    (folder / "saturation.json").write_text(json.dumps({"dynamics": {"objective": "hn+tok", **diag()}}))
    (folder / "fine_tuning.json").write_text(json.dumps(
        {"parameters": {}, "runs": {"clip": run(28.0, history=[22, 25, 28]),
                                    "hn+tok": run(30.0, history=[26, 28, 30])}}))
    zero = run(30.0) if with_gamma_zero_best else run(18.0)
    (folder / "ablations.json").write_text(json.dumps({
        "scale": {"epochs": 2},
        "gamma": {"0": zero, "0.5": run(25.0), "1": run(24.0)},
        "components": {"clip": run(20.0), "tok": run(19.0), "hn": run(25.0), "hn+tok": run(24.8)},
        "margin_source": {"recomputed": run(24.0), "frozen": run(23.0)},
    }))


def test_measurements_from_outputs(tmp_path):
    _write_outputs(tmp_path / "tutorial")
    _write_outputs(tmp_path / "transfer", with_gamma_zero_best=True)
    calibration = tmp_path / "calibration.json"
    calibration.write_text(json.dumps({"runs": [{"seed": s, "clip": run(28.0), "hn+tok": run(30.0 + s)}
                                                for s in (0, 1, 2)]}))
    m = measurements_from_outputs(tmp_path / "tutorial", calibration=calibration, transfer_dir=tmp_path / "transfer")
    assert set(m) == {"geometry", "diagnostics", "fine_tuning", "gamma", "components", "margin_source", "seeds",
                      "gamma_transfer", "sources"}
    assert set(m["seeds"]) == {"0", "1", "2"} and set(m["seeds"]["1"]) == {"clip", "hn+tok"}
    assert m["sources"]["fine_tuning"].startswith("fine_tuning.json")
    status = {r.claim_id: r.status for r in build_scorecard(m)}
    assert status["geometry"] == "not reproduced"
    assert status["beats_infonce"] == status["gamma_beats_zero"] == status["components"] == "reproduced"
    assert status["seed_spread"] == "not reproduced"  # 30, 31, 32: spread 2 > 1.5
    assert status["milder_gamma_transfers"] == "reproduced"  # transfer sweep: 25 at γ=0.5, 24 at γ=1
    assert status["data_efficiency"] == "not measured"  # no notebook writes fractions


def test_measurements_from_outputs_skips_missing_files_and_rejects_wrong_ones(tmp_path):
    assert measurements_from_outputs(tmp_path) == {"sources": {}}
    assert all(r.status == "not measured" for r in build_scorecard(measurements_from_outputs(tmp_path)))
    (tmp_path / "saturation.json").write_text(json.dumps({"thresholds": {}}))
    with pytest.raises(ValueError, match="saturation.json: expected key dynamics/diagnostics"):
        measurements_from_outputs(tmp_path)


def test_full_ablation_grids_replace_the_tutorial_sections(tmp_path):
    _write_outputs(tmp_path / "tutorial")
    ablations = tmp_path / "ablations.json"
    ablations.write_text(json.dumps({
        "studies": {"fractions": {"points": 2}},
        "gamma": {"0": run(30.0), "0.5": run(25.0)},  # full grid: γ = 0 ahead, unlike the tutorial's sweep
        "fractions": {"0.2": {"hn+tok": run(29.0)}, "1": {"clip": run(28.0), "tok": run(28.5)}},
        "temperature": CASES["temperature_plateau"][0]["temperature"],
    }))
    m = measurements_from_outputs(tmp_path / "tutorial", ablations=ablations)
    assert m["sources"]["gamma"] == "ablations.json (full grid)"
    assert m["sources"]["components"] == "ablations.json"  # absent from the grids: the tutorial's stays
    status = {r.claim_id: r.status for r in build_scorecard(m)}
    assert status["gamma_beats_zero"] == "not reproduced"
    assert status["data_efficiency"] == status["temperature_plateau"] == "reproduced"
    (tmp_path / "other.json").write_text(json.dumps({"gamma": {}}))
    with pytest.raises(ValueError, match="python -m hnclip_core.replication.ablations"):
        measurements_from_outputs(None, ablations=tmp_path / "other.json")



def test_framework_throughput_file_feeds_the_efficiency_claim(tmp_path):
    path = tmp_path / "framework_throughput.json"
    path.write_text(json.dumps({"machine": "test", "batch": 4, "frameworks": CASES["efficiency"][0]["throughput"]}))
    m = measurements_from_outputs(None, throughput=path)
    assert m["sources"]["throughput"] == "framework_throughput.json"
    assert CLAIM_BY_ID["efficiency"].evaluate(m).status == "reproduced"
    path.write_text(json.dumps({"longclip": {}}))
    with pytest.raises(ValueError, match="expected key frameworks"):
        measurements_from_outputs(None, throughput=path)

def test_committed_calibration_gives_seeds():
    m = measurements_from_outputs(None, calibration=True)
    assert len(m["seeds"]) >= 2
    result = CLAIM_BY_ID["seed_spread"].evaluate(m)
    assert result.status in ("reproduced", "not reproduced")
    assert result.source == "calibration.json"
