"""The exercise solutions of chapters 1–4 (notebooks/solutions/chapterNN.py), and chapter 2's constructed batch,
checked against independent computations: the package's geometry, evaluation, losses, training subset, batches
and schedule, chapter 2's saturation thresholds, Eq. 4, and known values."""

import inspect
import json
import math
import re
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from hnclip_core.data.docci import load_docci_pairs
from hnclip_core.evaluate import rank_changes, ranks_of_ground_truth, recall_at_k
from hnclip_core.longclip import load_longclip
from hnclip_core.losses import HNClipLoss, caption_margin
from hnclip_core.replication.geometry import caption_similarity_stats, encode_captions
from hnclip_core.replication.scorecard import calibration_view
from hnclip_core.replication.tidy import read_results
from hnclip_core.toy.synthetic import EDIT_KINDS
from hnclip_core.train import cosine_with_warmup, epoch_batches, training_subset

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))

from chapter02_helpers import TWIN, batch_summary, saturation_thresholds, strong_init_batch, twin_margin  # noqa: E402
from solutions import chapter01, chapter02, chapter03, chapter04, chapter05  # noqa: E402

S_SCALE = 100.0


def clip_loss(v, t, s):
    return HNClipLoss(gamma=0.0)(v, t, s)


def hn_clip_loss(v, t, s, gamma, margin_text_features=None):
    return HNClipLoss(gamma)(v, t, s, margin_text_features=margin_text_features)


@pytest.fixture(scope="module")
def batch():
    return strong_init_batch(seed=0)


def test_the_constructed_batch_is_what_chapter_2_says(batch):
    v, t = batch
    assert v.shape == t.shape == (16, 64)
    torch.testing.assert_close(v.norm(dim=1), torch.ones(16))
    torch.testing.assert_close(t.norm(dim=1), torch.ones(16))
    summary = batch_summary(v, t)
    assert summary["twin_caption_similarity"] == pytest.approx(0.95, abs=1e-5)
    assert twin_margin(v, t) == pytest.approx(0.15, abs=1e-5)
    assert summary["easy_lead_min"] > 0.25  # s·Δ > 25 on every easy negative
    assert summary["caption_similarity_max"] < 0.5
    assert clip_loss(v, t, S_SCALE).item() < 1e-3  # solved for InfoNCE
    assert hn_clip_loss(v, t, S_SCALE, gamma=0.5).item() > 1.0  # not for L_HN
    again = strong_init_batch(seed=0)
    assert torch.equal(again[0], v) and torch.equal(again[1], t)
    assert not torch.equal(strong_init_batch(seed=1)[0], v)


def test_twin_margin_of_the_batch_follows_the_request():
    v, t = strong_init_batch(twin_margin=0.1, twin_caption_similarity=0.9)
    assert twin_margin(v, t) == pytest.approx(0.1, abs=1e-5)
    assert (t[TWIN[0]] @ t[TWIN[1]]).item() == pytest.approx(0.9, abs=1e-5)
    with pytest.raises(ValueError):
        strong_init_batch(twin_margin=0.5, twin_caption_similarity=0.95)  # the detail separates by < √0.05


def test_fixed_margin_is_infonce_at_zero_and_a_constant_boost_otherwise(batch):
    generator = torch.Generator().manual_seed(1)
    random_batch = [F.normalize(torch.randn(16, 32, generator=generator, dtype=torch.float64), dim=1)
                    for _ in range(2)]
    for v, t in (random_batch, [x.double() for x in batch]):
        torch.testing.assert_close(chapter02.fixed_margin_loss(v, t, S_SCALE, 0.0), clip_loss(v, t, S_SCALE))
        # A constant margin is Eq. 2 with an all-ones caption similarity (the diagonal is masked either way):
        # the Ḡ of sixteen identical captions.
        identical = torch.zeros(16, 4, dtype=torch.float64)
        identical[:, 0] = 1.0
        torch.testing.assert_close(chapter02.fixed_margin_loss(v, t, S_SCALE, 0.3),
                                   hn_clip_loss(v, t, S_SCALE, gamma=0.3, margin_text_features=identical))
        torch.testing.assert_close(chapter02.boosted_loss(v, t, S_SCALE, 0.5),
                                   hn_clip_loss(v, t, S_SCALE, gamma=0.5))


