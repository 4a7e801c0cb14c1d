"""Retrieval evaluation, as in the paper's shared protocol (arXiv 2608.18521 App. D.3): encode the whole
test split, L2-normalise, score every caption against every image by cosine, report Recall@K in both
directions for 1:1 image–caption pairs.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
import torch.nn.functional as F
from tqdm.auto import tqdm

from .features import encode_images, encode_texts

__all__ = [
    "DEFAULT_KS", "encode_dataset", "mean_recall", "rank_changes", "ranks_of_ground_truth", "recall_at_k",
    "retrieval_examples", "top_k_images", "caption_geometry",
]

#: The ranks the paper reports (Tables 1–3 use 1/5/10, the appendix tables add 25/50).
DEFAULT_KS = (1, 5, 10, 25, 50)


@torch.no_grad()
def encode_dataset(
    model,
    dataset,
    batch_size: int = 64,
    device: str | torch.device = "cpu",
    num_workers: int = 0,
    progress: bool = True,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Encode every (image, token ids) item of ``dataset`` with an open_clip ``CLIP``.

    Returns ``(image_features, text_features)`` on the CPU, float32 and L2-normalised, in dataset order.
    The model is put in eval mode for the pass and restored to its previous mode afterwards. Items may
    carry extra fields after (image, token ids); they are ignored.
    """
    loader = torch.utils.data.DataLoader(dataset, batch_size=batch_size, shuffle=False, num_workers=num_workers)
    was_training = model.training
    model.eval()
    image_chunks, text_chunks = [], []
    try:
        for images, tokens, *_ in tqdm(loader, desc="encode", disable=not progress, leave=False):
            image_chunks.append(encode_images(model, images.to(device))[0].float().cpu())
            text_chunks.append(encode_texts(model, tokens.to(device))[0].float().cpu())
    finally:
        model.train(was_training)
    return F.normalize(torch.cat(image_chunks), dim=-1), F.normalize(torch.cat(text_chunks), dim=-1)


@torch.no_grad()
def ranks_of_ground_truth(
    image_features: torch.Tensor, text_features: torch.Tensor, block_size: int = 1024
) -> tuple[torch.Tensor, torch.Tensor]:
    """1-based rank of the ground truth for every query: ``(text→image ranks, image→text ranks)``.

    Scores are cosine similarities (the features are normalised here). A candidate that scores *equal*
    to the ground truth is ranked ahead of it, so ties never help a query (a pessimistic, order-free
    rule; with continuous embeddings ties only arise for duplicate captions or images). One matrix
    product, computed in row blocks so memory stays at ``block_size × N``; no Python loop over queries.
    """
    if image_features.shape != text_features.shape:
        raise ValueError(
            f"1:1 retrieval needs as many captions as images, got {tuple(text_features.shape)} "
            f"text features and {tuple(image_features.shape)} image features"
        )
    images = F.normalize(image_features.float(), dim=-1)
    texts = F.normalize(text_features.float(), dim=-1)
    positives = (images * texts).sum(dim=-1)  # cos(t_i, v_i)
    n = texts.shape[0]
    text_to_image = torch.ones(n, dtype=torch.long)
    image_to_text = torch.ones(n, dtype=torch.long)
    for start in range(0, n, block_size):
        scores = texts[start : start + block_size] @ images.t()  # rows: captions, columns: images
        rows = torch.arange(scores.shape[0])
        # The ground-truth pairs are excluded from the counts (their matrix entries may differ from
        # `positives` in the last bit), so rank = 1 + how many *other* candidates score at least as high.
        scores[rows, start + rows] = float("-inf")
        # text→image: images beating caption i's own image; image→text: captions beating caption j for image j.
        # (One boolean buffer reused for both comparisons; int32 partial sums are about twice as fast.)
        beats = torch.ge(scores, positives[start + rows, None])
        text_to_image[start : start + scores.shape[0]] += beats.sum(dim=1, dtype=torch.int32)
        torch.ge(scores, positives[None, :], out=beats)
        image_to_text += beats.sum(dim=0, dtype=torch.int32)
    return text_to_image, image_to_text


def recall_at_k(
    image_features: torch.Tensor, text_features: torch.Tensor, ks: Sequence[int] = DEFAULT_KS
) -> dict[str, dict[int, float]]:
    """Recall@K in percent for 1:1 pairs: ``{"t2i": {1: ..., 5: ...}, "i2t": {...}}``.

    ``t2i``: caption *i* retrieves images, a hit when image *i* is within the top K; ``i2t`` the converse.
    Ties are ranked against the query (see :func:`ranks_of_ground_truth`).
    """
    text_to_image, image_to_text = ranks_of_ground_truth(image_features, text_features)
    return {
        direction: {int(k): 100.0 * (ranks <= k).double().mean().item() for k in ks}
        for direction, ranks in (("t2i", text_to_image), ("i2t", image_to_text))
    }


