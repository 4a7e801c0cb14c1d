"""Benchmark loaders: every dataset of the paper (arXiv 2608.18521, §3.1, Table A1) as image–caption pairs.

``load_pairs(name, root, split)`` returns a ``list[ImageCaptionPair]`` in a fixed order; pair ``i``'s
image is the only match of caption ``i`` in 1:1 retrieval (App. D.3). Wrap it in :class:`PairDataset`
to get model inputs. Each dataset module documents its on-disk format, its source and its protocol.
Other benchmarks join with :func:`register_dataset`; :func:`hnclip_core.toy.register_datasets` adds the
embedded default's ``synthetic`` and ``synthetic-alt`` (the harness's commands and notebooks call it).

=============  ==================  ==========================================================
name           splits              module
=============  ==================  ==========================================================
``docci``      train, test         :mod:`.docci` (test = ``test`` + ``qual_test``, 5,100)
``dci``        train, test         :mod:`.dci` (GOAL's 5,446 / 1,999 lists)
``long-dci``   train, test         :mod:`.dci` (test = TULIP's full ``extra_caption`` set)
``urban1k``    test                :mod:`.urban1k`
``vg``         train, val, test    :mod:`.vg` (Krause et al. paragraphs)
=============  ==================  ==========================================================
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from .dci import load_dci_pairs, load_long_dci_pairs
from .docci import load_docci_pairs
from .pairs import DatasetLayoutError, ImageCaptionPair, PairDataset
from .urban1k import load_urban1k_pairs
from .vg import load_vg_pairs

__all__ = [
    "DATASETS",
    "SPLITS",
    "DatasetLayoutError",
    "check_dataset",
    "ImageCaptionPair",
    "PairDataset",
    "load_pairs",
    "register_dataset",
]

#: Valid splits of each dataset name accepted by :func:`load_pairs`.
SPLITS: dict[str, tuple[str, ...]] = {
    "docci": ("train", "test"),
    "dci": ("train", "test"),
    "long-dci": ("train", "test"),
    "urban1k": ("test",),
    "vg": ("train", "val", "test"),
}
#: Names of :data:`SPLITS` (kept in step by :func:`register_dataset`).
DATASETS: list[str] = list(SPLITS)

Loader = Callable[[Path | None, str], list[ImageCaptionPair]]
_LOADERS: dict[str, Loader] = {
    "docci": load_docci_pairs,
    "dci": load_dci_pairs,
    "long-dci": load_long_dci_pairs,
    "urban1k": load_urban1k_pairs,
    "vg": load_vg_pairs,
}


def register_dataset(name: str, splits: tuple[str, ...], loader: Loader) -> None:
    """Make ``load_pairs(name, root, split)`` call ``loader(root, split)``; ``root`` may then be None
    (a benchmark that builds itself, such as the embedded default's)."""
    SPLITS[name] = tuple(splits)
    _LOADERS[name] = loader
    if name not in DATASETS:
        DATASETS.append(name)


def check_dataset(name: str, root: str | Path | None, split: str | None = None, root_option: str = "a data root"
                  ) -> None:
    """Raise ``ValueError`` unless ``load_pairs(name, root, split)`` can be asked for: a registered name, one of
    its splits (any, when ``split`` is None) and a root for the benchmarks read from files (``root_option``: what
    the caller calls the root, for the message)."""
    if name not in SPLITS:
        raise ValueError(
            f"unknown dataset {name!r}; valid names: {', '.join(DATASETS)} (the embedded synthetic benchmark "
            "joins them with hnclip_core.toy.register_datasets())"
        )
    if split is not None and split not in SPLITS[name]:
        raise ValueError(f"{name} has no split {split!r}; valid splits: {', '.join(SPLITS[name])}")
    if name in _BUILT_IN and root is None:
        raise ValueError(f"dataset {name!r} needs {root_option}, the folder holding it")


def load_pairs(name: str, root: str | Path | None, split: str) -> list[ImageCaptionPair]:
    """Image–caption pairs of dataset ``name`` (one of :data:`DATASETS`), ``split``, stored under ``root``.

    Raises ``ValueError`` for an unknown name or split (:func:`check_dataset`) and :class:`DatasetLayoutError`
    when the files on disk do not match the dataset's expected layout.
    """
    check_dataset(name, root, split)
    return _LOADERS[name](None if root is None else Path(root), split)


_BUILT_IN = frozenset(_LOADERS)
