"""Caption geometry: how near-duplicate the captions of a dense-caption benchmark are (arXiv 2608.18521
§2.1, Fig. 1, App. A.2–A.4).

HN-CLIP's motivation is a measurement made with the text encoder alone: encode every test caption, and
look at the caption–caption cosine similarities. With the pre-trained Long-CLIP-L text encoder the paper
reports (§2.1, Table A1, Fig. A6):

=========  =============  ======================
benchmark  mean pairwise  mean hardest companion
=========  =============  ======================
DOCCI      0.84           0.93
DCI        0.85           0.92
Long-DCI   0.85           0.93
Urban-1K   0.88           0.94
=========  =============  ======================

and 86–99 % of all in-batch negatives have caption similarity Ḡ ≥ 0.8 (Fig. A6C; the paper trains with an
effective batch of 128).

These are the statistics that chapter 1 and the calibration both measure. What only chapter 1 shows — one
batch's Ḡ (Fig. A5), the near-twin pairs (Fig. A1–A4) and the figures — is in ``notebooks/chapter01_helpers.py``.

Everything here works on a ``[N, D]`` tensor of L2-normalised caption embeddings, so any text encoder
can be measured; :func:`encode_captions` produces that tensor for an open_clip ``CLIP`` (e.g. one
returned by :func:`hnclip_core.longclip.load_longclip`). Cosine similarity is the plain dot product of
those rows, as in Ḡ of Eq. 2 (:func:`hnclip_core.losses.caption_margin`); rows are not re-normalised.

Memory: the full ``N × N`` matrix is never held. Statistics are accumulated over blocks of
``block_size`` rows (``block_size × N`` floats at a time; 1024 × 10 000 floats is 40 MB), and the
pairwise values returned for histograms are either every unordered pair (when there are at most
``max_pairwise_values`` of them) or a fixed-size uniform random sample of pairs.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from itertools import pairwise

import torch
from tqdm.auto import tqdm

from ..evaluate import caption_geometry
from ..train import shuffled_batches

__all__ = ["DEFAULT_BUCKETS", "CaptionGeometry", "InBatchHardness", "encode_captions", "caption_similarity_stats",
           "in_batch_hardness"]

#: Hardness thresholds of Fig. A6C: negatives are split into Ḡ < 0.8, 0.8 ≤ Ḡ < 0.9 and Ḡ ≥ 0.9.
DEFAULT_BUCKETS = (0.8, 0.9)


# --------------------------------------------------------------------------------------------------------
# Encoding
# --------------------------------------------------------------------------------------------------------


@torch.no_grad()
def encode_captions(
    model,
    tokenizer,
    captions: Sequence[str],
    batch_size: int = 64,
    device: str | torch.device = "cpu",
    progress: bool = True,
) -> torch.Tensor:
    """Encode captions with ``model.encode_text``: an ``[N, D]`` float32 CPU tensor, L2-normalised, in order.

    This is the measurement of §2.1 / Fig. 1 (the paper uses the released Long-CLIP-L text encoder on the
    test captions). ``model`` is an open_clip ``CLIP`` (anything with ``encode_text`` and ``train``/
    ``eval``) already placed on ``device``; ``tokenizer`` maps a list of strings to token ids (open_clip's
    ``SimpleTokenizer``, truncating to its context length). No gradient is recorded; the model is put in
    eval mode for the pass and returned to its previous mode afterwards, also if encoding fails.
    """
    if len(captions) == 0:
        raise ValueError("encode_captions needs at least one caption")
    was_training = model.training
    model.eval()
    chunks = []
    try:
        starts = range(0, len(captions), batch_size)
        for start in tqdm(starts, desc="encode captions", disable=not progress, leave=False):
            tokens = tokenizer(list(captions[start : start + batch_size])).to(device)
            chunks.append(model.encode_text(tokens).float().cpu())
    finally:
        model.train(was_training)
    return torch.nn.functional.normalize(torch.cat(chunks), dim=-1)


# --------------------------------------------------------------------------------------------------------
# Shared helpers
# --------------------------------------------------------------------------------------------------------


def _check_features(text_features: torch.Tensor, minimum: int = 2) -> torch.Tensor:
    if text_features.dim() != 2:
        raise ValueError(f"text_features must be [N, D], got shape {tuple(text_features.shape)}")
    if text_features.shape[0] < minimum:
        raise ValueError(f"need at least {minimum} captions, got {text_features.shape[0]}")
    return text_features.detach().float()


def _check_thresholds(buckets: Sequence[float]) -> tuple[float, ...]:
    thresholds = tuple(float(t) for t in buckets)
    if not thresholds or any(a >= b for a, b in pairwise(thresholds)):
        raise ValueError(f"bucket thresholds must be non-empty and strictly increasing, got {buckets}")
    return thresholds


def _similarity_blocks(features: torch.Tensor, block_size: int) -> Iterator[tuple[torch.Tensor, torch.Tensor]]:
    """Yield ``(row_indices, block)``: rows ``row_indices`` of the cosine matrix, ``[len(rows), N]``."""
    for start in range(0, features.shape[0], block_size):
        rows = torch.arange(start, min(start + block_size, features.shape[0]), device=features.device)
        yield rows, features[rows] @ features.t()


def _columns_after_row(rows: torch.Tensor, num_columns: int) -> torch.Tensor:
    """Mask of the block's entries (r, c) with c > r: each unordered pair i < j exactly once."""
    columns = torch.arange(num_columns, device=rows.device)
    return columns[None, :] > rows[:, None]


