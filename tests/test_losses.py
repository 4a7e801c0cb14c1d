"""The objective of arXiv 2608.18521 (Eq. 1–3) against open_clip's ClipLoss, hand-built references and the
fp32 saturation arithmetic of §2.4."""

import math

import pytest
import torch
import torch.nn.functional as F
from open_clip.loss import ClipLoss

from hnclip_core.losses import (
    HNClipLoss,
    HNClipTokenLoss,
    caption_margin,
    token_loss,
    token_similarity,
    valid_text_token_mask,
)


def unit(x):
    return F.normalize(x, dim=-1)


@pytest.fixture
def batch():
    g = torch.Generator().manual_seed(0)
    images = unit(torch.randn(8, 16, generator=g))
    texts = unit(images + 0.6 * torch.randn(8, 16, generator=g))
    return images, texts


def hn_clip_loss(images, texts, scale, gamma):
    return HNClipLoss(gamma=gamma)(images, texts, scale)


def clip_loss(images, texts, scale):
    return ClipLoss()(images, texts, scale)


def test_gamma_zero_equals_open_clip_clip_loss(batch):
    images, texts = batch
    scale = torch.tensor(100.0)
    assert torch.equal(HNClipLoss(gamma=0.0)(images, texts, scale), ClipLoss()(images, texts, scale))
    out = HNClipLoss(gamma=0.5)(images, texts, 50.0, output_dict=True)
    assert set(out) == {"contrastive_loss"}


def test_token_loss_module_adds_lambda_times_the_token_term(batch):
    images, texts = batch
    g = torch.Generator().manual_seed(4)
    image_tokens, text_tokens = torch.randn(8, 5, 16, generator=g), torch.randn(8, 6, 16, generator=g)
    ids = torch.randint(1, 100, (8, 6), generator=g)
    ids[:, 0], ids[::2, 4:] = 49406, 0
    mask = valid_text_token_mask(ids)
    loss = HNClipTokenLoss(gamma=0.5, token_weight=0.3)
    terms = loss(images, texts, 20.0, output_dict=True, image_tokens=image_tokens, text_tokens=text_tokens,
                 text_ids=ids)
    assert torch.allclose(terms["contrastive_loss"], HNClipLoss(gamma=0.5)(images, texts, 20.0))
    assert torch.allclose(terms["token_loss"], 0.3 * token_loss(image_tokens, text_tokens, mask, 20.0))
    total = loss(images, texts, 20.0, image_tokens=image_tokens, text_tokens=text_tokens, text_ids=ids)
    assert torch.allclose(total, terms["contrastive_loss"] + terms["token_loss"])
    # λ = 0 needs no token tensors at all: L_HN alone (and γ = 0 with it: InfoNCE)
    assert torch.equal(HNClipTokenLoss(0.0, 0.0)(images, texts, 20.0), ClipLoss()(images, texts, 20.0))


@pytest.mark.parametrize("options", [{"local_loss": True, "gather_with_grad": True}, {"gather_with_grad": False}])
def test_the_token_term_refuses_a_partial_gather_across_processes(options):
    with pytest.raises(ValueError, match="gather_with_grad=True, without local_loss"):
        HNClipTokenLoss(0.5, 1.0, rank=0, world_size=2, **options)
    HNClipTokenLoss(0.5, 0.0, rank=0, world_size=2, **options)  # L_HN alone: open_clip's options, as ClipLoss
    HNClipTokenLoss(0.5, 1.0, rank=0, world_size=2, gather_with_grad=True)


def test_boosted_logits_by_hand(batch):
    images, texts = batch
    s, gamma = 30.0, 0.5
    G = texts @ texts.t()
    logits = s * (images @ texts.t() + gamma * G * (1 - torch.eye(8)))
    expected = 0.5 * (F.cross_entropy(logits, torch.arange(8)) + F.cross_entropy(logits.t(), torch.arange(8)))
    assert torch.allclose(hn_clip_loss(images, texts, s, gamma=gamma), expected, atol=1e-6)


def test_positive_logits_untouched_and_margin_detached(batch):
    _, texts = batch
    texts = texts.clone().requires_grad_(True)
    margin = caption_margin(texts, texts, gamma=0.5)
    assert not margin.requires_grad
    assert torch.all(margin.diagonal() == 0)
    off_diagonal = ~torch.eye(8, dtype=torch.bool)
    assert torch.allclose(margin[off_diagonal], 0.5 * (texts @ texts.t()).detach()[off_diagonal])
    # under local_loss the positives of rank 1 sit at columns 8..15
    shifted = caption_margin(texts[:4], torch.cat([texts, texts]), gamma=1.0, positive_offset=8)
    assert torch.all(shifted[torch.arange(4), torch.arange(4) + 8] == 0)
    assert torch.all(shifted[torch.arange(4), torch.arange(4)] != 0)


