"""Image segments paired with the caption sentence that describes them: the local inputs of GOAL-style
(local image–sentence matching) and StructXLIP-style (edge crops) fine-tuning, :mod:`hnclip_core.frameworks`.

Two sources:

* **GOAL's JSON format** (PerceptualAI-Lab/GOAL, ``goal_loss_finetuning.py`` and ``LISM/``, read at commit
  34f018e): a JSON list with one record per training image::

      [{"original_filename": ".../train_00000.jpg",
        "original_caption": "...",
        "segment": [{"filename": ".../crop_3.jpg", "caption": "<one sentence of the caption>",
                     "similarity_score": 27.1,
                     "bbox_coordinates": {"x1": 10, "y1": 4, "x2": 90, "y2": 70, "width": 80, "height": 66}},
                    ...]},
       ...]

  GOAL's preprocessing (LISM) crops SAM masks' bounding boxes, scores every crop against every sentence of the
  caption with a CLIP model and keeps, per sentence, its best crop; ``make_bbox.py`` then locates each crop in
  the original image: ``x1, y1, x2, y2`` are pixel coordinates in the original image, ``width``/``height`` the
  crop's size. A record is matched to a training pair by the *file name* of ``original_filename`` (GOAL's
  paths are relative to its own working folder, so directories are ignored). A crop ``filename`` is read if it
  exists (relative paths are resolved against the JSON file's folder); otherwise the box is cropped from the
  training image, which is what GOAL's crops are (plain bounding-box crops of the original pixels).
* **The synthetic benchmark** (:mod:`hnclip_core.toy.synthetic`): ``synthetic_metadata.jsonlines`` lists
  every object's pixel box and the sentence of the caption that describes it — segments whose sentence is
  correct by construction. With no matching score, the object's box area stands in for ``similarity_score``
  (larger objects first); objects their caption does not mention are left out.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ..data.pairs import DatasetLayoutError, ImageCaptionPair

__all__ = ["Segment", "read_goal_segments", "read_synthetic_segments", "segments_for_pairs", "SegmentFileError"]


class SegmentFileError(DatasetLayoutError):
    """A segment file is missing, malformed, or does not cover the training pairs."""


@dataclass(frozen=True)
class Segment:
    """An image region and the caption sentence it is matched with (GOAL's "local pair")."""

    box: tuple[float, float, float, float]  # x1, y1, x2, y2 in the original image's pixels
    sentence: str
    score: float
    crop_path: Path | None = None


def _problem(path: Path, where: str, problem: str) -> SegmentFileError:
    return SegmentFileError(f"segment file {path}: {where}: {problem}")


def _goal_segment(path: Path, where: str, raw) -> Segment:
    if not isinstance(raw, dict):
        raise _problem(path, where, f"a segment must be an object, got {type(raw).__name__}")
    missing = [k for k in ("caption", "similarity_score", "bbox_coordinates") if k not in raw]
    if missing:
        raise _problem(path, where, f"missing fields {missing}")
    box = raw["bbox_coordinates"]
    if not isinstance(box, dict) or any(k not in box for k in ("x1", "y1", "x2", "y2")):
        raise _problem(path, where, "bbox_coordinates needs x1, y1, x2, y2")
    x1, y1, x2, y2 = (float(box[k]) for k in ("x1", "y1", "x2", "y2"))
    if not (x2 > x1 and y2 > y1):
        raise _problem(path, where, f"empty box {x1, y1, x2, y2}")
    crop = raw.get("filename")
    crop_path = None
    if crop:
        crop_path = Path(crop) if Path(crop).is_absolute() else path.parent / crop
    return Segment((x1, y1, x2, y2), str(raw["caption"]), float(raw["similarity_score"]), crop_path)


def read_goal_segments(path: str | Path) -> dict[str, list[Segment]]:
    """Segments of a GOAL-format JSON file, keyed by the file name of each record's ``original_filename``,
    best ``similarity_score`` first. Raises :class:`SegmentFileError` naming the file and the record."""
    path = Path(path)
    if not path.is_file():
        raise SegmentFileError(f"segment file not found: {path}")
    try:
        records = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise SegmentFileError(f"segment file {path}: not JSON ({err})") from err
    if not isinstance(records, list):
        raise SegmentFileError(f"segment file {path}: expected a JSON list of records, got {type(records).__name__}")
    segments: dict[str, list[Segment]] = {}
    for number, record in enumerate(records):
        where = f"record {number}"
        if not isinstance(record, dict) or "original_filename" not in record or "segment" not in record:
            raise _problem(path, where, "needs 'original_filename' and 'segment'")
        if not isinstance(record["segment"], list):
            raise _problem(path, where, "'segment' must be a list")
        parsed = [_goal_segment(path, f"{where}, segment {i}", s) for i, s in enumerate(record["segment"])]
        name = Path(record["original_filename"]).name
        segments.setdefault(name, []).extend(parsed)
    for found in segments.values():
        found.sort(key=lambda s: -s.score)
    return segments


def read_synthetic_segments(root: str | Path) -> dict[str, list[Segment]]:
    """Segments of a synthetic benchmark (its object boxes and their sentences), keyed by image file name,
    largest object first."""
    from ..toy.synthetic import METADATA_FILE  # the reader of the other format works without the generator

    path = Path(root) / METADATA_FILE
    if not path.is_file():
        raise SegmentFileError(f"{path} not found: not a synthetic benchmark folder")
    segments: dict[str, list[Segment]] = {}
    with path.open(encoding="utf-8") as lines:
        for line in lines:
            if not line.strip():
                continue
            row = json.loads(line)
            found = []
            for obj in row["objects"]:
                if not obj.get("sentence"):
                    continue
                x1, y1, x2, y2 = (float(v) for v in obj["bbox"])
                found.append(Segment((x1, y1, x2, y2), obj["sentence"], (x2 - x1) * (y2 - y1)))
            segments[f"{row['example_id']}.png"] = sorted(found, key=lambda s: -s.score)
    return segments


def segments_for_pairs(pairs: Sequence[ImageCaptionPair], segments: dict[str, list[Segment]],
                       source: str | Path) -> list[list[Segment]]:
    """Each pair's segments, best first. Every pair must have at least one (GOAL trains on one per image);
    otherwise :class:`SegmentFileError` names the source, how many pairs lack one and the first of them."""
    found = [segments.get(p.image_path.name, []) for p in pairs]
    lacking = [p.image_path.name for p, s in zip(pairs, found, strict=True) if not s]
    if lacking:
        raise SegmentFileError(
            f"segments from {source}: {len(lacking)} of {len(pairs)} training images have no segment "
            f"(first: {lacking[0]}); records are matched by the file name of 'original_filename'"
        )
    return found