def _hide_self_similarity(block: torch.Tensor, rows: torch.Tensor) -> torch.Tensor:
    """The block with each caption's similarity to itself set to −inf (so max() finds the hardest *other*)."""
    block = block.clone()
    block[torch.arange(len(rows), device=block.device), rows] = float("-inf")
    return block


def _bucket_labels(thresholds: tuple[float, ...]) -> list[str]:
    labels = [f"<{thresholds[0]:g}"]
    labels += [f"[{low:g}, {high:g})" for low, high in pairwise(thresholds)]
    labels.append(f">={thresholds[-1]:g}")
    return labels


def _composition(
    count_at_least: Sequence[int], total: int, thresholds: tuple[float, ...]
) -> tuple[dict[float, float], dict[str, float]]:
    """Fractions at or above each threshold, and the composition by bucket (which sums to one)."""
    bucket_counts = [total - count_at_least[0]]
    bucket_counts += [low - high for low, high in pairwise(count_at_least)]
    bucket_counts.append(count_at_least[-1])
    fraction_at_least = {t: count / total for t, count in zip(thresholds, count_at_least, strict=True)}
    labels = _bucket_labels(thresholds)
    bucket_fractions = {label: count / total for label, count in zip(labels, bucket_counts, strict=True)}
    return fraction_at_least, bucket_fractions