def test_exercise1_fixed_margin_reweights_nothing_eq2_reweights_by_caption_similarity(batch):
    answer = chapter02.exercise1(s=S_SCALE, gamma=0.5, seed=0)
    v, t = (x.double() for x in batch)
    G = t @ t.T
    assert answer["m"] == pytest.approx(0.5 * G[TWIN].item(), abs=1e-9)
    assert answer["loss_fixed_m0"] == pytest.approx(clip_loss(v, t, S_SCALE).item(), rel=1e-9)
    easy = answer["easy_negatives"]
    assert easy == list(range(2, 16))
    # Eq. 4: a constant margin leaves every ratio p_ij / p_ik as InfoNCE has it ...
    assert max(abs(x) for x in answer["log_reweighting"]["fixed"]) < 1e-9
    # ... while the boost multiplies it by exp(sγ(Ḡ_01 − Ḡ_0k)).
    expected = (S_SCALE * 0.5 * (G[0, 1] - G[0, easy])).tolist()
    assert answer["log_reweighting"]["Eq. 2"] == pytest.approx(expected, abs=1e-7)
    # Which negatives each pushes on: Eq. 2 only the twin, the fixed margin also unrelated ones.
    assert answer["unresolved"]["Eq. 2"] == [(0, 1), (1, 0)]
    S = v @ t.T
    lead_rows, lead_columns = S.diagonal()[:, None] - S, S.diagonal()[None, :] - S
    below = [(i, j) for i in range(16) for j in range(16)
             if i != j and min(lead_rows[i, j], lead_columns[i, j]) < answer["m"]]
    assert answer["unresolved"]["fixed"] == below
    assert len(below) > 2 and {(0, 1), (1, 0)} <= set(below)
    assert answer["twin_share"]["Eq. 2"] > 0.99
    assert answer["twin_share"]["fixed"] < 0.9 * answer["twin_share"]["Eq. 2"]


def test_exercise2_gamma_is_where_l_hn_crosses_the_solved_level(batch):
    answer = chapter02.exercise2(s=S_SCALE, seed=0, threshold=1e-3)
    v, t = batch
    gamma = answer["gamma"]
    assert 0.0 < gamma < 0.5
    assert hn_clip_loss(v, t, S_SCALE, gamma=gamma - 1e-3).item() < 1e-3
    assert hn_clip_loss(v, t, S_SCALE, gamma=gamma + 1e-3).item() > 1e-3
    # the independent estimate: four cross-entropies of size e^(−s(Δ − γḠ_01)), averaged over 2B
    estimate = (0.15 - math.log(2 / (16 * 1e-3)) / S_SCALE) / 0.95
    assert gamma == pytest.approx(estimate, abs=5e-3)
    assert answer["predicted"] == pytest.approx(estimate, abs=1e-4)


def test_exercise3_fp16_thresholds_follow_from_the_smallest_subnormal():
    answer = chapter02.exercise3(s=S_SCALE, batch_size=16)
    # one query's own loss: the gradient is p ≈ e^(−sΔ), lost below fp16's smallest subnormal ≈ 6e-8
    assert answer["measured_row"] == pytest.approx(math.log(1 / 6e-8) / S_SCALE, abs=0.01)
    assert answer["measured_row"] == pytest.approx(25 * math.log(2) / S_SCALE, abs=2e-3)
    # the batch loss: p / 2B per direction, so ln(2B)/s earlier — as the package's own sweep finds
    assert answer["measured_batch"] == pytest.approx(answer["measured_row"] - math.log(32) / S_SCALE, abs=2e-3)
    package = saturation_thresholds(S_SCALE, 16, torch.float16)["negative_grad_zero_margin"]
    assert answer["measured_batch"] == pytest.approx(package, abs=1e-3)
    assert answer["predicted_row"] == pytest.approx(answer["measured_row"], abs=2e-3)
    assert answer["predicted_batch"] == pytest.approx(answer["measured_batch"], abs=2e-3)


# ------------------------------------------------------------------------------------------------------------
# Chapter 1 (notebooks/solutions/chapter01.py): the caption geometry by hand, twins and strangers, edit kinds
# ------------------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def tiny_test_split(tiny_checkpoint, tiny_benchmark):
    """The tiny synthetic benchmark's 16 test captions, encoded by the tiny random CLIP, with their metadata."""
    model, _, tokenizer = load_longclip(tiny_checkpoint)
    pairs = load_docci_pairs(tiny_benchmark, "test")
    captions = [pair.caption for pair in pairs]
    return {
        "model": model, "tokenizer": tokenizer, "captions": captions,
        "features": encode_captions(model, tokenizer, captions, progress=False),
        "metadata": chapter01.synthetic_metadata(pairs),
    }


def family_features(num_families, family_size, dim=32, spread=0.05, seed=0):
    """Unit vectors in tight families (a shared random direction plus a small offset) and their family ids."""
    generator = torch.Generator().manual_seed(seed)
    centres = torch.randn(num_families, dim, generator=generator).repeat_interleave(family_size, dim=0)
    features = F.normalize(centres + spread * torch.randn(len(centres), dim, generator=generator), dim=1)
    return features, [f"f{i // family_size}" for i in range(len(features))]


