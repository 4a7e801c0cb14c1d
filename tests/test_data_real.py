"""Loaders of the real benchmarks, on tiny fixtures written in each dataset's on-disk format."""

from __future__ import annotations

import json
import logging
from pathlib import Path

import open_clip
import pytest
import torch
from PIL import Image

from hnclip_core.data import (
    DATASETS,
    DatasetLayoutError,
    ImageCaptionPair,
    PairDataset,
    dci,
    docci,
    load_pairs,
    urban1k,
    vg,
)


def write_image(path: Path, shade: int = 128) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    Image.new("RGB", (8, 6), (shade, 255 - shade, 40)).save(path)
    return path


def write_json(path: Path, data) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data), encoding="utf-8")


def names(pairs: list[ImageCaptionPair]) -> list[str]:
    return [p.image_path.name for p in pairs]


def captions(pairs: list[ImageCaptionPair]) -> list[str]:
    return [p.caption for p in pairs]


# ---------------------------------------------------------------------------------------------- DOCCI

DOCCI_ROWS = [
    ("train_00000", "train", "a red train"),
    ("test_00000", "test", "first test image"),
    ("qual_dev_00000", "qual_dev", "a qual_dev image"),
    ("qual_test_00000", "qual_test", "a qual_test image"),
    ("train_00001", "train", "a second train image"),
    ("test_00001", "test", "second test image"),
    ("train_00099", "test", "split says test but the id says train"),
]


@pytest.fixture
def docci_root(tmp_path: Path) -> Path:
    root = tmp_path / "docci"
    lines = []
    for shade, (example_id, split, description) in enumerate(DOCCI_ROWS):
        image_file = f"{example_id}.jpg"
        write_image(root / "images" / image_file, shade * 30)
        row = {"example_id": example_id, "split": split, "image_file": image_file, "description": description}
        lines.append(json.dumps(row))
    (root / "docci_descriptions.jsonlines").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return root


def test_docci_test_split_is_test_plus_qual_test_in_file_order(docci_root: Path):
    pairs = docci.load_docci_pairs(docci_root, "test")
    assert names(pairs) == ["test_00000.jpg", "qual_test_00000.jpg", "test_00001.jpg"]
    assert captions(pairs) == ["first test image", "a qual_test image", "second test image"]
    assert pairs[0].image_path == docci_root / "images" / "test_00000.jpg"


def test_docci_validation_split_is_qual_dev(docci_root: Path):
    assert captions(docci.load_docci_pairs(docci_root, "val")) == ["a qual_dev image"]


def test_docci_train_split_and_prefix_filter(docci_root: Path, caplog):
    assert captions(docci.load_docci_pairs(docci_root, "train")) == ["a red train", "a second train image"]
    with caplog.at_level(logging.WARNING, logger="hnclip_core.data.docci"):
        docci.load_docci_pairs(docci_root, "test")
    assert "skipped 1 rows" in caplog.text  # the row "train_00099" filed under split "test"


def test_docci_bad_split_is_value_error(docci_root: Path):
    with pytest.raises(ValueError, match="train.*test"):
        docci.load_docci_pairs(docci_root, "qual_test")


def test_docci_errors_show_expected_layout(tmp_path: Path, docci_root: Path):
    with pytest.raises(DatasetLayoutError, match="data root does not exist") as missing_root:
        docci.load_docci_pairs(tmp_path / "nowhere", "test")
    assert docci.EXPECTED_LAYOUT.rstrip() in str(missing_root.value)

    # pointing at the parent folder: the annotation file is not where it is expected
    with pytest.raises(DatasetLayoutError, match="docci_descriptions.jsonlines") as parent_root:
        docci.load_docci_pairs(tmp_path, "test")
    assert "images/<image_file>" in str(parent_root.value)

    (docci_root / "images" / "qual_test_00000.jpg").unlink()
    with pytest.raises(DatasetLayoutError, match="1 of 3 image files missing.*qual_test_00000.jpg"):
        docci.load_docci_pairs(docci_root, "test")

    with (docci_root / "docci_descriptions.jsonlines").open("a", encoding="utf-8") as file:
        file.write(json.dumps({"example_id": "test_00002", "split": "test", "image_file": "x.jpg"}) + "\n")
    with pytest.raises(DatasetLayoutError, match=r"line 8: missing fields \['description'\]") as bad_row:
        docci.load_docci_pairs(docci_root, "test")
    assert "expected layout" in str(bad_row.value)


