"""DCI (Urbanek et al. 2024, "Densely Captioned Images") and its "Long-DCI" evaluation variant.

The paper (arXiv 2608.18521, §3.1 and Table A1) fine-tunes on DCI's ~5.4k training images and tests
on ~2k images ("DCI"); "Long-DCI" reuses the same training set and tests on the full-length DCI
captions of a larger image set (7,444 test pairs in the paper's table).

Images are SA-1B photos that the DCI release does not ship: following facebookresearch/DCI's README
they are extracted into ``densely_captioned_images/photos/``; ``dci.tar.gz`` provides
``densely_captioned_images/annotations/*.json`` (one JSON per image with ``image`` — a path relative
to ``photos/`` — ``short_caption``, ``extra_caption``, ``mask_data``, ...).

``dci`` — GOAL's protocol (PerceptualAI-Lab/GOAL, ``datasets/``), which the paper follows:

* ``DCI_test.json`` lists 1,999 ``{"filename", "caption"}`` records; GOAL's training list
  (``DCI_segment_only_sim_max_del_org.json``) has 5,446 ``{"original_filename", "original_caption",
  "segment": [...]}`` records, disjoint from the test images (counts from the GOAL repository,
  ``shared/research/data_baselines.md`` §2). This is the "5.4k / 2k" split; it is NOT DCI's official
  ``splits.json`` (whose CLIP-ready test set has 112 images).
* Save GOAL's lists (or any list in either record style) as ``<root>/DCI_train.json`` and
  ``<root>/DCI_test.json``. For training records the full-image ``original_filename`` /
  ``original_caption`` are used; segments are ignored.
* GOAL's paths are placeholders (``../DCI/.../photos/sa_1543972.jpg``), so an image is resolved by the
  BASENAME of its filename inside ``photos/``.
* List order is kept; a repeated image keeps its first record and records with an empty caption are
  skipped (both counted in a log message; GOAL's test list has neither).

``long-dci`` — TULIP's ``dci_long`` constructor (ivonajdenkoska/tulip,
``open_clip/data_prep/dci_long_part.py``), the usual source of "Long-DCI" tables:

* ``"test"``: every ``annotations/*.json`` in sorted file-name order, caption = ``extra_caption``
  (stripped here), skipping files whose ``extra_caption`` is empty (TULIP skips only ``""``; this loader
  also skips whitespace-only captions); image = ``photos/<image>``.
* ``"train"``: the DCI training list above (same training set as ``dci``, paper Table A1).

Count uncertainty: on the full release (7,805 annotation files) TULIP's constructor is reported to give
7,602 pairs (203 empty, third-party audit, unverified), not the paper's 7,444. 7,444 is close to the
7,445 images of GOAL's train + test lists, so the paper's Long-DCI may instead be "GOAL's DCI images with
full captions" — in which case it would contain training images. Neither reading is confirmed; this
module implements TULIP's construction and reports its count.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path, PurePosixPath

from .pairs import ImageCaptionPair, existing_root, layout_error, require_images

log = logging.getLogger(__name__)

DCI_DIR = "densely_captioned_images"
PHOTOS_DIR = f"{DCI_DIR}/photos"
ANNOTATIONS_DIR = f"{DCI_DIR}/annotations"
LIST_FILES = {"train": "DCI_train.json", "test": "DCI_test.json"}
DCI_SPLITS = tuple(LIST_FILES)
LONG_DCI_SPLITS = ("train", "test")

EXPECTED_LAYOUT = """\
    <root>/
      DCI_train.json        GOAL-style JSON list, one record per image, either
      DCI_test.json           {"filename": ".../sa_1543972.jpg", "caption": "..."}  or
                              {"original_filename": ".../sa_1.jpg", "original_caption": "...",
                               "segment": [...]}
      densely_captioned_images/
        photos/sa_*.jpg     SA-1B images (sa_000138.tar); matched by the basename of "filename"
