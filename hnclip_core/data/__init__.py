"""Benchmark loaders: every dataset of the paper (arXiv 2608.18521, §3.1, Table A1) as image–caption pairs.

``load_pairs(name, root, split)`` returns a ``list[ImageCaptionPair]`` in a fixed order; pair ``i``'s
image is the only match of caption ``i`` in 1:1 retrieval (App. D.3). Wrap it in :class:`PairDataset`
to get model inputs. Each dataset module documents its on-disk format, its source and its protocol.

=============  ==================  ==========================================================
name           splits              module
=============  ==================  ==========================================================
``docci``      train, test         :mod:`.docci` (test = ``test`` + ``qual_test``, 5,100)
``dci``        train, test         :mod:`.dci` (GOAL's 5,446 / 1,999 lists)
``long-dci``   train, test         :mod:`.dci` (test = TULIP's full ``extra_caption`` set)
``urban1k``    test                :mod:`.urban1k`
``vg``         train, val, test    :mod:`.vg` (Krause et al. paragraphs)
``synthetic``  train, test         built by :mod:`.synthetic` in DOCCI's format, read by :mod:`.docci`
``synthetic-   train, test         the same scenes with ``dense-alt`` captions (another voice and
alt``                              order): the target of the cross-domain study (App. E.3 analogue)
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
    "ImageCaptionPair",
    "PairDataset",
    "load_pairs",
]

#: Valid splits of each dataset name accepted by :func:`load_pairs`.
SPLITS: dict[str, tuple[str, ...]] = {
    "docci": ("train", "test"),
    "dci": ("train", "test"),
    "long-dci": ("train", "test"),
    "urban1k": ("test",),
    "vg": ("train", "val", "test"),
    "synthetic": ("train", "test"),
    "synthetic-alt": ("train", "test"),
}
DATASETS: tuple[str, ...] = tuple(SPLITS)

_LOADERS: dict[str, Callable[[Path, str], list[ImageCaptionPair]]] = {
    "docci": load_docci_pairs,
    "dci": load_dci_pairs,
    "long-dci": load_long_dci_pairs,
    "urban1k": load_urban1k_pairs,
    "vg": load_vg_pairs,
}


def load_pairs(name: str, root: str | Path | None, split: str) -> list[ImageCaptionPair]:
    """Image–caption pairs of dataset ``name`` (one of :data:`DATASETS`), ``split``, stored under ``root``.

    ``root=None`` is only allowed for ``"synthetic"`` and ``"synthetic-alt"``, whose benchmarks are generated
    (once, cached) by :func:`hnclip_core.data.synthetic.ensure_synthetic_benchmark` and read with the DOCCI
    reader.
    Raises ``ValueError`` for an unknown name or split and :class:`DatasetLayoutError` when the files
    on disk do not match the dataset's expected layout.
    """
    if name not in SPLITS:
        raise ValueError(f"unknown dataset {name!r}; valid names: {', '.join(DATASETS)}")
    if split not in SPLITS[name]:
        raise ValueError(f"{name} has no split {split!r}; valid splits: {', '.join(SPLITS[name])}")

    if name == "synthetic":
        from .synthetic import ensure_synthetic_benchmark  # imported here so the readers work without it

        benchmark_root = ensure_synthetic_benchmark(None if root is None else Path(root))
        return load_docci_pairs(benchmark_root, split)
    if name == "synthetic-alt":
        from .synthetic import SyntheticConfig, ensure_synthetic_benchmark, read_config_record

        if root is None:
            return load_docci_pairs(ensure_synthetic_benchmark(None, SyntheticConfig(caption_style="dense-alt")), split)
        record = read_config_record(Path(root))
        style = None if record is None else record["config"].get("caption_style")
        if style != "dense-alt":
            raise DatasetLayoutError(
                f"{root} is not a synthetic benchmark with dense-alt captions (config.json says caption_style "
                f"{style!r}); write one with SyntheticConfig(caption_style='dense-alt') or pass no data root"
            )
        return load_docci_pairs(Path(root), split)

    if root is None:
        raise ValueError(f"{name} needs a data root (root=None is only allowed for 'synthetic')")
    return _LOADERS[name](Path(root), split)
