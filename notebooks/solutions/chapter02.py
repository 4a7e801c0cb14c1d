"""Solutions to the exercises of chapter 2 (``notebooks/02_saturation.py``); arXiv 2608.18521 Eq. 1, 2 and 4.

Each exercise is one function that returns its numbers; ``python notebooks/solutions/chapter02.py`` prints
them, ``tests/test_exercises.py`` checks them against independent computations. The losses are written
out here again (as in the chapter) so that the solutions stand on their own.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

_NOTEBOOKS = str(Path(__file__).resolve().parents[1])
if _NOTEBOOKS not in sys.path:  # chapter02_helpers lives beside the notebooks
    sys.path.insert(0, _NOTEBOOKS)

from chapter02_helpers import TWIN, strong_init_batch, twin_margin  # noqa: E402

__all__ = ["fixed_margin_loss", "boosted_loss", "exercise1", "exercise2", "exercise3"]

#: fp16's smallest positive (subnormal) number, 2⁻²⁴ ≈ 5.96e-8; values below half of it round to 0.
FP16_SMALLEST_SUBNORMAL = 2.0**-24


def _contrastive_ce(Z: torch.Tensor) -> torch.Tensor:
    y = torch.arange(Z.shape[0], device=Z.device)
    return (F.cross_entropy(Z, y) + F.cross_entropy(Z.T, y)) / 2


def _off_diagonal(batch: int, like: torch.Tensor) -> torch.Tensor:
    return ~torch.eye(batch, dtype=torch.bool, device=like.device)


def fixed_margin_loss(v: torch.Tensor, t: torch.Tensor, s: float, m: float) -> torch.Tensor:
    """Exercise 1: Eq. 1 on the logits s·(S + m(1 − I)) — the same margin m for every negative."""
    margin = m * _off_diagonal(len(v), v).to(v.dtype)
    return _contrastive_ce(s * (v @ t.T + margin))


def boosted_loss(v: torch.Tensor, t: torch.Tensor, s: float, gamma: float) -> torch.Tensor:
    """Eq. 2 (L_HN), as in the chapter: Eq. 1 on the logits s·(S + γḠ), Ḡ = stopgrad(T Tᵀ) ⊙ (1 − I)."""
    G_bar = (t @ t.T).detach() * _off_diagonal(len(t), t).to(t.dtype)
    return _contrastive_ce(s * (v @ t.T + gamma * G_bar))


def exercise1(s: float = 100.0, gamma: float = 0.5, seed: int = 0) -> dict:
    """A fixed margin m against Eq. 2's γḠ on the constructed batch, at m = γḠ_01 (float64).

    Returns the losses (``loss_fixed_m0`` must equal Eq. 1), and, per loss (``"fixed"``, ``"Eq. 2"``):

    * ``log_reweighting[name]``: for image 0, ln[(p_01/p_0k) / (p_01/p_0k)_InfoNCE] for every easy negative k
      (k ≠ 0, 1) — how the loss changed the twin's repulsion relative to negative k's, compared with InfoNCE
      (Eq. 4: 0 for a constant margin, sγ(Ḡ_01 − Ḡ_0k) for Eq. 2);
    * ``unresolved[name]``: the negative entries (i, j) of the logit matrix whose lead — S_ii − S_ij for
      image i choosing, S_jj − S_ij for caption j choosing — is smaller than the margin the loss asks for;
    * ``twin_share[name]``: the share of the gradient on all negative logits that lands on the twin's two.

    The answer: the fixed margin re-weights nothing (it raises every negative alike), so to reach the twin
    it pushes on every easy negative whose lead is below m as well; Eq. 2 multiplies the twin's relative
    push by exp(sγΔḠ) and leaves only the twin unresolved.
    """
    v, t = (x.double() for x in strong_init_batch(seed=seed))
    batch = len(v)
    off = _off_diagonal(batch, v)
    S = v @ t.T
    G_bar = (t @ t.T) * off
    m = gamma * G_bar[TWIN].item()
    margins = {"InfoNCE": torch.zeros_like(S), "fixed": m * off.double(), "Eq. 2": gamma * G_bar}
    easy = [k for k in range(batch) if k not in TWIN]

    log_p0 = {name: F.log_softmax(s * (S + margin)[0], dim=0) for name, margin in margins.items()}
    lead_rows = S.diagonal()[:, None] - S
    lead_columns = S.diagonal()[None, :] - S
    result: dict = {
        "m": m,
        "loss_fixed_m0": fixed_margin_loss(v, t, s, 0.0).item(),
        "loss_fixed": fixed_margin_loss(v, t, s, m).item(),
        "loss_hn": boosted_loss(v, t, s, gamma).item(),
        "easy_negatives": easy,
        "log_reweighting": {},
        "unresolved": {},
        "twin_share": {},
    }
    for name in ("fixed", "Eq. 2"):
        margin = margins[name]
        twin_vs_easy = log_p0[name][TWIN[1]] - log_p0[name][easy]
        twin_vs_easy_infonce = log_p0["InfoNCE"][TWIN[1]] - log_p0["InfoNCE"][easy]
        result["log_reweighting"][name] = (twin_vs_easy - twin_vs_easy_infonce).tolist()
        unresolved = ((lead_rows < margin) | (lead_columns < margin)) & off
        result["unresolved"][name] = sorted((int(i), int(j)) for i, j in unresolved.nonzero().tolist())
        Z = (s * (S + margin)).requires_grad_(True)
        _contrastive_ce(Z).backward()
        grad = Z.grad
        result["twin_share"][name] = ((grad[TWIN] + grad[TWIN[::-1]]) / grad[off].sum()).item()
    return result


def exercise2(s: float = 100.0, seed: int = 0, threshold: float = 1e-3) -> dict:
    """The γ from which L_HN of the constructed batch exceeds ``threshold``, predicted and found by bisection.

    Prediction: the twin is a negative in two rows and two columns; each of these four cross-entropies is
    ≈ e^(−gap) with the boosted gap s(Δ − γḠ_01), and the batch loss averages B rows and halves the two
    directions, so L_HN ≈ (4 / 2B)·e^(−gap). Setting it to the threshold: gap = ln(2 / (B·threshold)) and
    γ = (Δ − gap/s) / Ḡ_01. The easy negatives add nothing visible (their leads are ≥ 0.29).
    """
    v, t = strong_init_batch(seed=seed)
    batch = len(v)
    delta, g01 = twin_margin(v, t), (t[0] @ t[1]).item()
    predicted = (delta - math.log(2 / (batch * threshold)) / s) / g01

    def loss(gamma: float) -> float:
        return boosted_loss(v, t, s, gamma).item()

    lo, hi = 0.0, 1.0
    if not loss(lo) < threshold < loss(hi):
        raise ValueError("the threshold is not crossed between γ = 0 and γ = 1")
    for _ in range(60):
        mid = 0.5 * (lo + hi)
        lo, hi = (mid, hi) if loss(mid) <= threshold else (lo, mid)
    return {"gamma": hi, "predicted": predicted, "twin_margin": delta, "twin_caption_similarity": g01}


def _first_zero(gradient, lo: float = 0.0, hi: float = 1.0, iterations: int = 60) -> float:
    """Smallest Δ in [lo, hi] at which ``gradient(Δ)`` is exactly 0 (it is non-zero at lo, zero at hi)."""
    if gradient(lo) == 0.0 or gradient(hi) != 0.0:
        raise ValueError("the gradient must be non-zero at lo and exactly zero at hi")
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        lo, hi = (lo, mid) if gradient(mid) == 0.0 else (mid, hi)
    return hi


def exercise3(s: float = 100.0, batch_size: int = 16) -> dict:
    """The cosine margin Δ from which the fp16 gradient on a negative logit is exactly 0, predicted and measured.

    Logits: every positive s·Δ, every negative 0, in fp16. A negative's softmax probability is then
    p = 1 / (e^(sΔ) + B − 1) ≈ e^(−sΔ), and a value rounds to 0 in fp16 when it is at most half the smallest
    subnormal, 2⁻²⁵. (a) One query's own loss ℓ_i (sum over its row): the gradient is p, zero from
    sΔ = ln 2²⁵ ≈ 17.3 (roughly ln(1/6e-8) ≈ 16.6). (b) The symmetric batch loss: each direction contributes
    p/(2B), zero from sΔ = ln(2²⁵ / 2B) ≈ 13.9 for B = 16.
    """
    target = torch.tensor([0])

    def row_gradient(delta: float) -> float:
        z = torch.zeros(1, batch_size, dtype=torch.float64)
        z[0, 0] = s * delta
        z = z.half().requires_grad_(True)
        F.cross_entropy(z, target, reduction="sum").backward()
        return z.grad[0, 1].item()

    def batch_gradient(delta: float) -> float:
        Z = torch.zeros(batch_size, batch_size, dtype=torch.float64)
        Z.diagonal().fill_(s * delta)
        Z = Z.half().requires_grad_(True)
        _contrastive_ce(Z).backward()
        return Z.grad[0, 1].item()

    half_subnormal = FP16_SMALLEST_SUBNORMAL / 2
    return {
        "measured_row": _first_zero(row_gradient),
        "measured_batch": _first_zero(batch_gradient),
        "predicted_row": math.log(1 / half_subnormal) / s,
        "predicted_batch": math.log(1 / (2 * batch_size * half_subnormal)) / s,
        "rough_row": math.log(1 / 6e-8) / s,
    }


if __name__ == "__main__":
    one = exercise1()
    print(f"Exercise 1 (m = γḠ_01 = {one['m']:.3f}): fixed margin at m = 0 → {one['loss_fixed_m0']:.3g} (Eq. 1); "
          f"at m: {one['loss_fixed']:.3g}, Eq. 2: {one['loss_hn']:.3g}")
    for name in ("fixed", "Eq. 2"):
        lr = one["log_reweighting"][name]
        print(f"  {name:6s} ln re-weighting twin vs easy negatives: {min(lr):.3g} … {max(lr):.3g}; "
              f"unresolved negatives: {len(one['unresolved'][name])} {one['unresolved'][name]}; "
              f"twin's share of the negative gradient: {one['twin_share'][name]:.3f}")
    two = exercise2()
    print(f"Exercise 2: L_HN exceeds 1e-3 from γ = {two['gamma']:.4f} (predicted {two['predicted']:.4f})")
    three = exercise3()
    print(f"Exercise 3: fp16 gradient exactly 0 from Δ = {three['measured_row']:.4f} for one query's loss "
          f"(predicted {three['predicted_row']:.4f}, roughly {three['rough_row']:.4f}) and from "
          f"Δ = {three['measured_batch']:.4f} for the batch loss (predicted {three['predicted_batch']:.4f})")