# ------------------------------------------------------------------------------------------ DCI, Long-DCI

PHOTOS = Path("densely_captioned_images/photos")


@pytest.fixture
def dci_root(tmp_path: Path) -> Path:
    root = tmp_path / "dci"
    for shade, stem in enumerate(["sa_1", "sa_2", "sa_3", "sa_10", "sa_20", "sa_21", "sa_22"]):
        write_image(root / PHOTOS / f"{stem}.jpg", shade * 30)
    placeholder = "../DCI/chage/path/densely_captioned_images/photos"
    train = [  # GOAL's training records: the full image plus its best segment
        {
            "original_filename": f"{placeholder}/sa_3.jpg",
            "original_caption": "train caption three",
            "segment": [{"filename": "crops/sa_3_0.jpg", "caption": "a crop", "similarity_score": 0.3}],
        },
        {
            "original_filename": f"{placeholder}/sa_1.jpg",
            "original_caption": "train caption one",
            "segment": [],
        },
    ]
    test = [  # GOAL's test records
        {"filename": f"{placeholder}/sa_20.jpg", "caption": "test caption twenty"},
        {"filename": "C:\\data\\photos\\sa_10.jpg", "caption": "test caption ten"},
        {"filename": f"{placeholder}/sa_20.jpg", "caption": "a repeated image"},
        {"filename": f"{placeholder}/sa_21.jpg", "caption": "   "},
    ]
    write_json(root / "DCI_train.json", train)
    write_json(root / "DCI_test.json", test)

    annotations = root / "densely_captioned_images" / "annotations"
    for stem, short, extra in [
        ("sa_3", "short three", "long three"),
        ("sa_10", "short ten", "  long ten\nsecond line  "),
        ("sa_1", "short one", "long one"),
        ("sa_2", "short two", ""),
        ("sa_22", "short twenty-two", "long twenty-two"),
    ]:
        annotation = {"image": f"{stem}.jpg", "short_caption": short, "extra_caption": extra, "mask_data": {}}
        write_json(annotations / f"{stem}.json", annotation)
    return root


def test_dci_accepts_goal_train_and_test_records(dci_root: Path, caplog):
    train = dci.load_dci_pairs(dci_root, "train")
    assert [(p.image_path, p.caption) for p in train] == [
        (dci_root / PHOTOS / "sa_3.jpg", "train caption three"),
        (dci_root / PHOTOS / "sa_1.jpg", "train caption one"),
    ]
    with caplog.at_level(logging.WARNING, logger="hnclip_core.data.dci"):
        test = dci.load_dci_pairs(dci_root, "test")
    assert names(test) == ["sa_20.jpg", "sa_10.jpg"]
    assert captions(test) == ["test caption twenty", "test caption ten"]  # first record of sa_20 kept
    assert "skipped 1 repeated images and 1 empty captions" in caplog.text


def test_dci_errors(tmp_path: Path, dci_root: Path):
    with pytest.raises(DatasetLayoutError, match="data root does not exist") as missing_root:
        dci.load_dci_pairs(tmp_path / "nowhere", "test")
    assert "densely_captioned_images/" in str(missing_root.value)

    (dci_root / "DCI_train.json").unlink()
    with pytest.raises(DatasetLayoutError, match="annotation file missing: .*DCI_train.json"):
        dci.load_dci_pairs(dci_root, "train")

    write_json(dci_root / "DCI_test.json", [{"image": "sa_1.jpg", "text": "wrong keys"}])
    with pytest.raises(DatasetLayoutError, match="DCI_test.json, record 0") as bad_record:
        dci.load_dci_pairs(dci_root, "test")
    assert dci.EXPECTED_LAYOUT.rstrip() in str(bad_record.value)

    write_json(dci_root / "DCI_test.json", [{"filename": "x/sa_404.jpg", "caption": "no such photo"}])
    with pytest.raises(DatasetLayoutError, match="1 of 1 image files missing.*sa_404.jpg"):
        dci.load_dci_pairs(dci_root, "test")

    with pytest.raises(ValueError, match="train.*test"):
        dci.load_dci_pairs(dci_root, "valid")


