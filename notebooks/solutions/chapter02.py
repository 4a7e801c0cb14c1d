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

    The batch's numbers used below are its construction's (:func:`chapter02_helpers.strong_init_batch`):
    Ḡ_01 = 0.95 and twin margin Δ = 0.15, so m = γḠ_01 = 0.475 at γ = 0.5; every easy negative trails its
    positive by about 0.3 or more; unrelated captions have Ḡ below 0.5. Before measuring, note one fact:
    m is the boost of the batch's most similar pair, so m ≥ γḠ_ij for every negative. Each negative logit of
    the fixed margin is then at least Eq. 2's, and since cross-entropy grows with every negative logit,
    ``loss_fixed`` ≥ ``loss_hn``.

    Answer (a): by Eq. 4 the ratio of two negatives' posteriors in row i is
    p_ij/p_ik = exp(s(S_ij − S_ik))·exp(s(M_ij − M_ik)), where M is the margin matrix. A fixed margin has
    M_ij = M_ik = m, so the second factor is 1. The twin and an easy negative are repelled in exactly the
    ratio InfoNCE gives them, and ``log_reweighting["fixed"]`` is 0 up to rounding. What the fixed margin
    changes is the size of the push, not how it is split: every negative gains e^(sm) against the positive.
    Eq. 2 has M = γḠ, so the twin's repulsion relative to easy negative k is multiplied by exp(sγ(Ḡ_01 −
    Ḡ_0k)). Here that is more than e^(100·0.5·(0.95 − 0.5)) = e^22.5, and ``log_reweighting["Eq. 2"]`` equals
    sγ(Ḡ_01 − Ḡ_0k) for every k. The fixed margin is the same for every negative, blind to which negative is
    hard; Eq. 2 is the per-pair margin the paper calls its adaptive generalisation of it (§2.2).

    Answer (b): a negative is left unresolved when its lead is smaller than the margin its loss asks for.
    The fixed margin asks every negative for m = 0.475. The twins lead by only 0.15, so (0, 1) and (1, 0) are
    unresolved, and so is every easy negative whose lead lies between about 0.3 and 0.475. Since the easy
    leads start at about 0.3, some usually do: ``unresolved["fixed"]`` lists them (the test checks that there
    are more entries than the two twin ones). Eq. 2 asks negative j for γḠ_ij. An easy negative is asked for less than
    0.5·0.5 = 0.25 and leads by about 0.3 or more, so it is resolved; the twin is asked for 0.475 and leads by
    0.15, so it is not. ``unresolved["Eq. 2"]`` is just [(0, 1), (1, 0)].

    The gradient share follows. In a row (or column) where a boosted negative beats the positive by many
    logits, that negative takes nearly all of the row's gradient, 1/(2B) per direction. Under Eq. 2 the twin's
    boosted gap is s(Δ − γḠ_01) = 100·(0.15 − 0.475) = −32.5 logits, so the twin takes nearly everything in
    rows 0, 1 and columns 0, 1, while the resolved easy negatives take almost nothing: ``twin_share["Eq. 2"]``
    is close to 1. Under the fixed margin, every row and column that holds an unresolved easy negative draws
    a share of the push too, so roughly
    ``twin_share["fixed"]`` ≈ 4 / (4 + the number of other rows and columns with an unresolved negative).
    To reach the twin, the fixed margin must also push on negatives that InfoNCE had already separated.
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

    Answer (prediction): the twin is a negative in two rows (images 0 and 1) and two columns (captions 0
    and 1). In each of these four cross-entropies the positive leads the twin by the boosted gap
    s(Δ − γḠ_01), and such a row's loss is ln(1 + e^(−gap) + …) ≈ e^(−gap) once the gap is large. The batch loss
    averages B rows per direction and halves the sum of the two directions, so L_HN ≈ (4/(2B))·e^(−gap) =
    (2/B)·e^(−gap). Setting that equal to the threshold gives gap = ln(2/(B·threshold)), that is
    γ = (Δ − ln(2/(B·threshold))/s) / Ḡ_01. With the batch's constructed Δ = 0.15 and Ḡ_01 = 0.95, B = 16,
    s = 100 and threshold 10⁻³: ln 125 ≈ 4.83, so γ ≈ (0.15 − 0.0483)/0.95 ≈ 0.107, far below the default
    0.5. The easy negatives add almost nothing: their leads of about 0.3 or more exceed their boosts of less
    than γ·0.5 by a wide margin at such a γ. The bisection's ``gamma`` should land within a few thousandths of
    ``predicted``, and a larger gap between the two would mean the easy negatives, or the approximation
    ln(1 + x) ≈ x, matter. The lesson: even a mild boost turns the "solved" batch back into a working one.
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
    p = 1 / (e^(sΔ) + B − 1) ≈ e^(−sΔ) (B − 1 = 15 is negligible beside e^(sΔ), 10⁶–10⁷ at the thresholds).
    Round-to-nearest makes a value 0 in fp16 when it is at most half the smallest subnormal, 2⁻²⁴/2 = 2⁻²⁵ (a
    tie rounds to the even value, 0).

    Answer (a): for one query's own loss ℓ_i (the row summed, not averaged) the gradient on a negative logit
    is p itself. It becomes exactly 0 from e^(sΔ) ≈ 2²⁵, that is sΔ = 25 ln 2 ≈ 17.3 logits, so Δ ≈ 0.173 at
    s = 100 (``predicted_row``). The rough estimate from 2⁻²⁴ ≈ 6·10⁻⁸ alone, ln(1/6·10⁻⁸) ≈ 16.6 (Δ ≈ 0.166,
    ``rough_row``), is ln 2/s too early, because it forgets the factor ½ of rounding to nearest.

    Answer (b): the symmetric batch loss averages B rows and halves the two directions, so each direction puts
    p/(2B) on the negative logit, and each half is computed and rounded in fp16 before the two are added. The
    gradient is exactly 0 once p/(2B) ≤ 2⁻²⁵, from sΔ = ln(2²⁵/(2B)) = 20 ln 2 ≈ 13.9 for B = 16, so Δ ≈ 0.139
    (``predicted_batch``). That is ln(2B)/s ≈ 0.035 earlier than (a): the larger the batch, the sooner its
    loss loses a solved negative. If ``measured_batch`` came out ln 2/s later than predicted, the two halves
    would have been added before rounding. Loss scaling (``GradScaler``, e.g. 2¹⁶) moves both thresholds out
    by 16 ln 2 ≈ 11.1 logits, but does not remove them.
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