def test_synthetic_metadata_follows_the_pairs(tiny_benchmark, tiny_test_split, tmp_path):
    metadata, captions = tiny_test_split["metadata"], tiny_test_split["captions"]
    assert len(metadata) == len(captions) == 16
    assert [row["captions"]["dense"] for row in metadata] == captions  # the benchmark's default caption style
    assert [row["family_id"] for row in metadata] == [f"test_f{i // 4:04d}" for i in range(16)]
    assert [row["changed_detail"] is None for row in metadata] == [i % 4 == 0 for i in range(16)]
    train = chapter01.synthetic_metadata(load_docci_pairs(tiny_benchmark, "train"))
    assert len(train) == 48 and train[0]["example_id"] == "train_00000"
    (tmp_path / "images").mkdir()
    not_synthetic = [type("Pair", (), {"image_path": tmp_path / "images" / "x.png"})()]
    with pytest.raises(ValueError, match="not a synthetic benchmark"):
        chapter01.synthetic_metadata(not_synthetic)


def test_ch1_exercise1_known_values():
    # cosines 0.6 (0, 1), 0 (0, 2) and 0.8 (1, 2)
    features = torch.tensor([[1.0, 0.0], [0.6, 0.8], [0.0, 1.0]])
    answer = chapter01.exercise1(features, threshold=0.8)
    assert answer["mean_pairwise"] == pytest.approx((0.6 + 0.0 + 0.8) / 3, abs=1e-6)
    assert answer["hardest_index"].tolist() == [1, 2, 1]  # never the caption itself
    assert answer["hardest"].tolist() == pytest.approx([0.6, 0.8, 0.8], abs=1e-6)
    assert answer["mean_hardest"] == pytest.approx(2.2 / 3, abs=1e-6)
    assert answer["fraction_at_least"] == pytest.approx(1 / 3)


def test_ch1_exercise1_matches_caption_similarity_stats(tiny_test_split):
    for features in (tiny_test_split["features"], family_features(15, 4, spread=0.5)[0]):
        n = len(features)
        answer = chapter01.exercise1(features)
        stats = caption_similarity_stats(features)
        assert answer["mean_pairwise"] == pytest.approx(stats.mean_pairwise, abs=1e-6)
        assert answer["mean_hardest"] == pytest.approx(stats.mean_hardest, abs=1e-6)
        assert torch.equal(answer["hardest_index"], stats.hardest_negative_index)
        torch.testing.assert_close(answer["hardest"], stats.hardest_negative)
        # the same share; one pair may round to the other side of 0.8 in the last bit of float32
        assert answer["fraction_at_least"] == pytest.approx(stats.fraction_at_least[0.8], abs=1 / (n * (n - 1)))
    assert 0 < chapter01.exercise1(family_features(15, 4, spread=0.5)[0])["fraction_at_least"] < 1


def test_ch1_exercise2_tight_families_stand_out():
    features, families = family_features(10, 4)
    answer = chapter01.exercise2(features, families)
    assert answer["num_with_twins"] == 40
    assert answer["twin_is_hardest"] == 1.0 and answer["twin_beats_every_stranger"] == 1.0
    assert answer["within"] > 0.9 > 0.3 > answer["across"]
    # family ids that ignore the geometry: twins are no more similar than strangers
    shuffled = [families[i] for i in torch.randperm(40, generator=torch.Generator().manual_seed(0)).tolist()]
    unrelated = chapter01.exercise2(features, shuffled)
    assert unrelated["twin_is_hardest"] < 0.5 and abs(unrelated["within"] - unrelated["across"]) < 0.3
    alone = chapter01.exercise2(features, [str(i) for i in range(40)])  # singletons: no twins at all
    assert alone["num_with_twins"] == 0 and math.isnan(alone["within"])


def test_ch1_exercise2_means_by_a_loop(tiny_test_split):
    features = tiny_test_split["features"]
    families = [row["family_id"] for row in tiny_test_split["metadata"]]
    answer = chapter01.exercise2(features, families)
    within, across = [], []
    for i in range(16):
        for j in range(16):
            if i != j:
                (within if families[i] == families[j] else across).append(float(features[i] @ features[j]))
    assert answer["within"] == pytest.approx(sum(within) / len(within), abs=1e-6)
    assert answer["across"] == pytest.approx(sum(across) / len(across), abs=1e-6)
    hardest = caption_similarity_stats(features).hardest_negative_index.tolist()
    twin_is_hardest = sum(families[h] == families[i] for i, h in enumerate(hardest)) / 16
    assert answer["twin_is_hardest"] == pytest.approx(twin_is_hardest)


