"""The paper's numbers (hnclip_core/replication/paper): shipped files, their JSON Schema, lookups and views."""

import copy
import json
from importlib import resources

import pytest

from hnclip_core.replication import paper
from hnclip_core.replication.objectives import OBJECTIVES

EXPECTED = {
    "table1", "table2", "table3a", "table3b", "table3c", "tableA1", "tableA2", "tableA3", "tableA4", "tableA5",
    "tableA6", "tableA7", "tableA8", "tableA9", "tableA10", "tableA11", "text",
}


def test_every_file_ships_and_validates():
    shipped = {f.name for f in resources.files(paper).iterdir()}
    assert {"schema.json", "README.md"} <= shipped  # package data: a non-editable install has them
    tables = paper.tables()
    assert set(tables) == EXPECTED
    for name, table in tables.items():
        assert "2608.18521" in table.source and "page" in table.source, name
        assert table.caption and table.rows
        assert all(set(row.values) <= set(table.columns) for row in table.rows)


def test_the_schema_knows_the_project_objectives():
    schema = json.loads(resources.files(paper).joinpath("schema.json").read_text())
    assert schema["$defs"]["row"]["properties"]["objective"]["enum"] == list(OBJECTIVES)


@pytest.mark.parametrize("name, stem", [("1", "table1"), ("Table 1", "table1"), ("TABLE 1", "table1"),
                                        ("A5", "tableA5"), ("a5", "tableA5"), ("Table A10", "tableA10"),
                                        ("3a", "table3a"), ("Table 3c", "table3c"), ("text", "text")])
def test_table_names(name, stem):
    assert paper.table(name).name == stem


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
    # text.json: the sentences quoted in each row's note (§2.4, App. A.4, App. C, §3.2, App. B.2)
    ("text", "Long-CLIP-L fine-tuning", "DOCCI", "grad_zero_clip", "Fig. 4", 0.47),
    ("text", "Long-CLIP-L fine-tuning", "DOCCI", "measurements", "Fig. 4", 148),
    ("text", "Long-CLIP-L fine-tuning", "DOCCI and DCI", "cosine_median", "Fig. A8", 0.58),
    ("text", "pre-trained Long-CLIP-L text encoder", "4 benchmarks", "in_batch_at_least_0_8_low", "Fig. A6C", 0.86),
    ("text", "HN-CLIP", "DOCCI", "mean_r1", "Fig. 5, epoch 1", 84.3),
    ("text", "Long-CLIP-L", "4 benchmarks", "logit_scale", "App. B.2", 100),
]


@pytest.mark.parametrize("name, method, dataset, metric, setting, expected", SPOT_CHECKS)
def test_transcribed_numbers(name, method, dataset, metric, setting, expected):
    assert paper.value(name, method=method, dataset=dataset, metric=metric, setting=setting) == expected


def test_row_flags_and_objectives():
    table = paper.table("1")
    assert {r.method for r in table.rows if r.zero_shot} == {"Long-CLIP"}
    assert all(r.derived for r in table.rows if r.method.startswith("Δ"))
    assert paper.table("A5").find("hn+tok", "Long-DCI").replica
    assert paper.value("A5", method="clip", dataset="DOCCI", metric="t2i_r1") == 86.45  # looked up as ours would be
    a3 = paper.table("A3")  # Table A3's plain fine-tuning and HN-CLIP rows, as benchmarks/gpu_throughput.py reads them
    assert a3.find("clip", "DCI").method == "Long-CLIP (plain FT)"
    assert a3.find("hn+tok", "DCI").method == "HN-CLIP (ours)"
    assert paper.mean_r1("1", "HN-CLIP", "DOCCI") == pytest.approx((88.25 + 86.24) / 2)


def test_the_chapters_views_are_the_files_numbers():
    for method, name, label in (("zero-shot", "1", "Long-CLIP"), ("clip", "A5", "InfoNCE"), ("hn+tok", "1", "HN-CLIP")):
        for direction in ("t2i", "i2t"):
            for k, number in zip((1, 5, 10), paper.DOCCI_RECALL[method][direction], strict=True):
                assert paper.value(name, method=label, dataset="DOCCI", metric=f"{direction}_r{k}") == number
    assert paper.paper_mean_r1("clip") == pytest.approx((86.45 + 84.10) / 2)
    assert paper.CAPTION_GEOMETRY["Urban-1K"] == {"mean_pairwise": 0.88, "mean_hardest": 0.94}
    assert set(paper.CAPTION_GEOMETRY) == {"DOCCI", "DCI", "Long-DCI", "Urban-1K"}
    assert paper.IN_BATCH_AT_LEAST_0_8 == (0.86, 0.99)
    assert paper.SATURATION["grad_ratio_range"] == (100, 1_000_000) and paper.SATURATION["active_hn_min"] == 0.26
    assert paper.THROUGHPUT == {"longclip": {"clip": 55.5, "hn": 53}, "goal": {"clip": 22}, "structxlip": {"clip": 10}}
    deltas = paper.plug_and_play_deltas("DOCCI")
    assert deltas["finelip"] == pytest.approx((7.96 + 13.98) / 2)  # Table 2's Δ row (Table A4 differs: †)
    assert set(deltas) == set(paper.FRAMEWORK_LABELS)


