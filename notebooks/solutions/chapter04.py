"""Solutions to the exercises of chapter 4 (``notebooks/04_ablations.py``); arXiv 2608.18521 Table 3, Table A2,
Eq. 2, Eq. 4 and App. B.2.

Exercise 1 reads training results (the dictionaries ``exp.run`` returns), exercise 2 takes one batch of
features (``exp.first_training_batch()`` in the chapter), exercise 3 needs only the chapter's parameters.
``tests/test_exercises.py`` checks them against the package's losses, subset and batch drawing and schedule;
``python notebooks/solutions/chapter04.py`` prints them with the chapter's defaults and the paper's numbers
(the batch of exercise 2 is chapter 2's constructed one).
"""

from __future__ import annotations

import itertools
import math
import random
from collections.abc import Mapping, Sequence

import torch
import torch.nn.functional as F

from hnclip_core.losses import HNClipLoss
from hnclip_core.replication.paper import CAPTION_GEOMETRY

__all__ = ["margin_per_epoch", "applied_margins", "exercise1", "log_reweighting", "exercise2", "exercise3",
           "noise_win_share", "simulated_noise_wins", "seed_differences", "exercise4"]


def margin_per_epoch(mean_similarity: Sequence[float], logit_scale: float | Sequence[float], gamma: float,
                     frozen: bool) -> list[float]:
    """The mean logit margin s·γ·Ḡ a negative carries, per epoch.

    ``mean_similarity[e]`` is the mean off-diagonal caption similarity under the text encoder of epoch e
    (epoch 0: before fine-tuning); ``logit_scale`` is s, one value or one per epoch. A recomputed Ḡ follows
    the live encoder; a frozen one keeps the epoch-0 value for ever.
    """
    scales = [float(logit_scale)] * len(mean_similarity) if isinstance(logit_scale, int | float) else list(logit_scale)
    if len(scales) != len(mean_similarity):
        raise ValueError(f"{len(scales)} logit scales for {len(mean_similarity)} epochs")
    applied = [mean_similarity[0]] * len(mean_similarity) if frozen else list(mean_similarity)
    return [s * gamma * g for s, g in zip(scales, applied, strict=True)]


def applied_margins(run: Mapping, initial_logit_scale: float) -> dict:
    """Per epoch of one training result: the Ḡ its boost applied, s, and the margin s·γ·Ḡ.

    History row e carries ``caption_mean_similarity`` (test captions, encoder of epoch e) and, for e ≥ 1, the
    learned ``logit_scale`` at the end of the epoch; epoch 0 has none, so ``initial_logit_scale`` (the
    pre-trained model's s) stands in. A fixed s (``config["logit_scale"]``) overrides both. Approximations: the
    test split's mean Ḡ stands in for the batches' mean, and a frozen run's Ḡ in fact comes from its training
    captions under the initial encoder.
    """
    config, history = run["config"], run["history"]
    fixed = config.get("logit_scale")
    scales = [fixed or row.get("logit_scale", initial_logit_scale) for row in history]
    live = [row["caption_mean_similarity"] for row in history]
    frozen = config.get("margin_source") == "frozen"
    return {
        "epochs": [row["epoch"] for row in history],
        "mean_similarity": [live[0]] * len(live) if frozen else live,
        "logit_scale": scales,
        "margin": margin_per_epoch(live, scales, config["gamma"], frozen),
    }