def test_ch1_exercise3_groups_members_by_edit_and_measures_them_with_the_encoder(tiny_test_split):
    metadata, captions = tiny_test_split["metadata"], tiny_test_split["captions"]
    answer = chapter01.exercise3(tiny_test_split["features"], metadata, captions)
    assert set(answer) <= set(EDIT_KINDS)
    assert sum(kind["count"] for kind in answer.values()) == 12  # 4 families × 3 edited members
    similarities = [kind["mean_similarity"] for kind in answer.values()]
    assert similarities == sorted(similarities, reverse=True)
    assert all(kind["mean_words_changed"] > 0 for kind in answer.values())
    # independently: encode each (base, member) caption pair afresh and average by the recorded kind
    expected: dict[str, list[float]] = {}
    for start in range(0, 16, 4):
        for member in range(start + 1, start + 4):
            pair = encode_captions(tiny_test_split["model"], tiny_test_split["tokenizer"],
                                   [captions[start], captions[member]], progress=False)
            expected.setdefault(metadata[member]["changed_detail"]["kind"], []).append(float(pair[0] @ pair[1]))
    assert {kind: len(values) for kind, values in expected.items()} == {k: v["count"] for k, v in answer.items()}
    for kind, values in expected.items():
        assert answer[kind]["mean_similarity"] == pytest.approx(sum(values) / len(values), abs=1e-5)


# ------------------------------------------------------------------------------------------------------------
# Chapter 3 (notebooks/solutions/chapter03.py): Recall@K by hand, chance levels, what R@1 counts
# ------------------------------------------------------------------------------------------------------------


def paired_features(n, dim, noise, seed):
    """Images and captions that share a random direction per pair, with independent noise: R@K strictly
    between 0 and 100 for a moderate noise."""
    generator = torch.Generator().manual_seed(seed)
    shared = torch.randn(n, dim, generator=generator)
    return (F.normalize(shared + noise * torch.randn(n, dim, generator=generator), dim=1),
            F.normalize(shared + noise * torch.randn(n, dim, generator=generator), dim=1))


@pytest.mark.parametrize("noise", [0.0, 1.0, 2.0, 100.0])
def test_ch3_recall_by_hand_equals_the_package(noise):
    images, texts = paired_features(300, 16, noise, seed=1)
    answer = chapter03.exercise1(images, texts, ks=(1, 5, 10, 50))
    package = recall_at_k(images, texts, (1, 5, 10, 50))
    for direction in ("t2i", "i2t"):
        assert answer["by_hand"][direction] == pytest.approx(package[direction], abs=1e-9)
    assert answer["package"] == package
    if noise == 1.0:
        assert 0 < answer["by_hand"]["t2i"][1] < 100 and answer["by_hand"]["t2i"][1] != answer["by_hand"]["i2t"][1]
    by_hand = chapter03.ranks_by_hand(images, texts)
    package_ranks = ranks_of_ground_truth(images, texts)
    for mine, theirs in zip(by_hand, package_ranks, strict=True):
        assert torch.equal(mine, theirs)


def test_ch3_ties_count_against_the_query():
    images, texts = paired_features(10, 8, 0.5, seed=2)
    images[1] = images[0]  # two identical images: neither caption 0 nor caption 1 can be first for sure
    text_to_image, _ = chapter03.ranks_by_hand(images, texts)
    assert text_to_image[0] >= 2 and text_to_image[1] >= 2