def test_lookup_errors_are_clear():
    with pytest.raises(KeyError, match="no such row"):
        paper.value("1", method="CLIP-Nonexistent", dataset="DOCCI", metric="t2i_r1")
    with pytest.raises(KeyError, match="pass setting="):
        paper.value("3a", method="HN-CLIP", dataset="DOCCI", metric="t2i_r1")
    with pytest.raises(KeyError, match="has no 't2i_r25'"):
        paper.value("1", method="HN-CLIP", dataset="DOCCI", metric="t2i_r25")
    with pytest.raises(ValueError, match="prints no number"):  # "≈ 0" in Table A4
        paper.value("A4", method="Δ (Long-CLIP + L_HN − Long-CLIP)", dataset="DOCCI", metric="t2i_r10")
    with pytest.raises(paper.PaperTableError, match="no such paper file"):
        paper.table("A99")


GOOD = {
    "source": "arXiv 2608.18521v1, Table 9 (page not given in the text version)",
    "caption": "a test table",
    "columns": ["t2i_r1", "i2t_r1"],
    "rows": [{"method": "HN-CLIP", "dataset": "DOCCI", "values": {"t2i_r1": 88.25, "i2t_r1": 86.24}}],
}


def _set(path, value):
    def breaker(data):
        *parents, last = path
        node = data
        for key in parents:
            node = node[key]
        node[last] = value
    return breaker


@pytest.mark.parametrize("breaker, message", [
    (lambda d: d.pop("caption"), r"'caption' is a required property"),
    (_set(("rows", 0, "values", "t2i_r1"), "88.25"), r"\['t2i_r1'\]: '88.25' is not of type 'number', 'null'"),
    (_set(("rows", 0, "values", "t2i_r5"), 98.45), r"values \['t2i_r5'\] not in 'columns'"),
    (_set(("source",), "arXiv 2608.18521v1, Table 9"), r"\['source'\]: .* does not match 'page'"),
    (lambda d: d["rows"].append(dict(d["rows"][0])), r"\['rows'\]\[1\] repeats"),
    (_set(("rows", 0, "methd"), "typo"), r"'methd' was unexpected"),
    (_set(("rows", 0, "values", "i2t_r1"), 862.4), r"862.4 is greater than the maximum of 100"),
    (_set(("rows", 0, "objective"), "hn-clip"), r"'hn-clip' is not one of"),
    (_set(("rows", 0, "approximate"), ["t2i_r5"]), r"not in 'columns'"),
    (_set(("columns",), ["t2i_r1", "t2i_r1"]), r"non-unique elements"),
    (_set(("rows",), []), r"\[\] should be non-empty"),
])
def test_the_schema_rejects_a_malformed_table(tmp_path, breaker, message):
    path = tmp_path / "table9.json"
    path.write_text(json.dumps(GOOD))
    assert paper.table(path).rows[0].values["t2i_r1"] == 88.25
    data = copy.deepcopy(GOOD)
    breaker(data)
    path.write_text(json.dumps(data))
    with pytest.raises(paper.PaperTableError, match=message) as error:
        paper.table(path)
    assert str(path) in str(error.value)


def test_a_derived_row_may_be_negative_and_a_measured_one_not(tmp_path):
    data = copy.deepcopy(GOOD)
    data["rows"].append({"method": "Δ", "dataset": "DOCCI", "values": {"t2i_r1": -0.9}, "derived": True})
    path = tmp_path / "table9.json"
    path.write_text(json.dumps(data))
    assert paper.value(paper.table(path), method="Δ", dataset="DOCCI", metric="t2i_r1") == -0.9
    data["rows"][1]["derived"] = False
    path.write_text(json.dumps(data))
    with pytest.raises(paper.PaperTableError, match="less than the minimum of 0"):
        paper.table(path)


def test_invalid_json_and_non_finite_numbers_name_the_file(tmp_path):
    path = tmp_path / "tableX.json"
    for text, message in (('{"source": ', "not valid JSON"), (json.dumps(GOOD).replace("88.25", "NaN"), "NaN")):
        path.write_text(text)
        with pytest.raises(paper.PaperTableError, match=message) as error:
            paper.table(path)
        assert str(path) in str(error.value)
