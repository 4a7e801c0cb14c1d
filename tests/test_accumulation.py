"""The two readings of gradient accumulation (accumulation.py) under every objective of Table 3b."""

from functools import partial

import pytest
import torch
import torch.nn.functional as F

from hnclip_core.accumulation import MicroBatch, accumulated_losses
from hnclip_core.features import encode_batch
from hnclip_core.longclip import build_clip
from hnclip_core.losses import HNClipTokenLoss

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


#: Table 3b's objectives as (γ, λ) of the loss
OBJECTIVES = {"clip": (0.0, 0.0), "hn": (0.5, 0.0), "hn+tok": (0.5, 1.0)}


def losses(model, micro_batches, loss, accumulation="naive", margin_features=None):
    return accumulated_losses(partial(encode_batch, model), model.logit_scale, micro_batches, loss, accumulation,
                              margin_features)


def gradients(model, micro_batches, loss_fn, accumulation, margin_features=None):
    model.zero_grad()
    total = 0.0
    for loss in losses(model, micro_batches, loss_fn, accumulation, margin_features):
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
    objective = HNClipTokenLoss(*OBJECTIVES[name])
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
    loss = HNClipTokenLoss(gamma=0.5, token_weight=0.0)
    live = next(losses(model, micro, loss)).item()
    with_frozen = next(losses(model, micro, loss, margin_features=lambda idx: frozen[idx])).item()
    assert live != pytest.approx(with_frozen)


def test_unknown_accumulation_is_refused():
    model = build_clip(TINY_ARCH)
    images, ids = make_batch(4)
    with pytest.raises(ValueError, match="unknown accumulation"):
        next(losses(model, [MicroBatch(images, ids, torch.arange(4))], HNClipTokenLoss(), "summed"))