@pytest.mark.parametrize("family_size", [2, 4])
def test_ch3_chance_levels_follow_the_family_size(family_size):
    answers = [chapter03.exercise2(num_families=1000 // family_size, family_size=family_size, seed=s) for s in range(5)]
    mean_r1 = sum(a["family_blind_r1"] for a in answers) / len(answers)
    assert mean_r1 == pytest.approx(100 / family_size, abs=2.0)  # 5 × 1000 queries: standard error < 0.8
    assert all(a["family_blind_expected"] == 100 / family_size for a in answers)
    assert all(a["family_blind_r_at_family_size"] == 100.0 for a in answers)  # the family is always found
    assert all(a["family_blind_twin_share"] == 1.0 for a in answers)  # every error is a twin
    assert all(a["random_expected"] == pytest.approx(0.1) for a in answers)
    assert sum(a["random_r1"] for a in answers) / len(answers) < 0.5


def test_ch3_twin_share_of_misses():
    images, texts, families = chapter03.family_blind_features(num_families=50, family_size=4, seed=3)
    blind = chapter03.twin_share_of_misses(images, texts, families)
    top = (texts @ images.T).argmax(dim=1)
    assert blind["misses"] == int((top != torch.arange(200)).sum()) > 0
    assert blind["twin_misses"] == blind["misses"] and blind["twin_share"] == 1.0
    random_images, random_texts = paired_features(200, 16, 100.0, seed=4)
    random = chapter03.twin_share_of_misses(random_images, random_texts, families)
    assert random["misses"] > 150 and random["twin_share"] < 0.1  # 3 twins among 199 other images
    perfect = chapter03.twin_share_of_misses(texts, texts, families)
    assert perfect["misses"] == 0 and math.isnan(perfect["twin_share"])


def test_ch3_exercise3_r1_change_is_entered_minus_left():
    generator = torch.Generator().manual_seed(5)
    shared = torch.randn(400, 16, generator=generator)
    images = F.normalize(shared + 1.5 * torch.randn(400, 16, generator=generator), dim=1)
    # two "models": captions with independent noise, the second's smaller (better on average, not everywhere)
    texts = F.normalize(shared + 1.5 * torch.randn(400, 16, generator=generator), dim=1)
    better_texts = F.normalize(shared + 0.9 * torch.randn(400, 16, generator=generator), dim=1)
    features = {"clip": (images, texts), "hn+tok": (images, better_texts)}
    answer = chapter03.exercise3(features, "clip", "hn+tok")
    before, after = ranks_of_ground_truth(*features["clip"])[0], ranks_of_ground_truth(*features["hn+tok"])[0]
    changes = rank_changes(before, after)
    assert (answer["improved"], answer["worsened"], answer["unchanged"]) == (
        changes["improved"], changes["worsened"], changes["unchanged"])
    assert answer["improved"] + answer["worsened"] + answer["unchanged"] == 400
    r1 = recall_at_k(*features["hn+tok"], (1,))["t2i"][1] - recall_at_k(*features["clip"], (1,))["t2i"][1]
    assert answer["r1_change"] == pytest.approx(r1, abs=1e-9)
    assert answer["entered_top1"] > answer["left_top1"] > 0
    assert 0 < answer["invisible_to_r1"] < answer["improved"]
    query, rank_before, rank_after = answer["largest_gain"]
    assert (rank_before, rank_after) == (int(before[query]), int(after[query]))
    assert rank_before - rank_after == int((before - after).max())


# ------------------------------------------------------------------------------------------------------------
# Chapter 4 (notebooks/solutions/chapter04.py): the frozen margin, s·γ, steps of an ablation run
# ------------------------------------------------------------------------------------------------------------


def test_ch4_margin_is_what_the_boost_adds_to_a_batch():
    assert chapter04.exercise1()["paper_margin"] == pytest.approx(42.0)  # 100 × 0.5 × 0.84 (App. B.2)
    assert chapter04.margin_per_epoch([0.8, 0.7, 0.6], 100.0, 0.5, frozen=True) == pytest.approx([40.0] * 3)
    assert chapter04.margin_per_epoch([0.8, 0.7, 0.6], [100.0, 90.0, 80.0], 0.5, frozen=False) == pytest.approx(
        [40.0, 31.5, 24.0])
    # s·γ·(mean off-diagonal Ḡ) is the mean of the margin the package adds to the negative logits of a batch
    _, t = paired_features(16, 8, 0.0, seed=6)
    t = F.normalize(t + 2.0, dim=1)  # a crowded batch, as dense captions are
    s, gamma = 100.0, 0.5
    off = ~torch.eye(16, dtype=torch.bool)
    added = (s * caption_margin(t, t, gamma))[off].double().mean().item()
    mean_similarity = caption_similarity_stats(t).mean_pairwise
    assert chapter04.margin_per_epoch([mean_similarity], s, gamma, frozen=False)[0] == pytest.approx(added, rel=1e-5)
    with pytest.raises(ValueError):
        chapter04.margin_per_epoch([0.8, 0.7], [100.0], 0.5, frozen=False)


def test_ch4_exercise1_reads_the_runs_histories():
    def run(source, similarities, scales, fixed=None):
        history = [{"epoch": 0, "caption_mean_similarity": similarities[0]}]
        history += [{"epoch": e, "caption_mean_similarity": g, "logit_scale": s}
                    for e, (g, s) in enumerate(zip(similarities[1:], scales, strict=True), start=1)]
        return {"config": {"gamma": 0.5, "margin_source": source, "logit_scale": fixed}, "history": history}

    runs = {"recomputed": run("recomputed", [0.8, 0.7, 0.6], [90.0, 95.0]),
            "frozen": run("frozen", [0.8, 0.75, 0.7], [90.0, 95.0])}
    answer = chapter04.exercise1(runs, initial_logit_scale=100.0)
    assert answer["runs"]["recomputed"]["margin"] == pytest.approx([40.0, 31.5, 28.5])
    assert answer["runs"]["frozen"]["margin"] == pytest.approx([40.0, 36.0, 38.0])  # only s moves
    assert answer["runs"]["frozen"]["mean_similarity"] == [0.8] * 3
    assert answer["relaxed"]["recomputed"] == pytest.approx((11.5, 11.5 / 40))
    assert answer["frozen_excess"] == pytest.approx(38.0 - 28.5)
    fixed = chapter04.applied_margins(run("recomputed", [0.8, 0.6], [90.0], fixed=25.0), initial_logit_scale=100.0)
    assert fixed["logit_scale"] == [25.0, 25.0] and fixed["margin"] == pytest.approx([10.0, 7.5])


def test_ch4_exercise2_equal_product_same_reweighting_different_loss(batch):
    generator = torch.Generator().manual_seed(7)
    random_batch = [F.normalize(torch.randn(16, 32, generator=generator, dtype=torch.float64), dim=1)
                    for _ in range(2)]
    for v, t in ([x.double() for x in batch], random_batch):
        answer = chapter04.exercise2(v, t, settings=((100.0, 0.5), (50.0, 1.0), (25.0, 2.0)))
        losses = list(answer["loss"].values())
        assert min(abs(a - b) for i, a in enumerate(losses) for b in losses[i + 1:]) > 1e-3  # s also scales S
        for (s, gamma), loss in answer["loss"].items():
            assert loss == pytest.approx(hn_clip_loss(v, t, s, gamma).item(), rel=1e-12)
        without_S = list(answer["loss_without_S"].values())
        assert without_S == pytest.approx([without_S[0]] * 3, rel=1e-12)  # only s·γ·Ḡ is left
        # Eq. 4: ln re-weighting of negative j against the least similar negative k is sγ(Ḡ_0j − Ḡ_0k)
        G = t @ t.T
        negatives = list(range(1, 16))
        k = min(negatives, key=lambda j: G[0, j].item())
        expected = 50.0 * (G[0, negatives] - G[0, k])
        for reweighting in answer["log_reweighting"].values():
            torch.testing.assert_close(reweighting, expected, atol=1e-8, rtol=1e-8)
        other = chapter04.exercise2(v, t, settings=((100.0, 1.0),))["log_reweighting"][(100.0, 1.0)]
        torch.testing.assert_close(other, 2 * expected, atol=1e-8, rtol=1e-8)  # another product, another weighting
    # with S = 0 the losses agree as well
    v, t = random_batch
    zero = chapter04.exercise2(torch.zeros_like(v), t)
    assert zero["loss"][(100.0, 0.5)] == pytest.approx(zero["loss"][(50.0, 1.0)], rel=1e-12)


def test_ch4_exercise3_steps_match_the_trainers_subset_and_batches():
    defaults = chapter04.exercise3()
    assert (defaults["pairs"], defaults["steps_per_epoch"], defaults["dropped_per_epoch"]) == (500, 3, 116)
    assert defaults["lr_factors"] == pytest.approx([0.5, 1.0, 1.0, 0.5 * (1 + math.cos(math.pi / 4)), 0.5,
                                                    0.5 * (1 + math.cos(3 * math.pi / 4))])
    for num_pairs in (48, 777, 2000):
        for fraction in (0.05, 0.25, 1.0):
            for micro, accumulation in ((16, 8), (16, 2), (4, 3)):
                answer = chapter04.exercise3(num_pairs, fraction, micro, accumulation, epochs=3, warmup_steps=2)
                subset = training_subset(num_pairs, fraction, seed=0)
                batches = epoch_batches(len(subset), micro * accumulation, seed=0, epoch=1)
                assert answer["pairs"] == len(subset)
                assert answer["steps_per_epoch"] == len(batches)
                assert answer["dropped_per_epoch"] == len(subset) - sum(len(b) for b in batches)
                assert answer["total_steps"] == 3 * len(batches)
                schedule = cosine_with_warmup(2, answer["total_steps"])
                assert answer["lr_factors"] == pytest.approx([schedule(k) for k in range(answer["total_steps"])])


# ---------------------------------------------------------------------------------------------- chapter 5

CALIBRATION = Path(__file__).resolve().parent.parent / "results" / "calibration.json"


def _calibration(gains_and_clip):
    return {"runs": [{"hn+tok": {"last": {"mean_r1": clip + gain}},
                      "clip": {"last": {"mean_r1": clip}, "diagnostics": [{"epoch": 1, "micro_solved_clip": 0.5,
                                                                            "solved_clip": 0.1}]}}
                     for gain, clip in gains_and_clip]}


def test_chapter5_gain_statistics_by_hand():
    stats = chapter05.exercise1(_calibration([(2.0, 50.0), (3.0, 51.0), (4.0, 49.0)]))
    assert stats["mean"] == pytest.approx(3.0) and stats["stderr"] == pytest.approx(1 / math.sqrt(3))
    assert stats["t"] == pytest.approx(3 * math.sqrt(3))
    assert chapter05.exercise2(_calibration([(1.0, 50.0)])) == [0.5]  # micro-batches, not the step mean


def test_chapter5_solutions_agree_with_the_judge():
    calibration = json.loads(CALIBRATION.read_text())
    table = read_results(calibration=CALIBRATION)
    gain = next(v for v in calibration_view(table) if v.claim_id == "hn_clip_gain")
    assert chapter05.seed_gains(calibration) == pytest.approx(gain.ours["hn+tok − clip avg R@1 per seed"])
    by_seed = table.where(study="calibration", objective="clip", epoch=1).values("micro_solved_clip", "seed")
    assert chapter05.exercise2(calibration) == pytest.approx([by_seed[run["seed"]] for run in calibration["runs"]])


def test_chapter5_halving_gains_halve_t():
    gains = [2.0, 3.0, 4.0]
    t = chapter05.gain_significance(gains)["t"]
    roots = chapter05.halving_gains(gains)
    assert len(roots) == 2 and roots[0] < min(gains) and roots[1] > max(gains)  # t/2 > 1: two roots
    for x in roots:
        assert chapter05.gain_significance([*gains, x])["t"] == pytest.approx(t / 2, rel=1e-9)
    # between the roots t stays above t/2; a fourth seed at the mean raises t by √2
    assert chapter05.gain_significance([*gains, 3.0])["t"] == pytest.approx(t * math.sqrt(2))
    assert chapter05.gain_significance([*gains, roots[0] - 0.1])["t"] < t / 2
    assert chapter05.halving_gains([1.0, 1.0]) == []  # no spread: t is infinite
    answer = chapter05.exercise1(_calibration([(2.0, 50.0), (3.0, 51.0), (4.0, 49.0)]))
    assert answer["halving_gains"] == pytest.approx(roots)


# ------------------------------------------------------------------------------------------------------------
# Every exercise question has a written answer: each chapter's "## Exercises" list, item by item,
# against the docstring of the matching solution function
# ------------------------------------------------------------------------------------------------------------

NOTEBOOKS = Path(__file__).resolve().parent.parent / "notebooks"
SOLUTIONS = {1: chapter01, 2: chapter02, 3: chapter03, 4: chapter04, 5: chapter05}
#: An answer paragraph of a docstring: a line starting "Answer:" or "Answer (label):", up to the next blank line.
ANSWER = re.compile(r"^Answer(?: \((.*?)\))?:(.*?)(?=\n\s*\n|\nAnswer\b|\Z)", re.M | re.S)
#: Fewer words than this is not an answer, whatever its label.
MIN_ANSWER_WORDS = 15


def chapter_exercises(path: Path) -> dict[int, str]:
    """The numbered items of a chapter script's "## Exercises" list, each joined into one line of text."""
    lines = path.read_text(encoding="utf-8").splitlines()
    items: dict[int, str] = {}
    for line in lines[lines.index("# ## Exercises") + 1:]:
        if (item := re.match(r"# (\d+)\. (.*)", line)) is not None:
            items[int(item[1])] = item[2]
        elif (more := re.match(r"#\s{2,}(\S.*)", line)) is not None and items:
            items[max(items)] += " " + more[1]
        else:  # a blank comment line, the "Solutions:" line or the end of the cell
            break
    return items


def sub_questions(item: str) -> tuple[list[str], int]:
    """What an exercise asks: the letters of its lettered parts ((a), (b), … in sequence; a reference such as
    "(g)" or "(a)–(c)" to the chapter's sections is not a part) and the number of other questions, the
    sentences that end in "?" or ask for a prediction, outside the sentences that hold the lettered parts. The
    bold title is left out: it names the exercise, its body asks it."""
    body = re.sub(r"^\*\*.*?\*\*", "", item).strip()
    letters: list[str] = []
    for letter in re.findall(r"\(([a-z])\)\s", body):
        if letter == chr(ord("a") + len(letters)):
            letters.append(letter)
    parts = re.compile(r"\((?:" + "|".join(letters) + r")\)\s") if letters else None
    others = 0
    for sentence in re.split(r"(?<=[.?!])\s+(?=[A-Z(`$])", body):
        if parts is not None and parts.search(sentence):
            continue
        if sentence.rstrip(" )*`").endswith("?") or re.search(r"\bpredict", sentence, re.I):
            others += 1
    return letters, others


def unanswered(item: str, docstring: str | None) -> list[str]:
    """What of an exercise ``item`` the solution's ``docstring`` leaves without an answer paragraph."""
    answers = ANSWER.findall(docstring or "")
    letters, others = sub_questions(item)
    labels = [label for label, _ in answers]
    problems = [f"no 'Answer ({letter}):' paragraph" for letter in letters if letter not in labels]
    unlettered = [label for label in labels if label not in letters]
    if len(unlettered) < others:
        problems.append(f"{others} question(s) besides the lettered parts, {len(unlettered)} answer paragraph(s)")
    if not answers:
        problems.append("no answer paragraph at all")
    problems += [f"answer {label or '(unlabelled)'!r} has fewer than {MIN_ANSWER_WORDS} words"
                 for label, text in answers if len(text.split()) < MIN_ANSWER_WORDS]
    return problems


def test_the_exercise_parser_reads_parts_questions_and_answers():
    item = ("**A title?** Do this (see (g) and (a)–(c)). (a) Why? (b) How, and predict what? Then why is it so? "
            "Predict the rest first. Check it.")
    assert sub_questions(item) == (["a", "b"], 2)
    assert sub_questions("Compare (a) one, (b) two and (c) three. Why does (g) train? Predict x.") == (
        ["a", "b", "c"], 2)
    assert sub_questions("Compute the numbers of the table.") == ([], 0)
    words = " ".join(["word"] * MIN_ANSWER_WORDS)
    assert unanswered(item, f"Doc.\n\nAnswer (a): {words}\n\nAnswer (b): {words}\n\nAnswer: {words}\n\n"
                            f"Answer (why it is so): {words}") == []
    assert unanswered(item, f"Answer (a): {words}\nAnswer: {words}\nAnswer: {words}") == [
        "no 'Answer (b):' paragraph"]
    assert unanswered(item, f"Answer (a): {words}\n\nAnswer (b): {words}\n\nAnswer: {words}") == [
        "2 question(s) besides the lettered parts, 1 answer paragraph(s)"]
    assert unanswered("Do it.", None) == ["no answer paragraph at all"]
    assert unanswered("Do it.", "Answer: too short.") == [f"answer '(unlabelled)' has fewer than "
                                                           f"{MIN_ANSWER_WORDS} words"]
    # the real chapters: chapter 4's exercise 2 has three parts and one more question, (g) is a section
    assert sub_questions(chapter_exercises(NOTEBOOKS / "04_ablations.py")[2]) == (["a", "b", "c"], 1)


@pytest.mark.parametrize("chapter", sorted(SOLUTIONS))
def test_every_exercise_question_has_a_written_answer(chapter):
    (path,) = NOTEBOOKS.glob(f"{chapter:02d}_*.py")
    exercises = chapter_exercises(path)
    assert exercises and sorted(exercises) == list(range(1, len(exercises) + 1)), f"{path.name}: {sorted(exercises)}"
    problems = {}
    for number, item in exercises.items():
        function = getattr(SOLUTIONS[chapter], f"exercise{number}", None)
        found = ["no solution function"] if function is None else unanswered(item, inspect.getdoc(function))
        if found:
            problems[f"exercise{number}"] = found
    assert not problems, f"notebooks/solutions/chapter{chapter:02d}.py, exercises of {path.name}: {problems}"


def test_ch4_exercise4_noise_wins_by_formula_and_by_simulation():
    answer = chapter04.exercise4()
    assert answer["beyond_sigma"] == pytest.approx(0.4795, abs=1e-4)  # P(|Z| > 1/√2)
    assert answer["beyond_2_root2_sigma"] == pytest.approx(0.0455, abs=1e-4)  # P(|Z| > 2)
    assert answer["simulated_beyond_sigma"] == pytest.approx(answer["beyond_sigma"], abs=0.005)
    assert answer["simulated_beyond_2_root2_sigma"] == pytest.approx(answer["beyond_2_root2_sigma"], abs=0.003)
    runs = {str(s): {"clip": {"last": {"mean_r1": 58.0 + s}}, "hn+tok": {"last": {"mean_r1": 60.0 - s}}}
            for s in range(3)}
    differences = chapter04.exercise4(runs, sigma=0.5)
    assert differences["seed_differences"] == {"clip": [-1.0, -2.0, -1.0], "hn+tok": [1.0, 2.0, 1.0]}
    assert differences["difference_spread"] == pytest.approx(0.5 * math.sqrt(2))


def test_ch5_exercise3_the_paired_rule_is_strict_with_seeds_and_weak_at_two():
    power = chapter05.exercise3(_calibration([(1.2, 59.6), (3.05, 57.6), (1.95, 58.1)]), trials=4000)["power"]
    assert power[0.0, 2] > power[0.0, 3] > power[0.0, 8]  # false wins grow rarer with seeds
    assert power[0.0, 3] < 0.15 and power[2.0, 3] > 0.85
    assert power[1.0, 8] < power[1.0, 3]  # "ahead at every seed": a lead the size of sd(d) is refused more often
    assert chapter05.paired_power(5.0, 0.1, 3, trials=100) == 1.0 and chapter05.paired_power(-1.0, 0.5, 3, 100) == 0.0