def mean_recall(recalls: dict[str, dict[int, float]], k: int = 1) -> float:
    """Average of the two directions' Recall@k, the "average R@1" of the paper's Fig. 5."""
    return (recalls["t2i"][k] + recalls["i2t"][k]) / 2


@torch.no_grad()
def top_k_images(
    image_features: torch.Tensor, text_features: torch.Tensor, queries: Sequence[int], k: int = 5
) -> torch.Tensor:
    """Indices of the ``k`` best-scoring images for each query caption in ``queries``: ``[len(queries), k]``.

    The qualitative view of text→image retrieval (the paper's Fig. 3 / A10); best first, ties broken by index.
    """
    images = F.normalize(image_features.float(), dim=-1)
    texts = F.normalize(text_features.float(), dim=-1)[list(queries)]
    scores = texts @ images.t()
    order = torch.sort(scores, dim=1, descending=True, stable=True).indices
    return order[:, :k]


def rank_changes(ranks_before: torch.Tensor, ranks_after: torch.Tensor, best: int = 2, worst: int = 1) -> dict:
    """How the ground truth's rank moved between two models, per query (for an honest qualitative figure).

    Returns counts of queries that improved / worsened / stayed, the ``best`` queries with the largest
    improvement and the ``worst`` with the largest deterioration (ties broken by query index).
    """
    delta = ranks_before.long() - ranks_after.long()  # > 0: the second model ranks the ground truth higher
    order = torch.argsort(-delta, stable=True)
    return {
        "improved": int((delta > 0).sum()),
        "worsened": int((delta < 0).sum()),
        "unchanged": int((delta == 0).sum()),
        "best": [int(q) for q in order[:best] if delta[q] > 0],
        "worst": [int(q) for q in order.flip(0)[:worst] if delta[q] < 0],
    }


def retrieval_examples(
    features: dict[str, tuple[torch.Tensor, torch.Tensor]], baseline: str, method: str,
    best: int = 2, worst: int = 1, k: int = 5,
) -> dict:
    """Text→image examples comparing two models (Fig. 3 / A10), chosen by rule, not by hand.

    ``features`` maps a model label to its ``(image_features, text_features)`` of the same test set. The
    queries are the ``best`` with the largest rank gain of ``method`` over ``baseline`` and the ``worst``
    with the largest loss, so the figure shows both sides. Returns ``queries``, ``titles``, ``changes``
    (see :func:`rank_changes`), and per model ``ranks`` and ``top`` (top-``k`` gallery indices).
    """
    ranks = {label: ranks_of_ground_truth(*pair)[0] for label, pair in features.items()}
    changes = rank_changes(ranks[baseline], ranks[method], best, worst)
    queries = changes["best"] + changes["worst"]
    titles = [f"{method} gains most" for _ in changes["best"]] + [f"{method} loses most" for _ in changes["worst"]]
    return {
        "queries": queries,
        "titles": titles,
        "changes": changes,
        "ranks": {label: [int(r[q]) for q in queries] for label, r in ranks.items()},
        "top": {label: top_k_images(*pair, queries, k).tolist() for label, pair in features.items()},
    }


@torch.no_grad()
def caption_geometry(text_features: torch.Tensor, block_size: int = 1024) -> dict[str, float]:
    """Mean pairwise and mean hardest-companion cosine of L2-normalised caption features ``[N, D]`` (§2.1:
    0.84–0.88 and 0.92–0.94 for Long-CLIP-L on the test captions). The mean pairwise is the mean of the Ḡ
    that a recomputed boost applies, so its decay over epochs is the implicit annealing of App. B.2."""
    n = text_features.shape[0]
    pair_sum, hardest = torch.zeros((), dtype=torch.float64), []
    for start in range(0, n, block_size):
        block = text_features[start : start + block_size] @ text_features.t()
        rows = torch.arange(block.shape[0], device=block.device)
        block[rows, rows + start] = float("-inf")
        hardest.append(block.max(dim=1).values.double().cpu())
        pair_sum += block[block > float("-inf")].sum(dtype=torch.float64).cpu()
    return {"mean_pairwise": float(pair_sum / (n * (n - 1))), "mean_hardest": float(torch.cat(hardest).mean())}
