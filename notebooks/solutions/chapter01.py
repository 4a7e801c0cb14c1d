"""Solutions to the exercises of chapter 1 (``notebooks/01_caption_geometry.py``); arXiv 2608.18521 §2.1,
Fig. 1, Fig. A6 and Table A1.

Every exercise is a function of the chapter's caption features (``features``: the L2-normalised ``[N, D]``
rows that ``encode_captions`` returns, one per test caption) and, for exercises 2 and 3, of what the synthetic
benchmark's generator recorded about each pair (:func:`synthetic_metadata`). Any text encoder can therefore
be measured; ``tests/test_exercises.py`` checks the functions on a tiny random one and on constructed
features. ``python notebooks/solutions/chapter01.py`` shows them on constructed features (no model needed).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

from hnclip_core.toy.synthetic import METADATA_FILE

_NOTEBOOKS = str(Path(__file__).resolve().parents[1])
if _NOTEBOOKS not in sys.path:  # chapter01_helpers lives beside the notebooks
    sys.path.insert(0, _NOTEBOOKS)

from chapter01_helpers import differing_phrases  # noqa: E402

__all__ = ["synthetic_metadata", "similarity_matrix", "exercise1", "exercise2", "exercise3"]


def synthetic_metadata(pairs: Sequence) -> list[dict]:
    """The generator's record of every pair (``family_id``, ``changed_detail``, ``objects``, ``captions``),
    in the order of ``pairs``.

    It is read from ``synthetic_metadata.jsonlines``, which lies beside the benchmark's ``images/`` folder;
    a pair is matched to its row by example id, the name of its image file. Only the synthetic benchmark has
    this file: DOCCI and the other real benchmarks record no families.
    """
    if not pairs:
        raise ValueError("no pairs given")
    root = Path(pairs[0].image_path).parent.parent
    path = root / METADATA_FILE
    if not path.is_file():
        raise ValueError(f"{root} is not a synthetic benchmark: it has no {METADATA_FILE}")
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            rows[row["example_id"]] = row
    return [rows[Path(pair.image_path).stem] for pair in pairs]


def similarity_matrix(features: torch.Tensor) -> torch.Tensor:
    """G = T Tᵀ: every caption's cosine with every caption (the rows are unit vectors already)."""
    return features @ features.T


def _off_diagonal(n: int, like: torch.Tensor) -> torch.Tensor:
    return ~torch.eye(n, dtype=torch.bool, device=like.device)


def exercise1(features: torch.Tensor, threshold: float = 0.8) -> dict:
    """The numbers of the chapter's table (Fig. 1, Table A1, Fig. A6), by hand.

    * ``mean_pairwise``: the mean of G over all ordered pairs i ≠ j. G is symmetric, so each unordered pair
      appears twice and this equals the mean over pairs i < j that ``caption_similarity_stats`` takes;
    * ``hardest`` / ``hardest_index``: per caption, the largest cosine to another caption and which caption
      that is. The diagonal must be masked first, or every caption's hardest companion is itself (G_ii = 1);
    * ``mean_hardest``: the mean of ``hardest``;
    * ``fraction_at_least``: the share of pairs with G ≥ ``threshold`` (Fig. A6's hardness buckets).

    G is computed in the features' precision (as the package does); the means are taken in float64.
    """
    G = similarity_matrix(features)
    off = _off_diagonal(len(G), G)
    hardest = G.masked_fill(~off, float("-inf")).max(dim=1)
    return {
        "mean_pairwise": G[off].double().mean().item(),
        "hardest": hardest.values,
        "hardest_index": hardest.indices,
        "mean_hardest": hardest.values.double().mean().item(),
        "fraction_at_least": (G[off] >= threshold).double().mean().item(),
    }


