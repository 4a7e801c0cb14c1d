"""Image–caption pairs and the torch ``Dataset`` every benchmark loader feeds.

Every loader in :mod:`hnclip_core.data` returns a plain ``list[ImageCaptionPair]`` in a documented,
deterministic order; :class:`PairDataset` turns such a list into (preprocessed image, token ids) items for
a model returned by :func:`hnclip_core.longclip.load_longclip`. Retrieval is evaluated 1:1, so pair ``i``'s
image is the only correct match for caption ``i`` (paper App. D.3).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import torch
from PIL import Image

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class ImageCaptionPair:
    """One image file and its (long) caption."""

    image_path: Path
    caption: str

    def load_image(self) -> Image.Image:
        """The image as an RGB PIL image, read fully into memory (the file is closed again)."""
        with Image.open(self.image_path) as image:
            return image.convert("RGB")


class DatasetLayoutError(FileNotFoundError):
    """A dataset root, file or folder is missing or malformed; the message shows the expected layout."""


def layout_error(name: str, root: Path, problem: str, expected_layout: str) -> DatasetLayoutError:
    """Build an error that names the problem and shows the on-disk layout the loader expects."""
    return DatasetLayoutError(
        f"{name}: {problem}\n  data root: {root}\n  expected layout:\n{expected_layout.rstrip()}"
    )


def existing_root(name: str, root: str | Path, expected_layout: str) -> Path:
    """``root`` as a Path, or an error showing the expected layout when the folder does not exist."""
    root = Path(root)
    if not root.is_dir():
        raise layout_error(name, root, "data root does not exist", expected_layout)
    return root


def require_images(name: str, root: Path, pairs: Sequence[ImageCaptionPair], expected_layout: str) -> None:
    """Fail early, naming the first missing file, if any selected image is not on disk."""
    missing = [p.image_path for p in pairs if not p.image_path.is_file()]
    if missing:
        raise layout_error(
            name, root, f"{len(missing)} of {len(pairs)} image files missing, first: {missing[0]}", expected_layout
        )


def count_truncated(captions: Sequence[str], tokenizer) -> int:
    """How many captions do not fit the tokenizer's context (they will be cut and given an end token).

    ``tokenizer`` is open_clip's ``SimpleTokenizer``; a caption fits when start token + BPE tokens +
    end token ≤ ``tokenizer.context_length``.
    """
    limit = tokenizer.context_length - 2
    return sum(len(tokenizer.encode(c)) > limit for c in captions)


class PairDataset(torch.utils.data.Dataset):
    """Yields ``(image_tensor, token_ids)`` for a list of pairs.

    Captions are tokenised once, up front (open_clip's tokenizer truncates to its context length and
    ends every sequence with the end-of-text token, as Long-CLIP's ``tokenize(..., truncate=True)``
    does); how many were truncated is logged once and kept in :attr:`num_truncated`.
    Images are opened lazily, converted to RGB and passed through ``preprocess``; a missing or unreadable
    image raises :class:`DatasetLayoutError` naming the file. With ``skip_unreadable=True`` every image is
    checked up front instead (``PIL.Image.verify``) and pairs whose image cannot be read are dropped — their
    number in :attr:`num_skipped`, logged once with the first file and its problem. Off by default: a
    dropped test image changes the retrieval gallery, so the paper's numbers are only comparable without it.
    """

    def __init__(
        self,
        pairs: Sequence[ImageCaptionPair],
        preprocess: Callable[[Image.Image], torch.Tensor],
        tokenizer,
        skip_unreadable: bool = False,
    ):
        self.pairs = list(pairs)
        self.num_skipped = 0
        if skip_unreadable:
            self.pairs = self._readable(self.pairs)
        self.preprocess = preprocess
        self.tokenizer = tokenizer
        captions = [p.caption for p in self.pairs]
        self.tokens = tokenizer(captions) if captions else torch.zeros(0, tokenizer.context_length, dtype=torch.long)
        # Only a sequence that fills the context can have been cut: re-encode just those to count truncation.
        self.num_truncated = count_truncated([c for c, ids in zip(captions, self.tokens, strict=True) if ids[-1]],
                                             tokenizer)
        if self.num_truncated:
            log.warning(
                "%d of %d captions exceed %d tokens and were truncated",
                self.num_truncated,
                len(captions),
                tokenizer.context_length,
            )

    def _readable(self, pairs: list[ImageCaptionPair]) -> list[ImageCaptionPair]:
        kept, first_problem = [], None
        for pair in pairs:
            try:
                with Image.open(pair.image_path) as image:
                    image.verify()
            except OSError as err:  # missing files (FileNotFoundError) and corrupt ones alike
                first_problem = first_problem or f"{pair.image_path}: {err}"
                continue
            kept.append(pair)
        self.num_skipped = len(pairs) - len(kept)
        if self.num_skipped:
            log.warning("skipped %d of %d pairs whose image cannot be read (first: %s)",
                        self.num_skipped, len(pairs), first_problem)
        return kept

    def __len__(self) -> int:
        return len(self.pairs)

    def __getitem__(self, index: int) -> tuple[torch.Tensor, torch.Tensor]:
        path = self.pairs[index].image_path
        try:
            with Image.open(path) as image:
                pixels = self.preprocess(image.convert("RGB"))
        except FileNotFoundError as err:
            raise DatasetLayoutError(f"image file missing: {path}") from err
        except OSError as err:  # PIL raises UnidentifiedImageError (an OSError) for corrupt files
            raise DatasetLayoutError(f"cannot read image file {path}: {err}") from err
        return pixels, self.tokens[index]