def exercise1(runs: Mapping[str, Mapping] | None = None, initial_logit_scale: float = 100.0,
              s: float = 100.0, gamma: float = 0.5) -> dict:
    """What the frozen margin costs (Table 3c, App. B.2).

    ``paper_margin``: s·γ·Ḡ with DOCCI's mean Ḡ of 0.84 under Long-CLIP-L, γ = 0.5 and s = 100 — the
    sustained handicap of about 42 logits the paper names. For the chapter's ``source_runs`` (labels
    ``"recomputed"`` and ``"frozen"``): per run :func:`applied_margins`, ``relaxed`` (margin of epoch 0 minus
    that of the last epoch, in logits and as a share of epoch 0) and ``frozen_excess`` (how many more logits
    the frozen run asks for than the recomputed one after the last epoch).

    Answer (the paper's ≈ 42): s·γ·Ḡ = 100 × 0.5 × 0.84 = 42 logits (App. B.2, with DOCCI's mean pairwise
    caption similarity under Long-CLIP-L from Table A1 / Fig. A6). An average negative's logit is raised by
    42, so in cosine terms the positive must beat it by γḠ = 0.42. A frozen Ḡ keeps this handicap for the
    whole of training; ``paper_margin`` reproduces it.

    Answer (how far the recomputed margin relaxed, and how much more the frozen run demands): the margin of
    epoch e is s_e·γ·Ḡ_e. The recomputed run's ``relaxed["recomputed"]`` = margin₀ − margin_last, in logits
    and as a share of epoch 0. Its logarithm splits into the two causes,
    ln(margin₀/margin_last) = ln(s₀/s_last) + ln(Ḡ₀/Ḡ_last). A positive Ḡ term is App. B.2's implicit
    annealing: training separates the captions, Ḡ falls and the boost relaxes. The s term is the learned
    temperature moving. The frozen run's Ḡ stays at epoch 0's value, so its margin moves only with its own s,
    and ``relaxed["frozen"]`` shows that part alone. ``frozen_excess`` = s_last^frozen·γ·Ḡ₀ −
    s_last^recomputed·γ·Ḡ_last^recomputed is the extra margin the frozen run still asks for after its last
    epoch. Read the signs. A positive ``relaxed["recomputed"]`` and a positive ``frozen_excess`` are the
    paper's picture (a margin that relaxes against one that never does). A negative ``relaxed`` means that s
    grew faster than Ḡ fell, so the margin tightened. Set ``runs[label]["margin"][0]`` beside
    ``paper_margin``: where this benchmark's captions are less crowded than DOCCI's, the handicap, and with it
    the cost of freezing it, is smaller. Keep the approximations in mind (see :func:`applied_margins`): the
    test split's mean Ḡ stands in for the training batches'.
    """
    result: dict = {"paper_margin": s * gamma * CAPTION_GEOMETRY["DOCCI"]["mean_pairwise"]}
    if runs is None:
        return result
    per_run = {label: applied_margins(run, initial_logit_scale) for label, run in runs.items()}
    result["runs"] = per_run
    result["relaxed"] = {label: (m["margin"][0] - m["margin"][-1], 1 - m["margin"][-1] / m["margin"][0])
                         for label, m in per_run.items()}
    if {"recomputed", "frozen"} <= per_run.keys():
        result["frozen_excess"] = per_run["frozen"]["margin"][-1] - per_run["recomputed"]["margin"][-1]
    return result


def log_reweighting(v: torch.Tensor, t: torch.Tensor, s: float, gamma: float, query: int = 0) -> torch.Tensor:
    """Eq. 4 for one query: how L_HN changes the ratio of two negatives' posteriors relative to InfoNCE at the
    same s, ln[(p_qj / p_qk) / (p_qj / p_qk)_InfoNCE] for every negative j, against the reference negative k
    with the smallest caption similarity to the query. Equal to sγ(Ḡ_qj − Ḡ_qk): it depends on s·γ only."""
    S, G = v @ t.T, (t @ t.T).detach()
    negatives = [j for j in range(len(t)) if j != query]
    reference = min(negatives, key=lambda j: G[query, j].item())
    not_self = torch.arange(len(t), device=t.device) != query
    boosted = F.log_softmax(s * (S[query] + gamma * G[query] * not_self), dim=0)
    plain = F.log_softmax(s * S[query], dim=0)
    shift = boosted - plain
    return (shift - shift[reference])[negatives]


