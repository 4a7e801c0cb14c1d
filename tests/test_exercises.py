"""The exercise solutions of chapter 2 (notebooks/solutions/chapter02.py) and the constructed batch they use,
checked against independent computations: the package's losses, its saturation thresholds, and Eq. 4."""

import math
import sys
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from hnclip_core.losses import clip_loss, hn_clip_loss
from hnclip_core.saturation import saturation_thresholds

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "notebooks"))

from chapter02_helpers import TWIN, batch_summary, strong_init_batch, twin_margin  # noqa: E402
from solutions import chapter02  # noqa: E402

S_SCALE = 100.0


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
        # A constant margin is Eq. 2 with an all-ones caption similarity (the diagonal is masked either way).
        ones = torch.ones(16, 16, dtype=torch.float64)
        torch.testing.assert_close(chapter02.fixed_margin_loss(v, t, S_SCALE, 0.3),
                                   hn_clip_loss(v, t, S_SCALE, gamma=0.3, text_sim=ones))
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