def test_long_dci_test_is_every_annotation_with_extra_caption(dci_root: Path, caplog):
    with caplog.at_level(logging.WARNING, logger="hnclip_core.data.dci"):
        pairs = dci.load_long_dci_pairs(dci_root, "test")
    # sorted file names: sa_1, sa_10, sa_2 (empty, skipped), sa_22, sa_3; caption = extra_caption
    assert names(pairs) == ["sa_1.jpg", "sa_10.jpg", "sa_22.jpg", "sa_3.jpg"]
    assert captions(pairs) == ["long one", "long ten\nsecond line", "long twenty-two", "long three"]
    assert "skipped 1 of 5 annotations" in caplog.text


def test_long_dci_train_is_the_dci_train_list(dci_root: Path):
    assert dci.load_long_dci_pairs(dci_root, "train") == dci.load_dci_pairs(dci_root, "train")


def test_long_dci_errors(tmp_path: Path, dci_root: Path):
    with pytest.raises(DatasetLayoutError, match="annotation folder missing") as missing_folder:
        dci.load_long_dci_pairs(tmp_path, "test")
    assert "annotations/*.json" in str(missing_folder.value)

    write_json(dci_root / "densely_captioned_images" / "annotations" / "sa_0.json", {"image": "sa_0.jpg"})
    with pytest.raises(DatasetLayoutError, match="sa_0.json: expected a JSON object with 'image' and 'extra"):
        dci.load_long_dci_pairs(dci_root, "test")


# -------------------------------------------------------------------------------------------- Urban-1K


@pytest.fixture
def urban_root(tmp_path: Path) -> Path:
    root = tmp_path / "Urban1k"
    for image_id in (10, 2, 1):
        write_image(root / "image" / f"{image_id}.jpg", image_id * 20)
        (root / "caption").mkdir(parents=True, exist_ok=True)
        (root / "caption" / f"{image_id}.txt").write_text(
            f"  caption of image {image_id}.  \nnot part of the caption\n", encoding="utf-8"
        )
    write_image(root / "image" / "999.jpg")  # an image without a caption is ignored
    return root


def test_urban1k_numeric_order_and_first_line(urban_root: Path):
    pairs = urban1k.load_urban1k_pairs(urban_root, "test")
    assert names(pairs) == ["1.jpg", "2.jpg", "10.jpg"]
    assert captions(pairs) == ["caption of image 1.", "caption of image 2.", "caption of image 10."]


def test_urban1k_lexicographic_order_for_non_numeric_ids(urban_root: Path):
    write_image(urban_root / "image" / "b.jpg")
    (urban_root / "caption" / "b.txt").write_text("caption b", encoding="utf-8")
    assert names(urban1k.load_urban1k_pairs(urban_root, "test")) == ["1.jpg", "10.jpg", "2.jpg", "b.jpg"]


def test_urban1k_errors(tmp_path: Path, urban_root: Path):
    with pytest.raises(ValueError, match="test"):
        urban1k.load_urban1k_pairs(urban_root, "train")
    with pytest.raises(DatasetLayoutError, match="folder missing: .*image") as parent_root:
        urban1k.load_urban1k_pairs(tmp_path, "test")
    assert "caption/<id>.txt" in str(parent_root.value)

    (urban_root / "image" / "2.jpg").unlink()
    with pytest.raises(DatasetLayoutError, match=r"caption .*2\.txt has no image: .*2\.jpg missing"):
        urban1k.load_urban1k_pairs(urban_root, "test")


