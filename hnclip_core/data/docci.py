"""DOCCI (Onoe et al. 2024, "Descriptions of Connected and Contrasting Images") image–caption pairs.

Used by the paper (arXiv 2608.18521, §3.1 and Table A1) for fine-tuning and evaluation:
about 9.5k training images and a 5.1k-image test set, one long human description per image.

On-disk format — the official release (google/docci project page):
``docci_descriptions.jsonlines`` holds one JSON object per line with ``example_id``
(``"<split>_<index>"``, e.g. ``test_00042``), ``split``, ``image_file`` and ``description``;
``docci_images.tar.gz`` extracts to ``images/<image_file>``.

Protocol implemented here:

* ``"train"`` — rows whose ``split`` is ``train`` (9,647 in the release; the paper's "9.45k" could
  not be reconciled with the release, see ``shared/research/data_baselines.md`` §1).
* ``"test"`` — rows whose ``split`` is ``test`` or ``qual_test`` (5,000 + 100 = 5,100 images). This
  is the 5.1k protocol of the paper and of GOAL, whose ``datasets/docci_test.json`` lists exactly
  these 5,100 images. (FineLIP's evaluation keeps only the 5,000 ``test`` rows.)
* ``"val"`` — rows whose ``split`` is ``qual_dev`` (100 images in the release): a validation split kept apart
  from both, on which the synthetic benchmark's choices are made (its ``val`` split is written as ``qual_dev``).
* Caption = ``description`` unchanged; pairs keep the file's line order.
* Like the Hugging Face loading script (``google/docci`` ``docci.py``), a row is kept only if its
  ``split`` field is selected AND its ``example_id`` starts with that split name; rows failing the
  second check are skipped and counted in a warning. The synthetic benchmark
  (:mod:`hnclip_core.toy.synthetic`) names its rows ``train_00000`` / ``test_00000`` / ``qual_dev_00000`` with the
  matching ``split``, so the double filter keeps all of its rows.
* Every selected image must exist, otherwise :class:`DatasetLayoutError` names the missing file.
"""

from __future__ import annotations

import json
import logging
from pathlib import Path

from .pairs import ImageCaptionPair, existing_root, layout_error, require_images

log = logging.getLogger(__name__)

NAME = "DOCCI"
DESCRIPTIONS_FILE = "docci_descriptions.jsonlines"
IMAGES_DIR = "images"

#: Which values of the ``split`` field each loader split takes.
SPLIT_FIELDS: dict[str, tuple[str, ...]] = {
    "train": ("train",),
    "test": ("test", "qual_test"),
    "val": ("qual_dev",),
}
SPLITS = tuple(SPLIT_FIELDS)

EXPECTED_LAYOUT = """\
    <root>/
      docci_descriptions.jsonlines   one JSON object per line:
                                     {"example_id": "test_00000", "split": "test",
                                      "image_file": "test_00000.jpg", "description": "..."}
      images/<image_file>            e.g. images/test_00000.jpg (from docci_images.tar.gz)
"""

REQUIRED_FIELDS = ("example_id", "split", "image_file", "description")


def load_docci_pairs(root: str | Path, split: str) -> list[ImageCaptionPair]:
    """Pairs of DOCCI ``split`` (``"train"``, ``"test"`` or ``"val"``) in file order; see the module docstring."""
    if split not in SPLIT_FIELDS:
        raise ValueError(f"DOCCI split must be one of {SPLITS}, got {split!r}")
    root = Path(root)
    rows = _read_descriptions(root)
    wanted = SPLIT_FIELDS[split]

    pairs: list[ImageCaptionPair] = []
    bad_prefix = 0
    for row in rows:
        if row["split"] not in wanted:
            continue
        if not row["example_id"].startswith(row["split"]):
            bad_prefix += 1
            continue
        pairs.append(ImageCaptionPair(root / IMAGES_DIR / row["image_file"], row["description"]))

    if bad_prefix:
        log.warning(
            "DOCCI %s: skipped %d rows whose example_id does not start with their split name",
            split,
            bad_prefix,
        )
    if not pairs:
        found = sorted({row["split"] for row in rows})
        raise layout_error(
            NAME,
            root,
            f"no rows with split in {wanted} in {DESCRIPTIONS_FILE} (split values found: {found})",
            EXPECTED_LAYOUT,
        )
    require_images(NAME, root, pairs, EXPECTED_LAYOUT)
    log.info("DOCCI %s: %d pairs", split, len(pairs))
    return pairs


def _read_descriptions(root: Path) -> list[dict]:
    """All rows of ``docci_descriptions.jsonlines``, checked for the fields the loader uses."""
    existing_root(NAME, root, EXPECTED_LAYOUT)
    path = root / DESCRIPTIONS_FILE
    if not path.is_file():
        raise layout_error(NAME, root, f"annotation file missing: {path}", EXPECTED_LAYOUT)

    rows = []
    with path.open(encoding="utf-8") as lines:
        for line_number, line in enumerate(lines, start=1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as err:
                raise layout_error(
                    NAME, root, f"{path}, line {line_number}: not JSON ({err})", EXPECTED_LAYOUT
                ) from err
            missing = [f for f in REQUIRED_FIELDS if not isinstance(row, dict) or f not in row]
            if missing:
                raise layout_error(
                    NAME, root, f"{path}, line {line_number}: missing fields {missing}", EXPECTED_LAYOUT
                )
            rows.append(row)
    return rows
