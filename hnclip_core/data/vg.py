"""Visual Genome paragraphs (Krause et al. 2017, "A Hierarchical Approach for Generating Descriptive
Image Paragraphs"): one multi-sentence paragraph per Visual Genome image.

The paper (arXiv 2608.18521, §3.1 and Table A1) fine-tunes on these paragraphs (14,579 training pairs in
its table) before the zero-shot Urban-1K evaluation (:mod:`hnclip_core.data.urban1k`).

On-disk format — the im2p project page (cs.stanford.edu/people/ranjaykrishna/im2p):
``paragraphs_v1.json`` is a JSON list of ``{"url", "image_id", "paragraph"}``; ``train_split.json``,
``val_split.json`` and ``test_split.json`` are JSON lists of integer image ids
(official sizes 14,575 / 2,487 / 2,489 images). The Visual Genome images (``VG_100K`` and ``VG_100K_2``
in the original release) are expected together as ``images/<image_id>.jpg`` — the url's basename.

Protocol implemented here:

* A pair per paragraph whose ``image_id`` is in the split file, in ``paragraphs_v1.json`` order.
* ``paragraphs_v1.json`` repeats some image ids (noted by the common im2p preprocessing scripts,
  which skip them): the first paragraph of an image is kept, later ones are skipped and counted in
  a log message — together with the number of paragraph records, so both counts can be compared with
  the paper's 14,579 (which may count records including repeats; not verified).
* Paragraph text: stripped, runs of whitespace (including the newlines some paragraphs contain)
  collapsed to one space; empty paragraphs are skipped (counted).
* Split ids without any paragraph are reported in a warning; every kept image must exist.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from .pairs import ImageCaptionPair, existing_root, layout_error, require_images

log = logging.getLogger(__name__)

NAME = "VG paragraphs"
PARAGRAPHS_FILE = "paragraphs_v1.json"
SPLIT_FILES = {"train": "train_split.json", "val": "val_split.json", "test": "test_split.json"}
SPLITS = tuple(SPLIT_FILES)
IMAGES_DIR = "images"

EXPECTED_LAYOUT = """\
    <root>/
      paragraphs_v1.json    JSON list of {"url": ".../VG_100K_2/2388350.jpg", "image_id": 2388350,
                                          "paragraph": "..."}
      train_split.json      JSON list of integer image ids (likewise val_split.json, test_split.json)
      images/<image_id>.jpg Visual Genome images (VG_100K and VG_100K_2 merged)
"""


def load_vg_pairs(root: str | Path, split: str) -> list[ImageCaptionPair]:
    """VG paragraph pairs of ``split`` (``"train"``, ``"val"`` or ``"test"``); see the module docstring."""
    if split not in SPLIT_FILES:
        raise ValueError(f"VG split must be one of {SPLITS}, got {split!r}")
    root = existing_root(NAME, root, EXPECTED_LAYOUT)
    split_ids = _read_split_ids(root, root / SPLIT_FILES[split])
    paragraphs = _read_paragraphs(root, root / PARAGRAPHS_FILE)

    pairs: list[ImageCaptionPair] = []
    kept_ids: set[int] = set()
    records = duplicates = empty = 0
    for record in paragraphs:
        image_id = record["image_id"]
        if image_id not in split_ids:
            continue
        records += 1
        if image_id in kept_ids:
            duplicates += 1
            continue
        text = " ".join(record["paragraph"].split())
        if not text:
            empty += 1
            continue
        kept_ids.add(image_id)
        pairs.append(ImageCaptionPair(root / IMAGES_DIR / f"{image_id}.jpg", text))

    if duplicates or empty:
        log.warning(
            "VG %s: %d paragraph records; skipped %d repeated image ids (kept the first) and %d empty",
            split,
            records,
            duplicates,
            empty,
        )
    without_paragraph = len(split_ids - kept_ids)
    if without_paragraph:
        log.warning("VG %s: %d split ids have no usable paragraph", split, without_paragraph)
    require_images(NAME, root, pairs, EXPECTED_LAYOUT)
    log.info("VG %s: %d pairs", split, len(pairs))
    return pairs


def _read_json(root: Path, path: Path):
    if not path.is_file():
        raise layout_error(NAME, root, f"annotation file missing: {path}", EXPECTED_LAYOUT)
    try:
        with path.open(encoding="utf-8") as file:
            return json.load(file)
    except json.JSONDecodeError as err:
        raise layout_error(NAME, root, f"{path}: not valid JSON ({err})", EXPECTED_LAYOUT) from err


def _read_split_ids(root: Path, path: Path) -> set[int]:
    ids = _read_json(root, path)
    if not isinstance(ids, list) or not all(isinstance(i, int) for i in ids):
        raise layout_error(NAME, root, f"{path}: expected a JSON list of integer image ids", EXPECTED_LAYOUT)
    return set(ids)


def _read_paragraphs(root: Path, path: Path) -> list[dict]:
    records = _read_json(root, path)
    valid = isinstance(records, list) and all(
        isinstance(r, dict) and isinstance(r.get("image_id"), int) and isinstance(r.get("paragraph"), str)
        for r in records
    )
    if not valid:
        raise layout_error(
            NAME,
            root,
            f"{path}: expected a JSON list of {{'image_id': int, 'paragraph': str, ...}} records",
            EXPECTED_LAYOUT,
        )
    return records