def exercise2(v: torch.Tensor, t: torch.Tensor,
              settings: Sequence[tuple[float, float]] = ((100.0, 0.5), (50.0, 1.0)), query: int = 0) -> dict:
    """s and γ are not interchangeable, though Eq. 4's re-weighting sees only their product.

    For each (s, γ) of ``settings``: ``loss`` = L_HN on the batch (``HNClipLoss``), ``loss_without_S`` =
    L_HN with the image features set to 0 (S = 0, only the boost left), and ``log_reweighting`` of ``query``'s
    negatives (:func:`log_reweighting`). At equal s·γ the re-weightings and the losses without S agree, the
    losses do not: L_HN's logits are sS + sγḠ, and s also sharpens the image–caption part. So App. B.2's
    "only through the product" holds for how the boost redistributes the gradient among negatives, not for
    the objective as a whole — which is why section (g) trains γ = 0 at every s as that s's own reference.

    Answer (a): L_HN is Eq. 1 on the logits sS + sγḠ. Both settings add the same boost, sγḠ = 50·Ḡ, but
    (50, 1) halves the image–caption part sS. In each row, a negative trails its positive by
    s(S_ii − S_ij) − sγḠ_ij logits, so halving s narrows every gap where the positive leads in cosine
    (S_ii > S_ij). Prediction: on a batch whose positives lead their negatives, as a pre-trained model's do,
    ``loss[(50, 1)]`` > ``loss[(100, 0.5)]``; where negatives lead, it is the other way round. In
    general the two losses differ, so the objective is not a function of s·γ.

    Answer (b): by Eq. 4, for two negatives j, k of query 0,
    (p_0j/p_0k) / (p_0j/p_0k)_InfoNCE = exp(sγ(Ḡ_0j − Ḡ_0k)), where InfoNCE is taken at the same s. Its S part
    cancels, so only s·γ = 50 is left. ``log_reweighting`` is therefore 50·(Ḡ_0j − Ḡ_0k) for both settings,
    identical up to rounding. This is App. B.2's "only through their product": how the boost redistributes
    the push among the negatives.

    Answer (c): with S = 0 the logits are sγḠ alone. Every positive's logit is 0, negative j's is sγḠ_ij, and
    the loss, ½ of the mean over rows plus the mean over columns of ln(1 + Σ_j≠i e^(sγḠ_ij)), depends on s·γ
    only. ``loss_without_S`` is the same for both settings, so the whole difference in (a) comes from sS.

    Answer (why (g) trains γ = 0 at every s): s is not only the boost's multiplier. It is InfoNCE's own
    inverse temperature, which decides how sharply S separates positives from negatives and how soon the loss
    saturates (a solved negative's gradient ≈ e^(−sΔ), chapter 2). (g) holds s fixed instead of learning it,
    so a run at (s, γ > 0) differs from one at (s′, 0) in the temperature as well as in the boost. The boost's
    own effect at a given s is what remains after subtracting InfoNCE trained at that same fixed s. This also
    makes the runs with equal s·γ a real test: if the boost acted through s·γ alone, their gains over their own
    references would agree, whatever each temperature does to InfoNCE.
    """
    result: dict = {"loss": {}, "loss_without_S": {}, "log_reweighting": {}}
    for s, gamma in settings:
        result["loss"][(s, gamma)] = HNClipLoss(gamma)(v, t, s).item()
        result["loss_without_S"][(s, gamma)] = HNClipLoss(gamma)(torch.zeros_like(v), t, s).item()
        result["log_reweighting"][(s, gamma)] = log_reweighting(v, t, s, gamma, query)
    return result


def exercise3(num_train_pairs: int = 2000, train_fraction: float = 0.25, micro_batch_size: int = 16,
              accumulation_steps: int = 8, epochs: int = 2, warmup_steps: int = 2) -> dict:
    """How many optimizer steps an ablation run takes, and the learning rate of each.

    The run trains on max(2, round(N·fraction)) pairs (the seeded subset), in effective batches of
    micro × accumulation pairs; the last partial batch of every epoch is dropped. The schedule is a linear
    warm-up over ``warmup_steps`` steps, lr factor (step + 1)/warmup, then a cosine decay to 0 over the
    remaining steps, factor ½(1 + cos(π·(step − warmup)/(total − warmup))).

    Answer (prediction): everything follows from the recipe. The chapter's ``scale = "reduced"`` means
    ``studies.SCALES["reduced"]``: 25 % of the data, 2 epochs, 2 warm-up steps. The default benchmark has
    2000 training pairs (500 families of four), and the effective batch is 16 × 8 = 128.

    * (a)–(c): round(2000·0.25) = 500 pairs, ⌊500/128⌋ = 3 steps per epoch, 500 − 3·128 = 116 pairs (23 %)
      left out of every epoch (a different 116 each epoch, since the permutation changes), 6 steps in all.
      The lr factors are 1/2 and 2/2 for the warm-up steps 0 and 1, then ½(1 + cos(π·k/4)) for k = 0…3:
      1, 0.854, 0.5, 0.146. The decay reaches 0 only at step 6, which is never taken.
    * (d) at batch 16 × 2 = 32: 5 % is 100 pairs, ⌊100/32⌋ = 3 steps per epoch with 4 left out, so again
      6 steps with the same factors. 25 % is 500 pairs, 15 steps per epoch with 20 left out, 30 steps whose
      decay runs over 28 of them.

    So a reduced-scale run of (a)–(c) takes only six optimizer steps, of which one third are warm-up: any
    difference between its configurations comes from very little training. At the full scale of
    ``make ablations`` (``SCALES["full"]``: all 2000 pairs, 3 epochs, 10 warm-up steps) it is 15 steps per
    epoch with 80 pairs left out, 45 in all. ``exercise3`` with these arguments returns the same numbers, and
    ``training_subset``, ``epoch_batches`` and ``cosine_with_warmup`` confirm them (``tests/test_exercises.py``).
    """
    pairs = max(2, round(num_train_pairs * train_fraction))
    batch = micro_batch_size * accumulation_steps
    steps = pairs // batch
    total = steps * epochs

    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        return 0.5 * (1 + math.cos(math.pi * min(1.0, (step - warmup_steps) / max(1, total - warmup_steps))))

    return {
        "pairs": pairs,
        "batch": batch,
        "steps_per_epoch": steps,
        "dropped_per_epoch": pairs - steps * batch,
        "total_steps": total,
        "lr_factors": [factor(step) for step in range(total)],
    }