def test_no_gradient_flows_through_caption_similarity(batch):
    images, texts = batch
    gamma, s = 0.5, 40.0
    t1 = texts.clone().requires_grad_(True)
    v1 = images.clone().requires_grad_(True)
    hn_clip_loss(v1, t1, s, gamma=gamma).backward()

    # Reference: the same logits with Ḡ precomputed as a constant (no autograd path at all).
    constant = gamma * (texts @ texts.t()) * (1 - torch.eye(8))
    t2 = texts.clone().requires_grad_(True)
    v2 = images.clone().requires_grad_(True)
    logits = s * (v2 @ t2.t() + constant)
    (0.5 * (F.cross_entropy(logits, torch.arange(8)) + F.cross_entropy(logits.t(), torch.arange(8)))).backward()
    assert torch.allclose(t1.grad, t2.grad, atol=1e-7)
    assert torch.allclose(v1.grad, v2.grad, atol=1e-7)

    # If Ḡ were differentiated the text gradient would differ.
    t3 = texts.clone().requires_grad_(True)
    logits = s * (images @ t3.t() + gamma * (t3 @ t3.t()) * (1 - torch.eye(8)))
    (0.5 * (F.cross_entropy(logits, torch.arange(8)) + F.cross_entropy(logits.t(), torch.arange(8)))).backward()
    assert not torch.allclose(t1.grad, t3.grad, atol=1e-5)


def test_frozen_margin_features_are_detached_and_masked(batch):
    images, texts = batch
    frozen = unit(texts + 0.1).requires_grad_(True)
    images = images.clone().requires_grad_(True)
    loss = HNClipLoss(gamma=0.5)(images, texts, 20.0, margin_text_features=frozen)
    loss.backward()
    assert frozen.grad is None
    manual = 20.0 * (images @ texts.t() + 0.5 * (frozen @ frozen.t()).detach() * (1 - torch.eye(8)))
    expected = 0.5 * (F.cross_entropy(manual, torch.arange(8)) + F.cross_entropy(manual.t(), torch.arange(8)))
    assert torch.allclose(loss, expected, atol=1e-6)


def test_logit_scale_receives_gradient_of_boosted_logits(batch):
    images, texts = batch
    log_scale = torch.tensor(math.log(30.0), requires_grad=True)
    hn_clip_loss(images, texts, log_scale.exp(), gamma=0.5).backward()
    assert log_scale.grad is not None and log_scale.grad != 0


def near_duplicate_batch(margin: float, caption_cos: float, size: int = 8, dim: int = 32):
    """Captions sharing a common direction (pairwise cosine ``caption_cos``) and images whose cosine
    to their own caption beats every other caption by exactly ``margin``."""
    g = torch.Generator().manual_seed(1)
    common = unit(torch.randn(dim, generator=g))
    unique = torch.linalg.qr(torch.randn(dim, size, generator=g))[0].t()  # orthonormal rows
    unique = unit(unique - (unique @ common)[:, None] * common)
    texts = unit(math.sqrt(caption_cos) * common + math.sqrt(1 - caption_cos) * unique)
    # v_i = a·t_i + b·u_i: cos(v_i, t_i) − cos(v_i, t_j) = a(1 − c) + b·√(1 − c)·(1 − 0)
    b = margin / math.sqrt(1 - caption_cos) / 2
    images = unit(texts + b * unique / (1 - b))
    return images, texts


def test_near_duplicates_saturate_infonce_but_not_the_boost():
    """The paper's 'solved' batches (§2.4): L_CLIP < 1e-3 while hard negatives still sit within the
    margin γ·Ḡ, so L_HN keeps producing loss and gradient."""
    images, texts = near_duplicate_batch(margin=0.15, caption_cos=0.9)
    sim = images @ texts.t()
    off = ~torch.eye(8, dtype=torch.bool)
    gap = (sim.diagonal()[:, None] - sim)[off].min()
    assert gap > 0.12
    plain = clip_loss(images, texts, 100.0)
    boosted = hn_clip_loss(images, texts, 100.0, gamma=0.5)
    assert plain < 1e-3
    assert boosted > 1.0


