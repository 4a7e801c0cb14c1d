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

    Answer (why the diagonal is masked): the rows are unit vectors, so G_ii = t_i·t_i = 1, the largest value a
    cosine can take. Without the mask every row's maximum is its own diagonal entry: each caption's "hardest
    companion" would be itself, at cosine 1, and ``mean_hardest`` would be exactly 1 whatever the encoder. A
    caption is never its own negative either: Eq. 2's Ḡ = stopgrad(TTᵀ) ⊙ (1 − I) zeroes the diagonal for the
    same reason (the positive keeps its logit). The mask fills the diagonal with −∞ rather than 0, so that a
    caption whose cosines with all others are negative still gets one of them, not itself.

    Answer (why ordered pairs may stand for unordered ones): G is symmetric (G_ij = t_i·t_j = G_ji), so the N(N − 1)
    ordered pairs i ≠ j are the N(N − 1)/2 unordered pairs i < j, each counted twice. Sum and count both double,
    and their ratio, the mean, does not change; the same holds for the share of pairs with G ≥ ``threshold``.
    That is exact arithmetic. In floating point ``T @ T.T`` may round G_ij and G_ji differently in the last bit,
    so a pair that sits right at the threshold can be counted once instead of twice, which is why the test
    allows one ordered pair of slack in ``fraction_at_least``.
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

    Answer (prediction, a base caption beside one of its members): predict a Ḡ close to 1, above every
    cosine between captions of different families. Reason from the generator (``hnclip_core.toy.synthetic``):
    a family draws its sentence templates once (``draw_template_choice``), and a member differs from its base
    scene in exactly one detail. Their two dense captions of roughly a hundred words are therefore identical
    word for word except for the phrase or phrases that name that detail, which ``differing_phrases`` prints:
    usually a word or two per mention, more for a swap. Captions of two different families share only the
    templates' fixed wording. An encoder whose output moves smoothly with its input can hardly tell such a pair
    apart. For comparison, natural near-duplicates are far looser: on DOCCI the hardest companions average
    0.93 under Long-CLIP-L (the paper's Table A1). Check the prediction against ``features[i] @ features[j]``.
    Over the split, read this function's ``within`` against ``across``, and ``twin_is_hardest`` (with
    ``twin_beats_every_stranger``) for how reliably the family stands out.

    Answer (which negatives γḠ boosts the most): the boost adds γḠ_ij to negative j's logit, so the
    negatives with the largest caption similarity get it: a caption's own family members, its near-twins. If
    ``twin_is_hardest`` is close to 1, the largest boost a caption can meet goes to a twin. The twin's margin
    exceeds a stranger's by γ·(``within`` − ``across``) on average, and by Eq. 4 its share of the repulsion,
    relative to a stranger's, grows by the factor exp(sγ·(Ḡ_twin − Ḡ_stranger)). Among the twins, the edits
    that leave the closest captions get the most (exercise 3). The boost only acts inside a batch, though:
    a twin is boosted only in the micro-batches that hold both captions, a share that the chapter's section 4
    computes.
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
    Answer (prediction, then: does the fewest-changed-words twin come out the most similar?): the word counts
    follow from the caption templates (``describe_dense``; a family shares its templates, so only the detail's
    words differ; counted on both sides):

    * **size**: exactly 2 words (the size word of the object's own sentence: "small", "medium-sized", "large").
      Size is not part of an object's name ("red circle"), so the relation sentences do not change. This is
      the fewest of all the kinds, by construction;
    * **colour** and **shape**: the object's name changes wherever the caption names the object, in its own
      sentence and in each of the (at most two) relation sentences that mention it: 2, 4 or 6 words;
    * **background**: the colour name in the intro sentence and, in all background templates but one, in
      the background sentence. A name is one or two words ("navy", "light gray"), so 2 to 8 words, fewer when two
      names share a word ("light gray" → "dark gray");
    * **swap**: the two objects' sentences exchange their region phrases, each 4 to 7 words long ("in the top
      left corner", "along the top edge, in the middle"). Any relation sentence that involves one of them can
      also change direction ("to the left of" → "to the right of"). The most words of any kind.

    Predicted order by changed words: size < colour ≈ shape < background ≲ swap. The encoder need not follow
    it, because counting words is not how it compares captions. A swap is the extreme case: it changes the
    most positions yet keeps the same words, only attached to other objects. An encoder that is weakly
    sensitive to word order, close to a bag of words (contrastively trained text encoders often are), would
    find the swapped twin the *closest*. An encoder whose size words carry little weight would put size first.
    The function returns the kinds sorted by ``mean_similarity`` together with each kind's
    ``mean_words_changed``. If the first kind is also the one with the smallest ``mean_words_changed``, the
    fewest-words twin is the closest one. Otherwise the answer is no, and the kinds ranked above it show which
    details this encoder ignores. Those details are the twins that γḠ boosts the most (exercise 2).
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
