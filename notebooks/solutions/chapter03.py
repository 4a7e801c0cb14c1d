"""Solutions to the exercises of chapter 3 (``notebooks/03_fine_tuning.py``); arXiv 2608.18521 Table 1, Fig. 3
and App. D.3 (the evaluation protocol).

The functions take the chapter's features (``features[objective]``: L2-normalised image and caption features
of the test split, row i of one belonging to row i of the other) and, for the family questions, each test
pair's ``family_id`` (``solutions.chapter01.synthetic_metadata``). ``tests/test_exercises.py`` checks them
against the package's evaluation; ``python notebooks/solutions/chapter03.py`` runs the simulations of
exercise 2 (no model needed).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F

from hnclip_core.evaluate import recall_at_k

__all__ = [
    "ranks_by_hand", "recall_by_hand", "family_blind_features", "twin_share_of_misses", "exercise1", "exercise2",
    "exercise3",
]


def ranks_by_hand(image_features: torch.Tensor, text_features: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """1-based rank of the ground truth for every query: ``(caption→image ranks, image→caption ranks)``.

    S[i, j] is the cosine of caption i and image j. Caption i's rank is 1 + the number of *other* images
    that score at least as high as image i (a tie counts against the query, the package's rule); image j's
    rank is 1 + the number of other captions scoring at least S[j, j] in column j.
    """
    texts, images = F.normalize(text_features.float(), dim=1), F.normalize(image_features.float(), dim=1)
    S = texts @ images.T
    positive = S.diagonal()
    others = ~torch.eye(len(S), dtype=torch.bool, device=S.device)
    text_to_image = 1 + ((S >= positive[:, None]) & others).sum(dim=1)
    image_to_text = 1 + ((S >= positive[None, :]) & others).sum(dim=0)
    return text_to_image, image_to_text


def recall_by_hand(image_features: torch.Tensor, text_features: torch.Tensor,
                   ks: Sequence[int] = (1, 5, 10)) -> dict[str, dict[int, float]]:
    """Recall@K in percent, ``{"t2i": {k: ...}, "i2t": {k: ...}}``: the share of queries ranked within the top K."""
    text_to_image, image_to_text = ranks_by_hand(image_features, text_features)
    return {direction: {int(k): 100.0 * (ranks <= k).double().mean().item() for k in ks}
            for direction, ranks in (("t2i", text_to_image), ("i2t", image_to_text))}


def exercise1(image_features: torch.Tensor, text_features: torch.Tensor, ks: Sequence[int] = (1, 5, 10)) -> dict:
    """Recall@K by hand, beside the package's :func:`hnclip_core.evaluate.recall_at_k` on the same features.

    Answer: the two must agree exactly, because they use the same rule. T→I ranks are counted along the rows of
    the caption–image matrix S (caption i against every image) and I→T ranks down its columns (image j against
    every caption). Recall@K is the share of queries whose ground truth has rank ≤ K. A tie counts against
    the query: rank = 1 + the number of *other* candidates scoring at least as high. This rule is
    pessimistic and independent of the candidates' order. The optimistic rule (1 + the number scoring strictly
    higher) would give a model that maps every image to one and the same vector a perfect T→I R@1. With
    continuous features, ties arise only for duplicate images or captions (see ``ranks_of_ground_truth``).
    The paper's protocol (App. D.3) likewise scores by cosine between L2-normalised features of the full test
    split, in both directions.
    """
    return {"by_hand": recall_by_hand(image_features, text_features, ks),
            "package": recall_at_k(image_features, text_features, ks)}


def family_blind_features(num_families: int = 250, family_size: int = 4, dim: int = 64, noise: float = 0.3,
                          seed: int = 0) -> tuple[torch.Tensor, torch.Tensor, list[str]]:
    """Features of a model that knows each scene's family but nothing that tells its members apart.

    Every image and every caption is its family's random direction plus its own independent noise (``noise``
    times a standard normal vector scaled to unit expected length), then normalised: a caption is far closer
    to the images of its family than to any other, and within the family its own image is no closer than a
    twin's. Returns ``(image_features, text_features, family ids)``, families consecutive.
    """
    generator = torch.Generator().manual_seed(seed)
    n = num_families * family_size
    centres = torch.randn(num_families, dim, generator=generator).repeat_interleave(family_size, dim=0) / dim**0.5
    images = centres + noise * torch.randn(n, dim, generator=generator) / dim**0.5
    texts = centres + noise * torch.randn(n, dim, generator=generator) / dim**0.5
    return F.normalize(images, dim=1), F.normalize(texts, dim=1), [f"f{i // family_size}" for i in range(n)]


def twin_share_of_misses(image_features: torch.Tensor, text_features: torch.Tensor, families: Sequence[str]) -> dict:
    """Caption→image top-1 errors and how many of them are a family twin's image.

    Returns ``misses`` (queries whose best-scoring image is not their own), ``twin_misses`` (of those, the
    ones whose best image belongs to the same family) and ``twin_share`` = twin_misses / misses.
    """
    texts, images = F.normalize(text_features.float(), dim=1), F.normalize(image_features.float(), dim=1)
    top = (texts @ images.T).argmax(dim=1)
    codes = {family: code for code, family in enumerate(dict.fromkeys(families))}
    family = torch.tensor([codes[f] for f in families], device=top.device)
    missed = top != torch.arange(len(top), device=top.device)
    twin = missed & (family[top] == family)
    misses = int(missed.sum())
    return {"misses": misses, "twin_misses": int(twin.sum()),
            "twin_share": int(twin.sum()) / misses if misses else float("nan")}


def exercise2(num_families: int = 250, family_size: int = 4, dim: int = 64, noise: float = 0.3, seed: int = 0) -> dict:
    """Chance levels of R@1, predicted and simulated.

    * A model that ranks at random: the own image is first with probability 1/N, so R@1 = 100/N % (0.1 % on
      the 1000 test pairs of the default synthetic benchmark). Simulated with random unit vectors.
    * A model that finds the family but is blind to the detail that separates its members: it ranks the
      ``family_size`` family images first, in random order, so R@1 = 100/family_size % (25 % for families of
      four) and R@K = 100 % from K = family_size. Simulated with :func:`family_blind_features`; every top-1
      error of this model is a twin's image (``twin_share`` = 1).

    A trained model above 25 % T→I R@1 on the synthetic benchmark therefore reads at least some of the
    details; how far above is what the boost is for.

    Answer (prediction): random ranking puts the own image first with probability 1/N, so R@1 = 100/N %:
    0.1 % for the N = 1000 test pairs of the default benchmark (250 families of four), and R@K = 100·K/N %.
    The family-blind model scores the family's images above every other image, and its own image is equally
    likely to be any of the family_size places at the top, so R@1 = 100/family_size % = 25 % and R@4 = 100 %.
    ``random_r1`` and ``family_blind_r1`` are one simulation each, so they scatter around these values
    (binomial noise, √(p(1−p)/N)).

    Answer (twin share of the trained models' misses): the two chance models bracket it. The random model's
    wrong top-1 image is a twin's image with probability (family_size − 1)/(N − 1) = 3/999 ≈ 0.3 %; the
    family-blind model's is always a twin's (``family_blind_twin_share`` = 1). For each trained model, read
    ``twin_share_of_misses(*features[objective], families)``. A ``twin_share`` near 1 means that the model has
    learnt to find the family and that nearly all of its remaining errors are twin confusions. These are the
    near-duplicate errors the paper's Fig. 3 and Fig. A10 show, where the baseline's top-1 is the near-twin's
    own image, and they are what L_HN's margin γḠ targets. If HN-CLIP works as intended, it has fewer
    ``twin_misses`` than InfoNCE. Its share need not fall, though, because it may fix twin errors and stranger
    errors alike; compare the counts, not only the shares.
    """
    n = num_families * family_size
    generator = torch.Generator().manual_seed(seed)
    random_images = F.normalize(torch.randn(n, dim, generator=generator), dim=1)
    random_texts = F.normalize(torch.randn(n, dim, generator=generator), dim=1)
    images, texts, families = family_blind_features(num_families, family_size, dim, noise, seed)
    family_recall = recall_by_hand(images, texts, (1, family_size))
    return {
        "num_pairs": n,
        "random_r1": recall_by_hand(random_images, random_texts, (1,))["t2i"][1],
        "random_expected": 100.0 / n,
        "family_blind_r1": family_recall["t2i"][1],
        "family_blind_expected": 100.0 / family_size,
        "family_blind_r_at_family_size": family_recall["t2i"][family_size],
        "family_blind_twin_share": twin_share_of_misses(images, texts, families)["twin_share"],
    }


def exercise3(features: dict[str, tuple[torch.Tensor, torch.Tensor]], baseline: str, method: str) -> dict:
    """What R@1 counts of the rank changes: the caption→image rank of every query under both models.

    ``improved`` / ``worsened`` / ``unchanged`` count rank moves of any size (as section 4 prints);
    ``entered_top1`` counts queries ranked first by ``method`` but not by ``baseline``, ``left_top1`` the
    reverse. R@1 sees only these two: ``r1_change`` = 100·(entered − left)/N is the T→I R@1 difference of the
    two models. ``invisible_to_r1`` counts improved queries that did not reach rank 1 (a move from 52nd to
    2nd is a large gain that R@1 does not count); ``largest_gain`` is (query, rank before, rank after) of the
    largest improvement.

    Answer: R@1 = 100·#{rank = 1}/N. A query that is first under both models, or under neither, adds the same
    to both R@1 values, so the difference is 100·(entered − left)/N, which is ``r1_change`` and the difference
    of the two models' ``recall_at_k`` T→I R@1. R@1 does not see the ``invisible_to_r1`` improved queries at
    all: those whose rank got better but is still not 1. It does not see worsened queries that were not first
    to begin with either. The paper's Fig. 3 query, moved from 52nd to 1st, counts; the same move to 2nd would
    not. So compare ``invisible_to_r1`` with ``improved``: if most improvements are invisible, the method moves
    many ground truths up without getting them to the top, which R@5/R@10 or the rank counts of section 4
    show and R@1 hides.
    """
    before, _ = ranks_by_hand(*features[baseline])
    after, _ = ranks_by_hand(*features[method])
    delta = before - after  # > 0: the method ranks the ground truth higher
    entered = int(((before > 1) & (after == 1)).sum())
    left = int(((before == 1) & (after > 1)).sum())
    best = int(torch.argmax(delta))
    return {
        "improved": int((delta > 0).sum()),
        "worsened": int((delta < 0).sum()),
        "unchanged": int((delta == 0).sum()),
        "entered_top1": entered,
        "left_top1": left,
        "r1_change": 100.0 * (entered - left) / len(before),
        "invisible_to_r1": int(((delta > 0) & (after > 1)).sum()),
        "largest_gain": (best, int(before[best]), int(after[best])),
    }


if __name__ == "__main__":
    two = exercise2()
    print(f"Exercise 2 ({two['num_pairs']} pairs): random ranking R@1 {two['random_r1']:.2f}% "
          f"(expected {two['random_expected']:.2f}%); family-blind model R@1 {two['family_blind_r1']:.1f}% "
          f"(expected {two['family_blind_expected']:.0f}%), R@4 {two['family_blind_r_at_family_size']:.0f}%, "
          f"twin share of its misses {two['family_blind_twin_share']:.2f}")
    print("Exercises 1 and 3 take the chapter's features: run them in the chapter.")
