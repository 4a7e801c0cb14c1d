"""Objectives of Table 3b and the two readings of gradient accumulation (objective.py)."""

import pytest
import torch
import torch.nn.functional as F

from hnclip_core.longclip import build_clip
from hnclip_core.objective import MicroBatch, Objective, accumulated_losses

from .conftest import TINY_ARCH


def make_batch(n=16, seed=0):
    g = torch.Generator().manual_seed(seed)
    images = torch.randn(n, 3, 32, 32, generator=g)
    ids = torch.zeros(n, 248, dtype=torch.long)
    for i in range(n):
        length = 5 + i % 7
        ids[i, 0] = 49406
        ids[i, 1:length] = torch.randint(300, 5000, (length - 1,), generator=g)
        ids[i, length] = 49407
    return images, ids


def gradients(model, micro_batches, objective, accumulation, margin_features=None):
    model.zero_grad()
    total = 0.0
    for loss in accumulated_losses(model, micro_batches, objective, accumulation, margin_features):
        loss.backward()
        total += loss.item()
    return total, {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}


@pytest.mark.parametrize("name", ["clip", "hn", "hn+tok"])
def test_cached_accumulation_equals_one_large_batch(name):
    torch.manual_seed(0)
    model = build_clip(TINY_ARCH).double()
    images, ids = make_batch()
    images = images.double()
    indices = torch.arange(16)
    objective = Objective(name, gamma=0.5)
    one = [MicroBatch(images, ids, indices)]
    four = [MicroBatch(images[i : i + 4], ids[i : i + 4], indices[i : i + 4]) for i in range(0, 16, 4)]
    loss_one, grads_one = gradients(model, one, objective, "naive")
    loss_cached, grads_cached = gradients(model, four, objective, "cached")
    assert loss_cached / 4 == pytest.approx(loss_one, rel=1e-10)
    assert grads_one.keys() == grads_cached.keys() and "logit_scale" in grads_one
    for key in grads_one:
        assert torch.allclose(grads_one[key], grads_cached[key], rtol=1e-7, atol=1e-12), key
    # naive accumulation is a different objective: each micro-batch only sees its own 3 negatives
    loss_naive, grads_naive = gradients(model, four, objective, "naive")
    assert loss_naive != pytest.approx(loss_one, rel=1e-3)


def test_frozen_margin_features_are_used():
    torch.manual_seed(0)
    model = build_clip(TINY_ARCH)
    images, ids = make_batch(8)
    micro = [MicroBatch(images, ids, torch.arange(8))]
    frozen = F.normalize(torch.randn(8, 32), dim=-1)
    objective = Objective("hn", gamma=0.5)
    live = next(accumulated_losses(model, micro, objective)).item()
    with_frozen = next(accumulated_losses(model, micro, objective, margin_features=lambda idx: frozen[idx])).item()
    assert live != pytest.approx(with_frozen)


def test_objective_names_are_checked():
    with pytest.raises(ValueError, match="unknown objective"):
        Objective("infonce")
    assert Objective("tok").uses_tokens and not Objective("tok").uses_boost
    assert Objective("hn+tok").uses_tokens and Objective("hn+tok").uses_boost