# ------------------------------------------------------------------------------------- VG paragraphs


@pytest.fixture
def vg_root(tmp_path: Path) -> Path:
    root = tmp_path / "vg"
    paragraphs = [
        {"url": "https://x/VG_100K_2/30.jpg", "image_id": 30, "paragraph": " A man rides.\n The  sky. "},
        {"url": "https://x/VG_100K/11.jpg", "image_id": 11, "paragraph": "A val image."},
        {"url": "https://x/VG_100K/20.jpg", "image_id": 20, "paragraph": "A dog sits."},
        {"url": "https://x/VG_100K_2/30.jpg", "image_id": 30, "paragraph": "A repeated paragraph."},
        {"url": "https://x/VG_100K/12.jpg", "image_id": 12, "paragraph": "A test image."},
    ]
    write_json(root / "paragraphs_v1.json", paragraphs)
    write_json(root / "train_split.json", [20, 30])  # split order differs from paragraph order
    write_json(root / "val_split.json", [11])
    write_json(root / "test_split.json", [12, 13])  # 13 has no paragraph
    for image_id in (11, 12, 20, 30):
        write_image(root / "images" / f"{image_id}.jpg", image_id)
    return root


def test_vg_keeps_paragraph_order_first_duplicate_and_collapses_whitespace(vg_root: Path, caplog):
    with caplog.at_level(logging.WARNING, logger="hnclip_core.data.vg"):
        train = vg.load_vg_pairs(vg_root, "train")
    assert [(p.image_path, p.caption) for p in train] == [
        (vg_root / "images" / "30.jpg", "A man rides. The sky."),
        (vg_root / "images" / "20.jpg", "A dog sits."),
    ]
    assert "3 paragraph records; skipped 1 repeated image ids" in caplog.text


def test_vg_val_and_test_splits(vg_root: Path, caplog):
    assert captions(vg.load_vg_pairs(vg_root, "val")) == ["A val image."]
    with caplog.at_level(logging.WARNING, logger="hnclip_core.data.vg"):
        assert names(vg.load_vg_pairs(vg_root, "test")) == ["12.jpg"]
    assert "1 split ids have no usable paragraph" in caplog.text


def test_vg_errors(tmp_path: Path, vg_root: Path):
    with pytest.raises(DatasetLayoutError, match="data root does not exist"):
        vg.load_vg_pairs(tmp_path / "nowhere", "train")
    with pytest.raises(ValueError, match="train.*val.*test"):
        vg.load_vg_pairs(vg_root, "dev")

    (vg_root / "images" / "20.jpg").unlink()
    with pytest.raises(DatasetLayoutError, match="1 of 2 image files missing.*20.jpg"):
        vg.load_vg_pairs(vg_root, "train")

    write_json(vg_root / "train_split.json", {"ids": [20, 30]})
    with pytest.raises(DatasetLayoutError, match="list of integer image ids") as bad_split:
        vg.load_vg_pairs(vg_root, "train")
    assert "images/<image_id>.jpg" in str(bad_split.value)

    (vg_root / "paragraphs_v1.json").unlink()
    with pytest.raises(DatasetLayoutError, match="annotation file missing: .*paragraphs_v1.json"):
        vg.load_vg_pairs(vg_root, "val")


# ------------------------------------------------------------------------------------------- load_pairs


def test_load_pairs_dispatches_by_name_and_accepts_str_roots(docci_root, dci_root, urban_root, vg_root):
    assert DATASETS[:5] == ["docci", "dci", "long-dci", "urban1k", "vg"]
    assert load_pairs("docci", str(docci_root), "test") == docci.load_docci_pairs(docci_root, "test")
    assert names(load_pairs("dci", str(dci_root), "test")) == ["sa_20.jpg", "sa_10.jpg"]
    assert len(load_pairs("long-dci", dci_root, "test")) == 4
    assert len(load_pairs("urban1k", urban_root, "test")) == 3
    assert len(load_pairs("vg", vg_root, "val")) == 1