def noise_win_share(threshold: float) -> float:
    """The share of pairs of runs of one configuration whose difference exceeds ``threshold`` σ in size.

    Each run is its configuration's mean plus N(0, σ²) noise, so the difference of two independent runs is
    N(0, 2σ²): P(|d| > kσ) = P(|Z| > k/√2) = 1 − erf(k/2)."""
    return 1.0 - math.erf(threshold / 2)


def simulated_noise_wins(threshold: float, pairs: int = 100_000, seed: int = 0) -> float:
    """:func:`noise_win_share` by drawing ``pairs`` pairs of N(0, 1) runs (σ = 1) with a seeded generator."""
    draw = random.Random(seed).gauss
    return sum(abs(draw(0, 1) - draw(0, 1)) > threshold for _ in range(pairs)) / pairs


def seed_differences(seed_runs: Mapping[str, Mapping[str, Mapping]]) -> dict[str, list[float]]:
    """For each method of the seeds study (e), the differences of last-epoch average R@1 between each two of its
    seeds (``seed_runs[seed][objective]`` a run)."""
    by_method: dict[str, dict[str, float]] = {}
    for seed, runs in seed_runs.items():
        for objective, run in runs.items():
            by_method.setdefault(objective, {})[seed] = run["last"]["mean_r1"]
    return {objective: [a - b for a, b in itertools.combinations(values.values(), 2)]
            for objective, values in by_method.items()}


def exercise4(seed_runs: Mapping[str, Mapping[str, Mapping]] | None = None, sigma: float | None = None) -> dict:
    """How often noise alone "wins" a comparison of two single runs, and why the chapter's rule is 2√2σ.

    Answer (a): two runs of one configuration differ by more than σ in 1 − erf(½) = 48 % of pairs, and by more
    than 2√2σ in 1 − erf(√2) = 4.6 %; 100,000 simulated pairs give the same to within a few tenths of a point.
    So a rule of "one σ" would call nearly every second pair of *identical* configurations a win or a loss.

    Answer (b): on the committed full grid (σ = 0.66, three seeds of InfoNCE and HN-CLIP), the six seed-to-seed
    differences are of the size √2σ ≈ 0.93 predicts: the seeds' noise is what σ measures, doubled in variance by
    taking a difference. (On the chapter's own reduced grid there are two seeds, one difference per method.)

    Answer (c): the rule compares a *difference* of two runs, whose spread is √2σ; "beyond twice that spread" is
    the usual two-sided 95 % line, which noise crosses in about one pair in twenty. Over several seeds the paired
    rule measures the spread of the difference itself (chapter 5), and needs no assumption that the two runs'
    noise is unrelated.
    """
    answer = {"beyond_sigma": noise_win_share(1.0), "beyond_2_root2_sigma": noise_win_share(2 * math.sqrt(2)),
              "simulated_beyond_sigma": simulated_noise_wins(1.0),
              "simulated_beyond_2_root2_sigma": simulated_noise_wins(2 * math.sqrt(2))}
    if seed_runs is not None:
        answer["seed_differences"] = seed_differences(seed_runs)
    if sigma is not None:
        answer["difference_spread"] = math.sqrt(2) * sigma
    return answer


if __name__ == "__main__":
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from chapter02_helpers import strong_init_batch

    print(f"Exercise 1: DOCCI's frozen margin s·γ·Ḡ = {exercise1()['paper_margin']:.0f} logits")
    v, t = strong_init_batch(seed=0)
    two = exercise2(v, t)
    for setting in two["loss"]:
        reweighting = two["log_reweighting"][setting]
        print(f"Exercise 2 (chapter 2's batch), (s, γ) = {setting}: L_HN {two['loss'][setting]:.4g}, "
              f"with S = 0 {two['loss_without_S'][setting]:.4g}, ln re-weighting of the twin {reweighting[0]:.3f}")
    for fraction, accumulation in ((0.25, 8), (0.05, 2), (0.25, 2)):
        three = exercise3(train_fraction=fraction, accumulation_steps=accumulation)
        factors = ", ".join(f"{f:.2f}" for f in three["lr_factors"])
        print(f"Exercise 3, {100 * fraction:g}% at batch {three['batch']}: {three['pairs']} pairs, "
              f"{three['steps_per_epoch']} steps per epoch ({three['dropped_per_epoch']} pairs dropped), "
              f"lr factors {factors}")
    four = exercise4()
    print(f"Exercise 4: pairs of one configuration beyond σ {100 * four['beyond_sigma']:.1f} % (simulated "
          f"{100 * four['simulated_beyond_sigma']:.1f} %), beyond 2√2σ {100 * four['beyond_2_root2_sigma']:.1f} % "
          f"(simulated {100 * four['simulated_beyond_2_root2_sigma']:.1f} %)")