"""

LONG_DCI_EXPECTED_LAYOUT = """\
    <root>/
      densely_captioned_images/            (from dci.tar.gz)
        annotations/*.json  per-image JSON: {"image": "sa_1.jpg", "short_caption": "...",
                                             "extra_caption": "...", "mask_data": {...}, ...}
        photos/<image>      SA-1B images (sa_000138.tar)
      DCI_train.json        GOAL-style training list (split "train" only), see the "dci" layout
"""


def load_dci_pairs(root: str | Path, split: str) -> list[ImageCaptionPair]:
    """DCI pairs of ``split`` (``"train"`` or ``"test"``) from GOAL's JSON lists, in list order."""
    if split not in LIST_FILES:
        raise ValueError(f"DCI split must be one of {DCI_SPLITS}, got {split!r}")
    root = Path(root)
    records = _read_goal_list(root, root / LIST_FILES[split])
    photos = root / PHOTOS_DIR

    pairs: list[ImageCaptionPair] = []
    seen: set[str] = set()
    duplicates = empty = 0
    for index, record in enumerate(records):
        filename, caption = _filename_and_caption(root, record, index, LIST_FILES[split])
        image_name = PurePosixPath(filename.replace("\\", "/")).name
        if image_name in seen:
            duplicates += 1
            continue
        if not caption.strip():
            empty += 1
            continue
        seen.add(image_name)
        pairs.append(ImageCaptionPair(photos / image_name, caption))

    if duplicates or empty:
        log.warning(
            "DCI %s: skipped %d repeated images and %d empty captions", split, duplicates, empty
        )
    require_images("DCI", root, pairs, EXPECTED_LAYOUT)
    log.info("DCI %s: %d pairs", split, len(pairs))
    return pairs


def load_long_dci_pairs(root: str | Path, split: str) -> list[ImageCaptionPair]:
    """Long-DCI pairs: ``"test"`` from the native annotations (TULIP), ``"train"`` = DCI's train list."""
    if split not in LONG_DCI_SPLITS:
        raise ValueError(f"Long-DCI split must be one of {LONG_DCI_SPLITS}, got {split!r}")
    if split == "train":
        return load_dci_pairs(root, "train")

    root = existing_root("Long-DCI", root, LONG_DCI_EXPECTED_LAYOUT)
    annotations = root / ANNOTATIONS_DIR
    if not annotations.is_dir():
        raise layout_error(
            "Long-DCI", root, f"annotation folder missing: {annotations}", LONG_DCI_EXPECTED_LAYOUT
        )
    files = sorted(annotations.glob("*.json"))
    if not files:
        raise layout_error(
            "Long-DCI", root, f"no *.json annotation files in {annotations}", LONG_DCI_EXPECTED_LAYOUT
        )

    photos = root / PHOTOS_DIR
    pairs: list[ImageCaptionPair] = []
    empty = 0
    for path in files:
        annotation = _read_json(path, "Long-DCI", root, LONG_DCI_EXPECTED_LAYOUT)
        if not isinstance(annotation, dict) or "image" not in annotation or "extra_caption" not in annotation:
            raise layout_error(
                "Long-DCI",
                root,
                f"{path}: expected a JSON object with 'image' and 'extra_caption'",
                LONG_DCI_EXPECTED_LAYOUT,
            )
        caption = annotation["extra_caption"].strip()
        if not caption:
            empty += 1
            continue
        pairs.append(ImageCaptionPair(photos / annotation["image"], caption))

    if empty:
        log.warning(
            "Long-DCI test: skipped %d of %d annotations with an empty extra_caption", empty, len(files)
        )
    require_images("Long-DCI", root, pairs, LONG_DCI_EXPECTED_LAYOUT)
    log.info("Long-DCI test: %d pairs from %d annotation files", len(pairs), len(files))
    return pairs


def _read_goal_list(root: Path, path: Path) -> list:
    existing_root("DCI", root, EXPECTED_LAYOUT)
    if not path.is_file():
        raise layout_error("DCI", root, f"annotation file missing: {path}", EXPECTED_LAYOUT)
    records = _read_json(path, "DCI", root, EXPECTED_LAYOUT)
    if not isinstance(records, list):
        raise layout_error("DCI", root, f"{path}: expected a JSON list of records", EXPECTED_LAYOUT)
    return records


def _filename_and_caption(root: Path, record, index: int, list_name: str) -> tuple[str, str]:
    """Accept GOAL's test style ``{filename, caption}`` and train style ``{original_filename, ...}``."""
    if isinstance(record, dict):
        if "original_filename" in record and "original_caption" in record:
            return record["original_filename"], record["original_caption"]
        if "filename" in record and "caption" in record:
            return record["filename"], record["caption"]
    raise layout_error(
        "DCI",
        root,
        f"{list_name}, record {index}: expected keys filename/caption or original_filename/original_caption",
        EXPECTED_LAYOUT,
    )


def _read_json(path: Path, name: str, root: Path, expected_layout: str):
    try:
        with path.open(encoding="utf-8") as file:
            return json.load(file)
    except json.JSONDecodeError as err:
        raise layout_error(name, root, f"{path}: not valid JSON ({err})", expected_layout) from err