def exercise2(features: torch.Tensor, families: Sequence[str]) -> dict:
    """Twins and strangers: caption similarity inside and across near-duplicate families.

    ``families[i]`` is caption i's ``family_id``. Returns

    * ``within`` / ``across``: the mean G over pairs of different captions of one family / of two families;
    * ``twin_is_hardest``: among captions with at least one twin, the share whose hardest companion (the
      negative with the largest Ḡ, so the largest boost γḠ) is a twin;
    * ``twin_beats_every_stranger``: the share whose *least* similar twin is still more similar than their
      most similar stranger — the family stands out from the rest of the split as a whole;
    * ``num_with_twins``: how many captions have a twin (singleton families have none).

    On the synthetic benchmark members differ from their base scene in one detail, so the expectation is
    ``within`` close to 1, far above ``across``, and hardest companions that are twins.
    """
    if len(families) != len(features):
        raise ValueError(f"{len(families)} family ids for {len(features)} captions")
    codes = {family: code for code, family in enumerate(dict.fromkeys(families))}
    family = torch.tensor([codes[f] for f in families], device=features.device)
    G = similarity_matrix(features).double()
    off = _off_diagonal(len(G), G)
    same = family[:, None] == family[None, :]
    twins, strangers = same & off, ~same
    has_twin = twins.any(dim=1)
    hardest_index = G.masked_fill(~off, float("-inf")).argmax(dim=1)
    least_similar_twin = G.masked_fill(~twins, float("inf")).min(dim=1).values
    most_similar_stranger = G.masked_fill(~strangers, float("-inf")).max(dim=1).values
    twin_is_hardest = family[hardest_index] == family
    stands_out = least_similar_twin > most_similar_stranger
    return {
        "within": G[twins].mean().item() if twins.any() else float("nan"),
        "across": G[strangers].mean().item() if strangers.any() else float("nan"),
        "twin_is_hardest": twin_is_hardest[has_twin].double().mean().item() if has_twin.any() else float("nan"),
        "twin_beats_every_stranger": stands_out[has_twin].double().mean().item() if has_twin.any() else float("nan"),
        "num_with_twins": int(has_twin.sum()),
    }


def _words_changed(caption_a: str, caption_b: str) -> int:
    only_a, only_b = differing_phrases(caption_a, caption_b)
    return sum(len(phrase.split()) for phrase in only_a + only_b)


def exercise3(features: torch.Tensor, metadata: Sequence[dict], captions: Sequence[str]) -> dict[str, dict]:
    """Which kind of one-detail edit leaves the closest twin?

    Every family member other than the base scene records its edit in ``changed_detail`` (kind: colour,
    shape, size, swap or background), always relative to the base. For each member this takes its cosine
    with the base's caption and the number of words in which the two captions differ (a word-level diff,
    :func:`chapter01_helpers.differing_phrases`, counting both sides), and averages both per kind.

    Returns ``{kind: {"count", "mean_similarity", "mean_words_changed"}}``, the most similar kind first.
    A colour edit renames an object everywhere the caption mentions it (its own sentence and the spatial
    relations), a swap exchanges two region phrases but keeps the bag of words, so which edit the encoder
    finds "smallest" need not be the one with the fewest words changed.
    """
    if not len(metadata) == len(captions) == len(features):
        raise ValueError(f"{len(metadata)} metadata rows, {len(captions)} captions, {len(features)} feature rows")
    base_of = {row["family_id"]: i for i, row in enumerate(metadata) if row["changed_detail"] is None}
    grouped: dict[str, list[tuple[float, int]]] = {}
    for i, row in enumerate(metadata):
        if row["changed_detail"] is None:
            continue
        base = base_of[row["family_id"]]
        similarity = (features[i] @ features[base]).item()
        grouped.setdefault(row["changed_detail"]["kind"], []).append(
            (similarity, _words_changed(captions[base], captions[i])))
    summary = {
        kind: {
            "count": len(values),
            "mean_similarity": sum(s for s, _ in values) / len(values),
            "mean_words_changed": sum(w for _, w in values) / len(values),
        }
        for kind, values in grouped.items()
    }
    return dict(sorted(summary.items(), key=lambda item: -item[1]["mean_similarity"]))


def _constructed_features(num_families: int = 50, family_size: int = 4, dim: int = 64, spread: float = 0.3,
                          seed: int = 0) -> tuple[torch.Tensor, list[str]]:
    """Unit vectors in families: a shared random direction per family plus a small independent offset."""
    generator = torch.Generator().manual_seed(seed)
    centres = torch.randn(num_families, dim, generator=generator).repeat_interleave(family_size, dim=0)
    offsets = torch.randn(num_families * family_size, dim, generator=generator)
    features = torch.nn.functional.normalize(centres + spread * offsets, dim=1)
    return features, [f"f{i // family_size}" for i in range(num_families * family_size)]


if __name__ == "__main__":
    features, families = _constructed_features()
    one = exercise1(features)
    print(f"Exercise 1 (constructed features): mean pairwise {one['mean_pairwise']:.3f}, mean hardest "
          f"{one['mean_hardest']:.3f}, pairs with G >= 0.8: {100 * one['fraction_at_least']:.1f}%")
    two = exercise2(features, families)
    print(f"Exercise 2: within families {two['within']:.3f}, across {two['across']:.3f}; hardest companion a twin "
          f"for {100 * two['twin_is_hardest']:.0f}% of captions")
    print("Exercise 3 needs the synthetic benchmark's captions and metadata: run it in the chapter.")
