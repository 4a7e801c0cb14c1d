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
    """Recall@K by hand, beside the package's :func:`hnclip_core.evaluate.recall_at_k` on the same features."""
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
