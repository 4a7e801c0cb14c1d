"""Urban-1K (Zhang et al. 2024, Long-CLIP): 1,000 urban scenes with long GPT-4V captions, test only.

The paper (arXiv 2608.18521, §3.1 and Table A1) evaluates on Urban-1K zero-shot after fine-tuning on
Visual Genome paragraphs (:mod:`hnclip_core.data.vg`); retrieval is 1:1 (App. D.3).

On-disk format — ``Urban1k.zip`` of the Hugging Face dataset ``BeichenZhang/Urban1k``, as read by
Long-CLIP's ``eval/retrieval/Urban1k.py``: ``image/<id>.jpg`` and ``caption/<id>.txt``.

Protocol implemented here:

* One pair per ``caption/*.txt``; its image is ``image/<same stem>.jpg``.
* Caption = the first line of the text file, stripped (Long-CLIP reads ``f.readlines()[0]``).
* Order: by numeric id when every stem is an integer (``1 … 1000``, the order of GOAL's
  ``urban_dataset_test.json``), otherwise lexicographic. Long-CLIP iterates ``os.listdir``, whose order
  is arbitrary; only the pairing matters for 1:1 retrieval.
* A caption whose image is missing, or an empty caption file, raises :class:`DatasetLayoutError`
  naming the file; images without a caption are ignored (counted in a warning).
"""

from __future__ import annotations

import logging
from pathlib import Path

from .pairs import ImageCaptionPair, existing_root, layout_error

log = logging.getLogger(__name__)

NAME = "Urban-1K"
IMAGE_DIR = "image"
CAPTION_DIR = "caption"
SPLITS = ("test",)

EXPECTED_LAYOUT = """\
    <root>/                 (Urban1k.zip extracted)
      image/<id>.jpg        e.g. image/1.jpg … image/1000.jpg
      caption/<id>.txt      the caption is the first line of the file
"""


def load_urban1k_pairs(root: str | Path, split: str) -> list[ImageCaptionPair]:
    """All Urban-1K pairs (only split ``"test"`` exists), ordered by id; see the module docstring."""
    if split not in SPLITS:
        raise ValueError(f"Urban-1K split must be one of {SPLITS}, got {split!r}")
    root = existing_root(NAME, root, EXPECTED_LAYOUT)
    for folder in (IMAGE_DIR, CAPTION_DIR):
        if not (root / folder).is_dir():
            raise layout_error(NAME, root, f"folder missing: {root / folder}", EXPECTED_LAYOUT)

    caption_files = _sorted_by_id(list((root / CAPTION_DIR).glob("*.txt")))
    if not caption_files:
        raise layout_error(NAME, root, f"no *.txt files in {root / CAPTION_DIR}", EXPECTED_LAYOUT)

    pairs = []
    for caption_file in caption_files:
        image_path = root / IMAGE_DIR / f"{caption_file.stem}.jpg"
        if not image_path.is_file():
            raise layout_error(
                NAME, root, f"caption {caption_file} has no image: {image_path} missing", EXPECTED_LAYOUT
            )
        pairs.append(ImageCaptionPair(image_path, _first_line(root, caption_file)))

    unmatched_images = len(list((root / IMAGE_DIR).glob("*.jpg"))) - len(pairs)
    if unmatched_images > 0:
        log.warning("Urban-1K: ignored %d images without a caption file", unmatched_images)
    log.info("Urban-1K test: %d pairs", len(pairs))
    return pairs


def _sorted_by_id(paths: list[Path]) -> list[Path]:
    if all(p.stem.isdigit() for p in paths):
        return sorted(paths, key=lambda p: int(p.stem))
    return sorted(paths, key=lambda p: p.name)


def _first_line(root: Path, caption_file: Path) -> str:
    with caption_file.open(encoding="utf-8") as file:
        caption = file.readline().strip()
    if not caption:
        raise layout_error(
            NAME, root, f"caption file {caption_file} has an empty first line", EXPECTED_LAYOUT
        )
    return caption