def test_load_pairs_rejects_unknown_names_splits_and_missing_root(docci_root: Path):
    from hnclip_core.toy import register_datasets

    register_datasets()  # as every command and Experiment does (never on import): the names include the toy's
    with pytest.raises(ValueError, match="docci, dci, long-dci, urban1k, vg, synthetic, synthetic-alt"):
        load_pairs("coco", docci_root, "test")
    with pytest.raises(ValueError, match="valid splits: test$"):
        load_pairs("urban1k", docci_root, "train")
    with pytest.raises(ValueError, match="valid splits: train, val, test"):
        load_pairs("vg", docci_root, "validation")
    with pytest.raises(ValueError, match="needs a data root"):
        load_pairs("docci", None, "test")


def test_the_embedded_benchmark_joins_the_names_when_registered(tmp_path: Path):
    from hnclip_core.toy import register_datasets
    from hnclip_core.toy.synthetic import SyntheticConfig, write_synthetic_benchmark

    register_datasets()
    register_datasets()  # again: no change
    assert {"synthetic", "synthetic-alt"} <= set(DATASETS) and len(DATASETS) == len(set(DATASETS))
    root = write_synthetic_benchmark(tmp_path / "bench", SyntheticConfig(seed=1, num_train_families=2,
                                                                         num_test_families=1, num_val_families=1,
                                                                         image_size=32))
    assert load_pairs("synthetic", root, "test") == docci.load_docci_pairs(root, "test")
    with pytest.raises(ValueError, match=r"joins them with hnclip_core.toy.register_datasets\(\)"):
        load_pairs("synthetic-hd", root, "test")


# ------------------------------------------------------------------------------------------ PairDataset


def test_pair_dataset_items_truncation_and_image_errors(tmp_path: Path, caplog):
    tokenizer = open_clip.SimpleTokenizer(context_length=248)
    preprocess = open_clip.image_transform(32, is_train=False)
    long_caption = " ".join(["tree"] * 300)  # 300 BPE tokens > 246 + start + end
    pairs = [
        ImageCaptionPair(write_image(tmp_path / "a.jpg", 10), "a short caption"),
        ImageCaptionPair(write_image(tmp_path / "b.png", 200), long_caption),
        ImageCaptionPair(tmp_path / "missing.jpg", "no file"),
        ImageCaptionPair(tmp_path / "corrupt.jpg", "not an image"),
    ]
    (tmp_path / "corrupt.jpg").write_bytes(b"this is not a jpeg")

    with caplog.at_level(logging.WARNING, logger="hnclip_core.data.pairs"):
        dataset = PairDataset(pairs, preprocess, tokenizer)
    assert len(dataset) == 4
    assert dataset.num_truncated == 1
    assert "1 of 4 captions exceed 248 tokens" in caplog.text

    image, tokens = dataset[0]
    assert image.shape == (3, 32, 32) and image.dtype == torch.float32
    assert tokens.shape == (248,)
    assert tokens[0].item() == 49406 and (tokens != 0).sum().item() == 5  # <start> a short caption <end>

    _, long_tokens = dataset[1]
    assert (long_tokens != 0).all()  # filled to the context length ...
    assert long_tokens[-1].item() == 49407  # ... and still ends with the end-of-text token

    with pytest.raises(DatasetLayoutError, match="missing.jpg"):
        dataset[2]
    with pytest.raises(DatasetLayoutError, match="corrupt.jpg"):
        dataset[3]

    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="hnclip_core.data.pairs"):
        skipping = PairDataset(pairs, preprocess, tokenizer, skip_unreadable=True)
    assert len(skipping) == 2 and skipping.num_skipped == 2
    assert [p.image_path.name for p in skipping.pairs] == ["a.jpg", "b.png"]
    assert "skipped 2 of 4 pairs whose image cannot be read (first: " in caplog.text and "missing.jpg" in caplog.text
    assert torch.equal(skipping[1][1], dataset[1][1])  # captions stay with their images