def test_fp32_exact_zero_loss_and_gradient():
    """Saturation arithmetic in fp32 at s = 100 (DESIGN-NOTES, paper §2.4).

    A negative's softmax weight exp(−s·Δ) underflows to exactly 0 only when s·Δ ≳ 104, i.e. a cosine
    margin Δ > 1.04; the loss rounds to exactly 0 much earlier (s·Δ ≳ 17). A margin over 1 is only
    possible for captions whose similarity is below 1 − Δ²/2 ≈ 0.46, because Δ ≤ ‖t_i − t_j‖. There the
    boost (≤ s·γ·Ḡ = 23 logits) cannot revive the loss either, but its gradient is not exactly zero.
    """
    caption_cos = 0.4
    texts = unit(torch.tensor([[1.0, 0.0], [caption_cos, math.sqrt(1 - caption_cos**2)]]))
    # Each image points along its caption minus the other caption: the largest margin geometry allows.
    images = unit(texts - texts.flip(0))
    sim = images @ texts.t()
    margin = (sim.diagonal() - sim.flip(1).diagonal()).min().item()
    assert 1.06 < margin < 1.1

    def loss_and_grads(fn):
        v = images.clone().requires_grad_(True)
        t = texts.clone().requires_grad_(True)
        loss = fn(v, t)
        loss.backward()
        return loss, v.grad, t.grad

    loss, gv, gt = loss_and_grads(lambda v, t: clip_loss(v, t, torch.tensor(100.0)))
    assert loss.item() == 0.0 and torch.count_nonzero(gv) == 0 and torch.count_nonzero(gt) == 0
    loss, gv, gt = loss_and_grads(lambda v, t: hn_clip_loss(v, t, torch.tensor(100.0), gamma=0.5))
    assert loss.item() == 0.0  # the loss underflows long before the gradient does
    assert torch.count_nonzero(gv) > 0 and torch.count_nonzero(gt) > 0


def naive_token_similarity(image_tokens, text_tokens, mask):
    """Unchunked FILIP reference with explicit loops over pairs."""
    x, y = unit(image_tokens), unit(text_tokens)
    n_i, n_t = x.shape[0], y.shape[0]
    i2t, t2i = torch.zeros(n_i, n_t), torch.zeros(n_i, n_t)
    for i in range(n_i):
        for j in range(n_t):
            valid = y[j][mask[j]]
            sim = x[i] @ valid.t()  # [patches, valid tokens]
            i2t[i, j] = sim.max(dim=1).values.mean()
            t2i[i, j] = sim.max(dim=0).values.mean()
    return i2t, t2i


@pytest.fixture
def token_batch():
    g = torch.Generator().manual_seed(3)
    image_tokens = torch.randn(5, 7, 12, generator=g)
    text_tokens = torch.randn(5, 9, 12, generator=g)
    ids = torch.zeros(5, 9, dtype=torch.long)
    for j, length in enumerate([9, 3, 5, 2, 7]):
        ids[j, :length] = torch.randint(1, 100, (length,), generator=g)
        ids[j, 0] = 49406
    return image_tokens, text_tokens, valid_text_token_mask(ids)


def test_valid_text_token_mask_excludes_start_and_padding():
    ids = torch.tensor([[49406, 320, 49407, 0, 0]])
    assert valid_text_token_mask(ids).tolist() == [[False, True, True, False, False]]


@pytest.mark.parametrize("max_elements", [1, 7 * 9 * 5 * 2, 2**25])
def test_token_similarity_matches_naive_reference(token_batch, max_elements):
    image_tokens, text_tokens, mask = token_batch
    i2t, t2i = token_similarity(image_tokens, text_tokens, mask, max_elements=max_elements)
    ref_i2t, ref_t2i = naive_token_similarity(image_tokens, text_tokens, mask)
    assert torch.allclose(i2t, ref_i2t, atol=1e-6)
    assert torch.allclose(t2i, ref_t2i, atol=1e-6)


def test_token_loss_matches_reference_and_chunking_keeps_gradients(token_batch):
    image_tokens, text_tokens, mask = token_batch
    ref_i2t, ref_t2i = naive_token_similarity(image_tokens, text_tokens, mask)
    targets = torch.arange(5)
    expected = 0.5 * (F.cross_entropy(10 * ref_i2t, targets) + F.cross_entropy(10 * ref_t2i.t(), targets))
    grads = []
    for max_elements in (1, 2**25):
        x = image_tokens.clone().requires_grad_(True)
        y = text_tokens.clone().requires_grad_(True)
        loss = token_loss(x, y, mask, 10.0, max_elements=max_elements)
        assert torch.allclose(loss, expected, atol=1e-6)
        loss.backward()
        grads.append((x.grad, y.grad))
        # padding and start tokens get no gradient
        assert torch.count_nonzero(y.grad[~mask]) == 0
    assert torch.allclose(grads[0][0], grads[1][0], atol=1e-7)
    assert torch.allclose(grads[0][1], grads[1][1], atol=1e-7)
