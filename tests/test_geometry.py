"""Caption geometry of arXiv 2608.18521 (§2.1, Fig. 1, App. A.2–A.4) on hand-built features with known
cosines, block-wise computation against dense references, and caption encoding with a tiny open_clip CLIP:
the package's whole-split statistics and chapter 1's own helpers (one batch's Ḡ, near-twin pairs)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import open_clip
import pytest
import torch
import torch.nn.functional as F

from hnclip_core.longclip import ClipArchitecture, build_clip
from hnclip_core.replication.geometry import caption_similarity_stats, encode_captions, in_batch_hardness

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))

from chapter01_helpers import (  # noqa: E402
    batch_caption_matrix,
    content_words,
    near_duplicate_pairs,
    off_diagonal_mean,
)


def vectors_with_cosines(gram: list[list[float]]) -> torch.Tensor:
    """Unit rows whose pairwise cosines are exactly the given (positive-definite) Gram matrix."""
    return torch.linalg.cholesky(torch.tensor(gram, dtype=torch.float64)).float()


#: cos(0,1) = 0.95, cos(0,2) = 0.85, cos(1,2) = 0.70: hardest companions 0.95, 0.95, 0.85.
THREE = [[1.0, 0.95, 0.85], [0.95, 1.0, 0.70], [0.85, 0.70, 1.0]]
#: Most similar pairs: (2,3) 0.95, (0,1) 0.90, (1,2) 0.60, (0,2) 0.50, (1,3) 0.40, (0,3) 0.30.
FOUR = [[1.0, 0.9, 0.5, 0.3], [0.9, 1.0, 0.6, 0.4], [0.5, 0.6, 1.0, 0.95], [0.3, 0.4, 0.95, 1.0]]


def random_unit_rows(n: int, dim: int, seed: int = 0) -> torch.Tensor:
    return F.normalize(torch.randn(n, dim, generator=torch.Generator().manual_seed(seed)), dim=-1)


# ---------------------------------------------------------------------------------------------------------
# caption_similarity_stats
# ---------------------------------------------------------------------------------------------------------


def test_three_captions_with_known_cosines():
    geometry = caption_similarity_stats(vectors_with_cosines(THREE))
    assert geometry.num_captions == 3
    assert geometry.mean_pairwise == pytest.approx((0.95 + 0.85 + 0.70) / 3, abs=1e-6)
    assert torch.allclose(geometry.hardest_negative, torch.tensor([0.95, 0.95, 0.85]), atol=1e-6)
    assert geometry.hardest_negative_index.tolist() == [1, 0, 0]
    assert geometry.mean_hardest == pytest.approx((0.95 + 0.95 + 0.85) / 3, abs=1e-6)
    assert torch.allclose(geometry.pairwise_similarities, torch.tensor([0.95, 0.85, 0.70]), atol=1e-6)
    assert not geometry.pairwise_is_sample
    assert geometry.fraction_at_least == pytest.approx({0.8: 2 / 3, 0.9: 1 / 3})
    assert geometry.bucket_fractions == pytest.approx({"<0.8": 1 / 3, "[0.8, 0.9)": 1 / 3, ">=0.9": 1 / 3})


def test_as_dict_is_plain_json():
    summary = caption_similarity_stats(vectors_with_cosines(THREE)).as_dict()
    assert json.loads(json.dumps(summary)) == summary
    assert type(summary["mean_pairwise"]) is float
    assert summary["mean_hardest"] == pytest.approx(0.9166667, abs=1e-6)
    assert summary["fraction_at_least"] == pytest.approx({"0.8": 2 / 3, "0.9": 1 / 3})
    assert summary["num_pairwise_values"] == 3 and summary["pairwise_is_sample"] is False


def test_a_cosine_equal_to_a_threshold_counts_as_at_or_above():
    # cosines: (0,1) = 0.8 exactly, (0,2) = 0.6, (1,2) = 0.96
    features = torch.tensor([[1.0, 0.0], [0.8, 0.6], [0.6, 0.8]])
    geometry = caption_similarity_stats(features)
    assert geometry.fraction_at_least == pytest.approx({0.8: 2 / 3, 0.9: 1 / 3})
    assert geometry.bucket_fractions["<0.8"] == pytest.approx(1 / 3)


def test_custom_buckets_partition_all_pairs():
    geometry = caption_similarity_stats(vectors_with_cosines(FOUR), buckets=(0.5, 0.7, 0.9))
    assert list(geometry.bucket_fractions) == ["<0.5", "[0.5, 0.7)", "[0.7, 0.9)", ">=0.9"]
    # pairs 0.3, 0.4 | 0.5, 0.6 | — | 0.9, 0.95
    assert geometry.bucket_fractions == pytest.approx(
        {"<0.5": 2 / 6, "[0.5, 0.7)": 2 / 6, "[0.7, 0.9)": 0.0, ">=0.9": 2 / 6}, abs=1e-9
    )


def test_block_computation_equals_dense_reference():
    features = random_unit_rows(50, 6)
    thresholds = (0.0, 0.5)
    blocked = caption_similarity_stats(features, buckets=thresholds, block_size=7)  # 8 blocks, the last partial

    dense = features @ features.t()
    upper = dense[torch.triu_indices(50, 50, offset=1).unbind()]
    off_diagonal = dense[~torch.eye(50, dtype=torch.bool)]
    hardest = dense.fill_diagonal_(float("-inf")).max(dim=1)

    assert blocked.mean_pairwise == pytest.approx(float(off_diagonal.double().mean()), abs=1e-6)
    assert torch.allclose(blocked.pairwise_similarities, upper, atol=1e-6)
    assert torch.allclose(blocked.hardest_negative, hardest.values, atol=1e-6)
    assert torch.equal(blocked.hardest_negative_index, hardest.indices)
    for t in thresholds:
        assert blocked.fraction_at_least[t] == pytest.approx(float((upper >= t).double().mean()))
    assert sum(blocked.bucket_fractions.values()) == pytest.approx(1.0)
    single_block = caption_similarity_stats(features, buckets=thresholds, block_size=1024)
    assert single_block.mean_pairwise == pytest.approx(blocked.mean_pairwise, abs=1e-9)
    assert single_block.fraction_at_least == blocked.fraction_at_least


def test_pairwise_values_are_a_fixed_size_deterministic_sample_when_there_are_too_many():
    features = random_unit_rows(50, 6)
    exact = caption_similarity_stats(features)
    sampled = caption_similarity_stats(features, max_pairwise_values=100, seed=3)
    assert sampled.pairwise_is_sample and sampled.pairwise_similarities.shape == (100,)
    # every sampled value is one of the 1225 true pair cosines
    distance = (sampled.pairwise_similarities[:, None] - exact.pairwise_similarities[None, :]).abs()
    assert distance.min(dim=1).values.max() < 1e-6
    again = caption_similarity_stats(features, max_pairwise_values=100, seed=3)
    other = caption_similarity_stats(features, max_pairwise_values=100, seed=4)
    assert torch.equal(sampled.pairwise_similarities, again.pairwise_similarities)
    assert not torch.equal(sampled.pairwise_similarities, other.pairwise_similarities)
    # the summary statistics never depend on the sample
    assert sampled.mean_pairwise == exact.mean_pairwise
    assert sampled.fraction_at_least == exact.fraction_at_least


def test_invalid_inputs_are_rejected():
    with pytest.raises(ValueError, match="at least 2"):
        caption_similarity_stats(torch.tensor([[1.0, 0.0]]))
    with pytest.raises(ValueError, match="increasing"):
        caption_similarity_stats(vectors_with_cosines(THREE), buckets=(0.9, 0.8))


# ---------------------------------------------------------------------------------------------------------
# batch_caption_matrix and in_batch_hardness
# ---------------------------------------------------------------------------------------------------------


def test_batch_matrix_is_g_bar_of_a_seeded_random_batch():
    features = random_unit_rows(20, 8)
    indices, matrix = batch_caption_matrix(features, batch_size=8, seed=5)
    assert indices.shape == (8,) and len(set(indices.tolist())) == 8
    assert torch.equal(matrix.diagonal(), torch.zeros(8))
    batch = features[indices]
    expected = (batch @ batch.t()).fill_diagonal_(0.0)
    assert torch.allclose(matrix, expected, atol=1e-6)

    same_indices, same_matrix = batch_caption_matrix(features, batch_size=8, seed=5)
    other_indices, _ = batch_caption_matrix(features, batch_size=8, seed=6)
    assert torch.equal(indices, same_indices) and torch.equal(matrix, same_matrix)
    assert not torch.equal(indices, other_indices)
    with pytest.raises(ValueError, match="exceeds"):
        batch_caption_matrix(features, batch_size=21)


def test_off_diagonal_mean_ignores_the_diagonal():
    _, matrix = batch_caption_matrix(vectors_with_cosines(THREE), batch_size=3)
    assert off_diagonal_mean(matrix) == pytest.approx((0.95 + 0.85 + 0.70) / 3, abs=1e-6)


def test_in_batch_hardness_with_the_whole_set_as_one_batch():
    hardness = in_batch_hardness(vectors_with_cosines(THREE), batch_size=3)
    assert (hardness.num_batches, hardness.num_negatives) == (1, 6)
    assert hardness.bucket_fractions == pytest.approx({"<0.8": 1 / 3, "[0.8, 0.9)": 1 / 3, ">=0.9": 1 / 3})
    summary = json.loads(json.dumps(hardness.as_dict()))
    assert summary["fraction_at_least"] == pytest.approx({"0.8": 2 / 3, "0.9": 1 / 3})


def test_in_batch_negatives_are_counted_per_batch_like_a_drop_last_loader():
    # FOUR in batches of two: each batch holds a single pair, so the composition depends on which pairs
    # the shuffled loader puts together — unlike the all-pairs fractions.
    features = vectors_with_cosines(FOUR)
    cosines = torch.tensor(FOUR)
    hardness = in_batch_hardness(features, batch_size=2, num_batches=5, seed=1)
    assert (hardness.num_batches, hardness.num_negatives) == (5, 10)

    generator = torch.Generator().manual_seed(1)
    orders = [torch.randperm(4, generator=generator) for _ in range(3)]  # two batches per epoch
    pairs = [order[start : start + 2].tolist() for order in orders for start in (0, 2)][:5]
    at_least_08 = sum(float(cosines[a, b]) >= 0.8 for a, b in pairs) / 5
    assert hardness.fraction_at_least[0.8] == pytest.approx(at_least_08)
    assert hardness.bucket_fractions["<0.8"] == pytest.approx(1 - at_least_08)

    # batches of three out of four captions: the leftover caption is dropped and every batch is a new shuffle
    generator = torch.Generator().manual_seed(2)
    batches = [torch.randperm(4, generator=generator)[:3] for _ in range(2)]
    negatives = torch.cat([cosines[b][:, b][~torch.eye(3, dtype=torch.bool)] for b in batches])
    of_three = in_batch_hardness(features, batch_size=3, num_batches=2, seed=2)
    assert of_three.num_negatives == 12
    assert of_three.fraction_at_least[0.8] == pytest.approx(float((negatives >= 0.8).double().mean()))

    default = in_batch_hardness(random_unit_rows(50, 6), batch_size=8)
    assert (default.num_batches, default.num_negatives) == (6, 6 * 8 * 7)  # one epoch, last 2 captions dropped


# ---------------------------------------------------------------------------------------------------------
# near_duplicate_pairs and content words
# ---------------------------------------------------------------------------------------------------------

CAPTIONS = [
    "A red sports car is parked on a wet street.",
    "A silver sports car, parked beside the street at night.",
    "Two white horses graze in a green field.",
    "A white horse stands in a green field near a fence.",
]


def test_content_words_lowercase_strip_punctuation_and_stopwords():
    assert content_words("The car's red door; the RED car is parked.") == ["car", "red", "door", "parked"]
    assert content_words("Two dogs and 3 cats.") == ["two", "dogs", "3", "cats"]


def test_top_pairs_by_similarity_each_unordered_pair_once():
    pairs = near_duplicate_pairs(vectors_with_cosines(FOUR), CAPTIONS, top=3, block_size=1)
    assert [(p.i, p.j) for p in pairs] == [(2, 3), (0, 1), (1, 2)]
    assert [p.similarity for p in pairs] == pytest.approx([0.95, 0.90, 0.60], abs=1e-6)
    first, second = pairs[0], pairs[1]
    assert first.shared_words == ("white", "green", "field")
    assert first.only_in_i == ("two", "horses", "graze")
    assert first.only_in_j == ("horse", "stands", "near", "fence")
    assert second.shared_words == ("sports", "car", "parked", "street")
    assert second.only_in_i == ("red", "wet")
    assert second.only_in_j == ("silver", "beside", "night")

    everything = near_duplicate_pairs(vectors_with_cosines(FOUR), CAPTIONS, top=100)
    assert [(p.i, p.j) for p in everything] == [(2, 3), (0, 1), (1, 2), (0, 2), (1, 3), (0, 3)]


def test_quantile_picks_queries_near_that_quantile_of_hardest_companions():
    features, captions = vectors_with_cosines(THREE), CAPTIONS[:3]
    # hardest companions: caption 0 → 1 (0.95), caption 1 → 0 (0.95), caption 2 → 0 (0.85)
    lowest = near_duplicate_pairs(features, captions, top=1, quantile=0.0)
    assert [(p.i, p.j) for p in lowest] == [(2, 0)]
    assert lowest[0].similarity == pytest.approx(0.85, abs=1e-6)
    # queries 0 and 1 are each other's hardest companion: their pair is listed once
    highest = near_duplicate_pairs(features, captions, top=2, quantile=1.0)
    assert [(p.i, p.j) for p in highest] == [(0, 1), (2, 0)]


def test_near_duplicates_check_their_arguments():
    with pytest.raises(ValueError, match="captions for"):
        near_duplicate_pairs(vectors_with_cosines(FOUR), CAPTIONS[:3])
    with pytest.raises(ValueError, match="quantile"):
        near_duplicate_pairs(vectors_with_cosines(FOUR), CAPTIONS, quantile=1.5)


# ---------------------------------------------------------------------------------------------------------
# encode_captions
# ---------------------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def tiny_clip():
    torch.manual_seed(0)
    model = build_clip(ClipArchitecture(32, 32, 16, 64, 1, 4.0, 77, 49408, 64, 1, 4.0))
    return model, open_clip.SimpleTokenizer(context_length=77)


def test_encode_captions_returns_normalised_rows_in_order(tiny_clip, capsys):
    model, tokenizer = tiny_clip
    model.train()
    features = encode_captions(model, tokenizer, CAPTIONS + ["A dog."], batch_size=2, progress=False)
    assert features.shape == (5, 32) and features.dtype == torch.float32
    assert torch.allclose(features.norm(dim=-1), torch.ones(5), atol=1e-5)
    assert not features.requires_grad
    assert model.training  # the previous mode is restored

    model.eval()
    with torch.no_grad():
        one_by_one = torch.cat([F.normalize(model.encode_text(tokenizer([c])), dim=-1) for c in CAPTIONS])
    assert torch.allclose(features[:4], one_by_one, atol=1e-5)
    assert not torch.allclose(features[0], features[1], atol=1e-3)
    assert capsys.readouterr().err == ""

    encode_captions(model, tokenizer, CAPTIONS, progress=False)
    assert not model.training