def _draw_pairs(n: int, num_samples: int, seed: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``num_samples`` pairs (i, j), i ≠ j, drawn uniformly with replacement (deterministic per seed)."""
    generator = torch.Generator().manual_seed(seed)
    first = torch.randint(0, n, (num_samples,), generator=generator)
    second = torch.randint(0, n - 1, (num_samples,), generator=generator)
    return first, second + (second >= first).long()  # skip i itself: uniform over the other n − 1 captions


def _fill_sampled_pairs(
    values: torch.Tensor, block: torch.Tensor, rows: torch.Tensor, first: torch.Tensor, second: torch.Tensor
) -> None:
    """Copy into ``values`` the cosines of the sampled pairs (first, second) whose row lies in this block."""
    start = int(rows[0])
    in_block = (first >= start) & (first < start + len(rows))
    local_rows, columns = (first[in_block] - start).to(block.device), second[in_block].to(block.device)
    values[in_block] = block[local_rows, columns].cpu()


# --------------------------------------------------------------------------------------------------------
# Whole-split statistics (Fig. 1, Table A1, Fig. A6A–B)
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class CaptionGeometry:
    """Caption–caption similarity statistics of one set of captions (Fig. 1, Table A1, Fig. A6).

    * ``mean_pairwise``: mean cosine over all pairs i ≠ j (Fig. 1a, Fig. A6A);
    * ``hardest_negative`` / ``hardest_negative_index``: per caption, the largest cosine to any *other*
      caption and which caption that is (Fig. 1b); ``mean_hardest`` is its mean (Fig. A6B);
    * ``pairwise_similarities``: cosines of unordered pairs for histograms (Fig. 1a). Every pair i < j in
      row-major order when there are at most ``max_pairwise_values`` of them, else a uniform random sample of
      that many pairs (``pairwise_is_sample`` says which);
    * ``fraction_at_least[t]``: share of all pairs with cosine ≥ t, and ``bucket_fractions`` the composition
      by hardness bucket (``"<0.8"``, ``"[0.8, 0.9)"``, ``">=0.9"`` for the default thresholds).
    """

    num_captions: int
    mean_pairwise: float
    hardest_negative: torch.Tensor
    hardest_negative_index: torch.Tensor
    mean_hardest: float
    pairwise_similarities: torch.Tensor
    pairwise_is_sample: bool
    fraction_at_least: dict[float, float]
    bucket_fractions: dict[str, float]

    def as_dict(self) -> dict:
        """The scalar statistics as plain Python numbers (JSON-ready; tensors are left out)."""
        return {
            "num_captions": self.num_captions,
            "mean_pairwise": float(self.mean_pairwise),
            "mean_hardest": float(self.mean_hardest),
            **_hardness_shares(self.fraction_at_least, self.bucket_fractions),
            "num_pairwise_values": int(self.pairwise_similarities.numel()),
            "pairwise_is_sample": bool(self.pairwise_is_sample),
        }


@torch.no_grad()
def caption_similarity_stats(
    text_features: torch.Tensor,
    buckets: Sequence[float] = DEFAULT_BUCKETS,
    block_size: int = 1024,
    max_pairwise_values: int = 1_000_000,
    seed: int = 0,
) -> CaptionGeometry:
    """Mean pairwise and hardest-companion caption similarity of a whole split (§2.1, Fig. 1, Fig. A6A–C).

    The paper's numbers for the pre-trained Long-CLIP-L text encoder on the test captions: mean pairwise
    0.84 / 0.85 / 0.88 and mean hardest companion 0.93 / 0.92 / 0.94 on DOCCI / DCI / Urban-1K.

    ``text_features`` are L2-normalised ``[N, D]`` rows (N ≥ 2). The two means are those of the core's
    :func:`hnclip_core.evaluate.caption_geometry` (the statistics training records every epoch); this adds what
    only the figures need. The cosine matrix is processed ``block_size`` rows at a time; the shares at or above
    a threshold use each unordered pair once, which by symmetry equals the share over all ordered pairs i ≠ j.
    ``pairwise_similarities`` keeps every pair when
    N(N−1)/2 ≤ ``max_pairwise_values``, otherwise ``max_pairwise_values`` pairs drawn uniformly (with
    replacement, ``seed``) so that histograms of 10k-caption splits stay a few MB. ``buckets`` are the
    hardness thresholds of Fig. A6C.
    """
    features = _check_features(text_features)
    thresholds = _check_thresholds(buckets)
    n = features.shape[0]
    num_pairs = n * (n - 1) // 2
    keep_every_pair = num_pairs <= max_pairwise_values

    if keep_every_pair:
        kept_pairs = []
    else:  # a fixed-size sample, filled in block by block
        sample_first, sample_second = _draw_pairs(n, max_pairwise_values, seed)
        sampled_pairs = torch.empty(max_pairwise_values)

    count_at_least = [0] * len(thresholds)
    hardest_values, hardest_indices = [], []
    for rows, block in _similarity_blocks(features, block_size):
        pairs = block[_columns_after_row(rows, n)]
        for k, threshold in enumerate(thresholds):
            count_at_least[k] += int((pairs >= threshold).sum())
        if keep_every_pair:
            kept_pairs.append(pairs.cpu())
        else:
            _fill_sampled_pairs(sampled_pairs, block, rows, sample_first, sample_second)
        hardest = _hide_self_similarity(block, rows).max(dim=1)
        hardest_values.append(hardest.values.cpu())
        hardest_indices.append(hardest.indices.cpu())

    pair_values = torch.cat(kept_pairs) if keep_every_pair else sampled_pairs
    means = caption_geometry(features, block_size)
    fraction_at_least, bucket_fractions = _composition(count_at_least, num_pairs, thresholds)
    return CaptionGeometry(
        num_captions=n,
        mean_pairwise=means["mean_pairwise"],
        hardest_negative=torch.cat(hardest_values),
        hardest_negative_index=torch.cat(hardest_indices),
        mean_hardest=means["mean_hardest"],
        pairwise_similarities=pair_values,
        pairwise_is_sample=not keep_every_pair,
        fraction_at_least=fraction_at_least,
        bucket_fractions=bucket_fractions,
    )


# --------------------------------------------------------------------------------------------------------
# In-batch negatives (Fig. A6C)
# --------------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class InBatchHardness:
    """Composition of in-batch negatives by hardness bucket (Fig. A6C).

    ``num_negatives`` counts (query, negative) pairs: B·(B−1) per batch, every caption of a batch being a
    negative of every other one.
    """

    batch_size: int
    num_batches: int
    num_negatives: int
    fraction_at_least: dict[float, float]
    bucket_fractions: dict[str, float]

    def as_dict(self) -> dict:
        return dataclasses.asdict(self) | _hardness_shares(self.fraction_at_least, self.bucket_fractions)


def _hardness_shares(fraction_at_least: dict[float, float], bucket_fractions: dict[str, float]) -> dict:
    """The threshold and bucket shares of a geometry summary, JSON-ready (thresholds as ``"0.9"``)."""
    return {
        "fraction_at_least": {f"{t:g}": float(v) for t, v in fraction_at_least.items()},
        "bucket_fractions": {label: float(v) for label, v in bucket_fractions.items()},
    }


@torch.no_grad()
def in_batch_hardness(
    text_features: torch.Tensor,
    batch_size: int = 128,
    num_batches: int | None = None,
    seed: int = 0,
    buckets: Sequence[float] = DEFAULT_BUCKETS,
) -> InBatchHardness:
    """How hard the negatives a caption actually meets in a batch are (App. A.4, Fig. A6C).

    Random batches of ``batch_size`` captions are drawn like a shuffling training loader with
    ``drop_last`` (``num_batches`` defaults to one epoch, N // batch_size batches; more than that reshuffles);
    in every batch each caption's B − 1 negatives are classified by their caption cosine into the buckets
    ``< 0.8``, ``[0.8, 0.9)``, ``≥ 0.9``. With the pre-trained Long-CLIP-L encoder (effective batch 128) the paper
    finds 86–99 % of in-batch negatives at Ḡ ≥ 0.8 across its four benchmarks; this differs from the all-pairs
    fractions of :func:`caption_similarity_stats` only by sampling, but is the quantity the loss sees.
    """
    features = _check_features(text_features)
    thresholds = _check_thresholds(buckets)
    n = features.shape[0]
    if not 2 <= batch_size <= n:
        raise ValueError(f"batch_size must be between 2 and the number of captions ({n}), got {batch_size}")
    num_batches = n // batch_size if num_batches is None else num_batches
    if num_batches < 1:
        raise ValueError(f"num_batches must be at least 1, got {num_batches}")

    off_diagonal = ~torch.eye(batch_size, dtype=torch.bool, device=features.device)
    count_at_least = [0] * len(thresholds)
    generator = torch.Generator().manual_seed(seed)
    for indices in shuffled_batches(n, batch_size, generator, num_batches):
        batch = features[indices.to(features.device)]
        negatives = (batch @ batch.t())[off_diagonal]
        for k, threshold in enumerate(thresholds):
            count_at_least[k] += int((negatives >= threshold).sum())
    num_negatives = num_batches * batch_size * (batch_size - 1)
    fraction_at_least, bucket_fractions = _composition(count_at_least, num_negatives, thresholds)
    return InBatchHardness(batch_size, num_batches, num_negatives, fraction_at_least, bucket_fractions)

