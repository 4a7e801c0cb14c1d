"""Chapter 3's own figures, measurements and sentences: the training loss of each objective, the first optimizer
steps of the package's trainer, the losses of the training micro-batches, the retrievals that changed (arXiv
2608.18521 Fig. 3, Fig. A10), and the sentences that read them.

Kept beside the notebooks (as rasbt keeps ``previous_chapters.py``): only chapter 3 uses them. The curves that
chapters 3–5 share (:func:`~hnclip_core.replication.plots.training.plot_convergence`, Fig. 5 / A9) stay in the
package.

By section of ``03_fine_tuning``:

* the training loop by hand: :func:`package_first_steps` — the weights after each of the first optimizer steps
  of :func:`hnclip_core.train.train`, which the chapter's own loop must reproduce; :func:`reading_the_loop`;
* §3: :func:`plot_training_losses` — what each objective still has to work on, epoch by epoch;
  :func:`epoch_micro_batches`, :func:`micro_batch_losses` and :func:`losses_table` — L_CLIP and L_HN of every
  micro-batch the trainer draws, epoch by epoch, under a fixed model, and the share of them "solved" (chapter 2's
  criterion); :func:`reading_the_convergence` and :func:`reading_the_losses`;
* §4, Fig. 3 / A10: :func:`plot_retrievals` — text→image retrievals of the two models side by side, for the
  queries :func:`hnclip_core.evaluate.retrieval_examples` picks by rule;
* the closing reading: :func:`family_ids`, :func:`own_family_top1` and :func:`reading_the_results`.

The ``reading_*`` functions word what the numbers say — which way a curve goes, which model is ahead — from the
numbers themselves, so that the chapter's prose stays true for another seed, backbone or dataset.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import textwrap
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import torch
from matplotlib.figure import Figure

from hnclip_core.frameworks import Framework
from hnclip_core.losses import SOLVED_LOSS_THRESHOLD, HNClipLoss
from hnclip_core.replication.plots.training import method_colour, method_name
from hnclip_core.replication.words import trend, turns
from hnclip_core.train import TrainConfig, epoch_batches, train

__all__ = [
    "package_first_steps", "reading_the_loop", "plot_training_losses", "epoch_micro_batches", "micro_batch_losses",
    "losses_table", "reading_the_convergence", "reading_the_losses", "plot_retrievals", "family_ids",
    "own_family_top1", "reading_the_results",
]

#: Points of Recall@1 below which two recalls read as "level with" each other: equal up to float rounding (one query
#: of a 1,000-pair split moves a recall by 0.1).
SAME_RECALL = 0.005
#: A gain within this share of the paper's is "about as much as" the paper's; beyond it, "more" or "less".
ABOUT_AS_MUCH = 0.25


# ---------------------------------------------------------------------------------------------- the loop by hand
class _StopTraining(Exception):
    """Ends a :func:`package_first_steps` run once its steps are recorded."""


class _FirstSteps(Framework):
    """Plain Long-CLIP fine-tuning (the trainer's default framework) that records the model's parameters after
    each optimizer step and stops the run after ``steps`` of them."""

    def __init__(self, steps: int):
        super().__init__()
        self.steps = steps
        self.weights: list[dict[str, torch.Tensor]] = []

    def after_optimizer_step(self, model: torch.nn.Module) -> None:
        self.weights.append({name: p.detach().cpu().clone() for name, p in model.named_parameters()})
        if len(self.weights) == self.steps:
            raise _StopTraining


def package_first_steps(config: TrainConfig, steps: int) -> list[dict[str, torch.Tensor]]:
    """The parameters of the model after each of the first ``steps`` optimizer steps of
    :func:`hnclip_core.train.train` on ``config``: ``[{name: tensor}, ...]``.

    The run is the trainer's own — same seed, data order, accumulation, optimizer and schedule — observed through
    its :class:`~hnclip_core.train.TrainingHooks` and stopped after the last recorded step. It writes nothing
    (no ``output_dir``) and skips the epoch-0 evaluation (an empty one is passed: the run never reports it).
    """
    hooks = _FirstSteps(steps)
    with contextlib.suppress(_StopTraining):
        train(dataclasses.replace(config, output_dir=None, resume=False, progress=False), zero_shot={}, hooks=hooks)
    return hooks.weights


def reading_the_loop(log: Sequence[dict], differences: Sequence[float], warmup_steps: int, lr: float,
                     objective: str) -> str:
    """The sentence under the chapter's hand-written loop of ``objective`` (its short name): the learning rate and
    loss of each step, and how far its weights are from the trainer's (``differences``: the largest absolute
    difference after each step)."""
    first, last = log[0], log[-1]
    text = (f"**What you see.** The loop ran {len(log)} optimizer steps of {len(first['micro_losses'])} micro-batches "
            f"each. Step 1 runs at lr {first['lr']:.3g}")
    if len(log) > 1:
        text += f", step {len(log)} at {last['lr']:.3g}"
    text += (f" — the linear warm-up, which reaches the full rate {lr:g} at step {warmup_steps}"
             if len(log) < warmup_steps else "")
    text += (f". The mean micro-batch loss ({method_name(objective)}) is {first['loss']:.3f} at step 1"
             + (f" and {last['loss']:.3f} at step {len(log)} (each step draws a new effective batch, so "
                f"{len(log)} values say nothing yet about a trend)" if len(log) > 1 else "")
             + ". After every step the weights equal those of `hnclip_core.train` on the same steps: ")
    worst = max(differences)
    text += ("bit for bit." if worst == 0 else
             f"up to float rounding (largest difference {worst:.1e}; `assert_close` passed).")
    return text


# ---------------------------------------------------------------------------------------------- §3: the losses
def plot_training_losses(results: dict[str, dict]) -> Figure:
    """Mean training loss per epoch of each run (log scale): what each objective optimises, side by side.

    ``results`` maps an objective (``"clip"``, ``"hn+tok"``, ...) to its training result; the legend gives the
    paper's names (InfoNCE, HN-CLIP)."""
    fig = Figure(figsize=(5.6, 3.4))
    ax = fig.subplots()
    for index, (label, result) in enumerate(results.items()):
        rows = [h for h in result["history"] if h["epoch"] >= 1]
        ax.plot([h["epoch"] for h in rows], [h["train_loss"] for h in rows], marker="o",
                color=method_colour(label, index), label=method_name(label))
    ax.set_yscale("log")
    ax.set_xlabel("fine-tuning epoch")
    ax.set_ylabel("mean training loss per step")
    ax.set_xticks(np.arange(1, max(len(r["history"]) for r in results.values())))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    return fig


def epoch_micro_batches(config: TrainConfig, num_pairs: int, epoch: int = 1) -> list[torch.Tensor]:
    """The micro-batches the trainer draws in ``epoch`` (indices into its training set), in order."""
    size = config.micro_batch_size
    return [batch[i : i + size] for batch in epoch_batches(num_pairs, config.effective_batch_size, config.seed, epoch)
            for i in range(0, len(batch), size)]


def micro_batch_losses(image_features: torch.Tensor, text_features: torch.Tensor, micro_batches: Sequence[torch.Tensor],
                       logit_scale: float, gamma: float) -> dict[str, torch.Tensor]:
    """L_CLIP (Eq. 1) and L_HN (Eq. 2, boost ``gamma``) of every micro-batch as a contrastive batch of its own (the
    naive reading of accumulation), from L2-normalised features of the training set: ``{"clip": ..., "hn": ...}``."""
    losses = {"clip": HNClipLoss(gamma=0.0), "hn": HNClipLoss(gamma=gamma)}
    with torch.no_grad():
        return {name: torch.tensor([loss(image_features[rows], text_features[rows], logit_scale).item()
                                    for rows in micro_batches]) for name, loss in losses.items()}


def _solved(losses: torch.Tensor) -> float:
    return (losses < SOLVED_LOSS_THRESHOLD).float().mean().item()


def _span(values: Sequence[float], fmt: str, times: str = "") -> str:
    """``low–high`` of ``values`` in ``fmt`` (one number when they print alike); ``times`` prefixes each (``×``)."""
    low, high = format(min(values), fmt), format(max(values), fmt)
    return f"{times}{low}" if low == high else f"{times}{low}–{times}{high}"


def _epoch_means(losses: dict[int, dict[str, torch.Tensor]], loss: str) -> list[float]:
    return [losses[epoch][loss].mean().item() for epoch in sorted(losses)]


def losses_table(results: dict[str, dict], baseline: str, method: str,
                 losses: dict[str, dict[int, dict[str, torch.Tensor]]], zero_shot: str) -> str:
    """Markdown, one row per epoch: each run's training loss beside the losses of that epoch's micro-batches under
    fixed models — the zero-shot one and the run's own model after its last epoch (→).

    ``losses[label][epoch]`` is :func:`micro_batch_losses` of the epoch's micro-batches under the model ``label``
    (``zero_shot``, or the paper's name of ``baseline`` / ``method``)."""
    b_name, m_name = method_name(baseline), method_name(method)
    train_loss = {o: {h["epoch"]: h["train_loss"] for h in results[o]["history"] if h["epoch"] >= 1}
                  for o in (baseline, method)}
    lines = [f"| epoch | {b_name}: training loss | mean L_CLIP: zero-shot → {b_name} | solved by L_CLIP: zero-shot → "
             f"{b_name} | {m_name}: training loss | mean L_HN: zero-shot → {m_name} | solved by L_HN: zero-shot → "
             f"{m_name} |", "|---|---|---|---|---|---|---|"]
    for epoch in sorted(losses[zero_shot]):
        start, base, ours = losses[zero_shot][epoch], losses[b_name][epoch], losses[m_name][epoch]
        lines.append(
            f"| {epoch} | {train_loss[baseline][epoch]:.2g} | {start['clip'].mean():.2g} → {base['clip'].mean():.2g} | "
            f"{100 * _solved(start['clip']):.0f} % → {100 * _solved(base['clip']):.0f} % | "
            f"{train_loss[method][epoch]:.3g} | {start['hn'].mean():.3g} → {ours['hn'].mean():.3g} | "
            f"{100 * _solved(start['hn']):.0f} % → {100 * _solved(ours['hn']):.0f} % |")
    return "\n".join(lines)


def reading_the_convergence(results: dict[str, dict], baseline: str, method: str) -> str:
    """The sentence under Fig. 5 / A9: where each run's average R@1 goes from zero-shot, which one leads in which
    epochs and directions."""
    base = [h for h in results[baseline]["history"]]
    ours = [h for h in results[method]["history"]]
    zero = base[0]["mean_r1"]
    b_name, m_name = method_name(baseline), method_name(method)

    def course(history, name):
        first, last = history[1]["mean_r1"], history[-1]["mean_r1"]
        move = "rises" if first > zero + SAME_RECALL else "falls" if first < zero - SAME_RECALL else "stays"
        text = f"{name} {move} {'to' if move != 'stays' else 'at'} {first:.1f} in epoch 1 ({first - zero:+.1f})"
        if len(history) > 2:
            then = ("rises" if last > first + SAME_RECALL else "falls" if last < first - SAME_RECALL else "stays")
            further = " further" if then == move != "stays" else ""
            text += (f", then {then}{further} {'to' if then != 'stays' else 'near'} {last:.1f} by epoch "
                     f"{history[-1]['epoch']}")
            text += (" — above" if last > zero + SAME_RECALL else " — below" if last < zero - SAME_RECALL
                     else " — level with") + " zero-shot"
        return text

    epochs = range(1, len(ours))
    ahead = [e for e in epochs if ours[e]["mean_r1"] - base[e]["mean_r1"] > SAME_RECALL]
    both_directions = [e for e in epochs if all(ours[e][k] - base[e][k] > SAME_RECALL for k in ("t2i_r1", "i2t_r1"))]
    text = (f"**What you see.** From {zero:.1f} average R@1 (zero-shot), {course(base, b_name)}; "
            f"{course(ours, m_name)}. ")
    drop_base, drop_ours = base[1]["mean_r1"] - zero, ours[1]["mean_r1"] - zero
    if drop_base < -SAME_RECALL and drop_ours < -SAME_RECALL:
        text += (f"Both lose retrieval in epoch 1, {b_name if drop_base < drop_ours else m_name} more. "
                 if abs(drop_base - drop_ours) > SAME_RECALL else "Both lose about as much in epoch 1. ")
    gaps = ", ".join(f"{ours[e]['mean_r1'] - base[e]['mean_r1']:+.1f}" for e in epochs)
    if len(ahead) == len(epochs):
        text += f"{m_name} is ahead of {b_name} in every epoch"
        if len(both_directions) == len(epochs):
            text += f", in both retrieval directions ({gaps} points of average R@1 by epoch)."
        else:
            misses = [f"{_versus(ours[e][key] - base[e][key], 'ahead of', 'behind', 'level with')} it in {label} in "
                      f"epoch {e}" for e in epochs for key, label in (("t2i_r1", "T→I"), ("i2t_r1", "I→T"))
                      if ours[e][key] - base[e][key] <= SAME_RECALL]
            text += f" on average ({gaps} points by epoch), but {', '.join(misses)}."
    elif not ahead:
        text += f"{m_name} is not ahead of {b_name} in any epoch ({gaps} points of average R@1 by epoch)."
    else:
        text += (f"{m_name} is ahead of {b_name} in epoch{'s' if len(ahead) > 1 else ''} "
                 f"{', '.join(map(str, ahead))} of {len(epochs)} ({gaps} points of average R@1 by epoch).")
    return text + (" One seed is one draw: whether leads of this size are more than another seed would give is read "
                   "against the seed spread σ in chapter 5.")


def reading_the_losses(results: dict[str, dict], baseline: str, method: str,
                       losses: dict[str, dict[int, dict[str, torch.Tensor]]], zero_shot: str) -> str:
    """The sentences under the loss curves: which way each goes, how much of that the batches explain (the fixed
    zero-shot model scores every epoch's micro-batches), and what the saturation of InfoNCE and the margin of L_HN
    do. ``losses`` as for :func:`losses_table`."""
    b_name, m_name = method_name(baseline), method_name(method)
    curve = {o: [h["train_loss"] for h in results[o]["history"] if h["epoch"] >= 1] for o in (baseline, method)}
    epochs = len(curve[baseline])
    trends = {o: trend(values) for o, values in curve.items()}

    def said(objective, name, fmt):
        first, last = curve[objective][0], curve[objective][-1]
        if epochs == 1:
            return f"{name}'s is {first:{fmt}} in its one epoch"
        numbers = f"{first:{fmt}} in epoch 1 to {last:{fmt}} in epoch {epochs}"
        if trends[objective] == "stays level":
            return f"{name}'s stays level ({numbers.replace(' to ', ', ')})"
        return f"{name}'s {trends[objective]} from {numbers}{turns(curve[objective], at='in epoch ')}"

    yard_clip, yard_hn = _epoch_means(losses[zero_shot], "clip"), _epoch_means(losses[zero_shot], "hn")
    after_clip, after_hn = _epoch_means(losses[b_name], "clip"), _epoch_means(losses[m_name], "hn")
    threshold = f"{SOLVED_LOSS_THRESHOLD:g}"
    text = [f"**What you see.** Of the mean training losses, {said(baseline, b_name, '.2g')}; "
            f"{said(method, m_name, '.3g')}."]

    batches_move = epochs > 1 and any(max(yard) > 1.1 * min(yard) for yard in (yard_clip, yard_hn))
    if epochs > 1:
        listed = (f"mean L_CLIP {', '.join(f'{v:.2g}' for v in yard_clip)} and mean L_HN "
                  f"{', '.join(f'{v:.3g}' for v in yard_hn)} in epochs 1–{epochs}")
        if batches_move:
            text.append("Some of what the curves do is the batches, not the model: every epoch reshuffles the pairs "
                        "into new micro-batches, and even the fixed zero-shot model scores them differently "
                        f"({listed}).")
        else:
            text.append("The batches explain little of the curves: every epoch reshuffles the pairs into new "
                        f"micro-batches, but the fixed zero-shot model scores them much alike ({listed}).")

    solved0 = _solved(losses[zero_shot][1]["clip"])
    count = sum(len(losses[zero_shot][e]["clip"]) for e in losses[zero_shot])
    during = [loss / yard for loss, yard in zip(curve[baseline], yard_clip, strict=True)]
    during_all, after_all = sum(curve[baseline]) / sum(yard_clip), sum(after_clip) / sum(yard_clip)
    if solved0 > 0.5:
        text.append(
            f"{b_name} starts saturated — the zero-shot model already solves {100 * solved0:.0f} % of epoch 1's "
            f"micro-batches (L_CLIP < {threshold}, chapter 2's criterion) — so its gradient comes from the few "
            "unsolved ones, and Adam, which scales every parameter's step to the learning rate whatever the "
            "gradient's size, moves weights that all pairs share.")
    else:
        share = f"only {100 * solved0:.0f} %" if round(100 * solved0) else "none"
        text.append(f"Before the first step the zero-shot model solves {share} of epoch 1's micro-batches for "
                    f"{b_name} (L_CLIP < {threshold}): it starts with most of them left to learn.")
    ratios = (f"{_span(during, '.1f', '×')} by epoch, ×{during_all:.2f} over all {count}" if epochs > 1 else
              f"×{during_all:.2f}")
    every = "In every epoch" if epochs > 1 else "In its one epoch"
    if all(r > 1 for r in during):
        text.append(f"{every} its training loss is above the zero-shot model's on the same micro-batches "
                    f"({ratios}): the model in motion is worse at its own objective than where it started.")
    elif all(r < 1 for r in during):
        text.append(f"{every} its training loss is below the zero-shot model's on the same micro-batches "
                    f"({ratios}): it learns as it goes.")
    else:
        above = [str(e + 1) for e, r in enumerate(during) if r > 1]
        text.append(f"Its training loss is above the zero-shot model's on the same micro-batches in epoch"
                    f"{'s' if len(above) > 1 else ''} {', '.join(above)} of {epochs} ({ratios}).")
    if abs(after_all - 1) <= 0.1:
        end = f"is back near the start on the same micro-batches (×{after_all:.2f})"
    elif after_all > 1:
        end = (f"is still above the start on the same micro-batches (×{after_all:.2f})"
               + (", though below the model in motion" if after_all < during_all else ""))
    else:
        end = f"is below the start on the same micro-batches (×{after_all:.2f})"
    cause = ("the batches and " if batches_move else "") + "the weights in motion"
    if trends[baseline] == "rises" and after_all <= 1.1:
        end += f", so the curve's rise comes from {cause}, not from a worse end point"
    elif trends[baseline] == "rises" and after_all < during_all:
        end += f": the curve's rise comes more from {cause} than from the end point"
    text.append(f"The {b_name} model after its last epoch {end}.")

    hn_start = torch.cat([losses[zero_shot][e]["hn"] for e in sorted(losses[zero_shot])])
    active, total = int((hn_start >= SOLVED_LOSS_THRESHOLD).sum()), len(hn_start)
    reduced = np.mean(after_hn) < np.mean(yard_hn)
    text.append(
        f"L_HN, by contrast, is at or above {threshold} on " + (f"all {total}" if active == total else
                                                                 f"{active} of the {total}")
        + " micro-batches under the zero-shot model: its margin γḠ raises the logits of the negatives whose captions "
        "resemble the query's and leaves a loss to reduce on "
        + ("nearly every batch" if active > 0.9 * total else "many batches" if active > total / 2 else "some batches")
        + f", and the {m_name} model after training has " + ("reduced" if reduced else "not reduced")
        + f" it (mean L_HN {_span(after_hn, '.3g')} on the same micro-batches, against {_span(yard_hn, '.3g')} for "
        f"the zero-shot model). {m_name}'s training loss also holds L_tok, which the table leaves out, and stays "
        + ("far above" if min(curve[method]) > 10 * max(curve[baseline]) else "above" if min(curve[method]) >
           max(curve[baseline]) else "on another scale than") + " InfoNCE's.")
    return " ".join(text)


# ---------------------------------------------------------------------------------------------- §4: retrievals
def plot_retrievals(examples: dict, pairs: Sequence) -> Figure:
    """Fig. 3 / A10: text→image retrievals of several models side by side, the ground truth framed in green.

    ``examples`` is :func:`hnclip_core.evaluate.retrieval_examples`'s result and ``pairs`` the test split's
    :class:`~hnclip_core.data.ImageCaptionPair` list it was computed on (query ``q`` is caption ``q``, whose
    ground truth is image ``q``). Rows are labelled with the model names ``examples`` uses: chapter 3 keys the
    features by the paper's names.
    """
    models = list(examples["top"])
    queries = examples["queries"]
    if not queries:
        fig = Figure(figsize=(6, 1.2))
        ax = fig.subplots()
        ax.axis("off")
        ax.text(0.5, 0.5, "no query's ground-truth rank differs between the models", ha="center", va="center")
        return fig
    k = len(examples["top"][models[0]][0])
    rows = max(1, len(queries) * len(models))
    fig = Figure(figsize=(1.45 * k + 3.4, 1.5 * rows + 0.3))
    grid = fig.add_gridspec(rows, k + 1, width_ratios=[2.2] + [1] * k, wspace=0.06, hspace=0.12,
                            left=0.01, right=0.99, top=0.98, bottom=0.02)
    for q_index, (query, title) in enumerate(zip(queries, examples["titles"], strict=True)):
        text_ax = fig.add_subplot(grid[q_index * len(models) : (q_index + 1) * len(models), 0])
        text_ax.axis("off")
        caption = textwrap.shorten(pairs[query].caption, 260, placeholder=" …")
        text_ax.text(0, 1, textwrap.fill(f"[{title}] query {query}: {caption}", 34), va="top", fontsize=6.5)
        for m, model in enumerate(models):
            row = q_index * len(models) + m
            for c, gallery_index in enumerate(examples["top"][model][q_index]):
                ax = fig.add_subplot(grid[row, c + 1])
                ax.imshow(pairs[gallery_index].load_image())
                ax.set_xticks([])
                ax.set_yticks([])
                hit = gallery_index == query
                for spine in ax.spines.values():
                    spine.set_edgecolor("#2ca02c" if hit else "#dddddd")
                    spine.set_linewidth(4 if hit else 1)
                if c == 0:
                    ax.set_ylabel(f"{model}\nGT rank {examples['ranks'][model][q_index]}", fontsize=7)
    return fig


# ---------------------------------------------------------------------------------------------- the reading
def family_ids(pairs: Sequence) -> list[str] | None:
    """Each pair's near-twin family (the ``family_id`` the synthetic benchmark's generator records in
    ``synthetic_metadata.jsonlines``, beside its ``images/`` folder), or None for a benchmark that records none
    (DOCCI and the other real ones)."""
    from hnclip_core.toy.synthetic import METADATA_FILE

    if not pairs:
        return None
    path = Path(pairs[0].image_path).parent.parent / METADATA_FILE
    if not path.is_file():
        return None
    rows = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            rows[row["example_id"]] = row["family_id"]
    return [rows[Path(pair.image_path).stem] for pair in pairs]


def own_family_top1(image_features: torch.Tensor, text_features: torch.Tensor, families: Sequence[str]) -> float:
    """Share of text→image queries whose best-scoring image belongs to the query's own family (itself or a twin)."""
    codes = {family: code for code, family in enumerate(dict.fromkeys(families))}
    family = torch.tensor([codes[f] for f in families])
    top = (text_features.float() @ image_features.float().T).argmax(dim=1).cpu()
    return (family[top] == family).float().mean().item()


def _versus(delta: float, ahead: str = "ahead of", behind: str = "behind", level: str = "level with") -> str:
    return ahead if delta > SAME_RECALL else behind if delta < -SAME_RECALL else level


def reading_the_results(rows: dict[str, dict], baseline: str, method: str, paper_r1: dict[str, float],
                        family_share: dict[str, float] | None, families: Sequence[str] | None,
                        num_test_pairs: int, num_train_pairs: int, is_toy: bool) -> str:
    """The closing paragraph of the chapter, worded from the table's rows.

    ``rows`` maps ``"zero-shot"`` and the paper's names of ``baseline`` and ``method`` to last-epoch recall rows;
    ``paper_r1`` maps ``"zero-shot"``, ``baseline`` and ``method`` to the paper's DOCCI average R@1 (Table 1);
    ``family_share`` maps the same labels as ``rows`` to :func:`own_family_top1` and ``families`` gives each test
    pair's family (both None where the benchmark records none); ``num_test_pairs`` and ``num_train_pairs`` are the
    sizes of the test split and the training set; ``is_toy`` adds the reading that only holds for the embedded toy.
    """
    b_name, m_name = method_name(baseline), method_name(method)
    zero, base, ours = rows["zero-shot"]["mean_r1"], rows[b_name]["mean_r1"], rows[m_name]["mean_r1"]
    parts = ["Three things to read off the table, next to the paper's DOCCI rows:", ""]

    r5 = min(row[f"{d}_r5"] for row in rows.values() for d in ("t2i", "i2t"))
    if families is not None and family_share is not None:
        sizes = Counter(Counter(families).values())
        size = max(sizes, key=sizes.get)
        shape = (f"{len(set(families))} families of {size} near-twins" if len(sizes) == 1 else
                 f"{len(set(families))} families of near-twins (most of {size})")
        share0 = family_share["zero-shot"]
        parts.append(
            f"* **Chance and the ceiling.** The test split has {num_test_pairs} pairs in {shape}. R@5 is at least "
            f"{r5:.1f} % for every model: the zero-shot model's top-1 image is in the caption's own family for "
            f"{100 * share0:.0f} % of queries ({b_name}: {100 * family_share[b_name]:.0f} %, {m_name}: "
            f"{100 * family_share[m_name]:.0f} %), so Recall@1 "
            + ("measures mostly" if share0 > 0.8 else "measures in part")
            + f" the choice *inside* a family, where guessing gives {100 / size:.0f} %. The zero-shot model's "
            f"{zero:.1f} % average R@1 is that choice made "
            + ("well above chance" if zero > 100 / size + 10 else "above chance" if zero > 100 / size else "at chance")
            + f", and the {100 - zero:.1f} points above it are what fine-tuning can still gain.")
    else:
        parts.append(f"* **Chance and the ceiling.** A random ranking of the {num_test_pairs} test images gives R@1 = "
                     f"{100 / num_test_pairs:.2g} %; R@5 is at least {r5:.1f} % for every model.")

    gain, paper_gain = ours - base, paper_r1[method] - paper_r1[baseline]
    if gain > SAME_RECALL:
        size_word = ("about as much as" if abs(gain - paper_gain) <= ABOUT_AS_MUCH * abs(paper_gain) else
                     "more than" if gain > paper_gain else "less than")
        parts.append(
            f"* **HN-CLIP vs InfoNCE, at this seed.** With the same data, batches and schedule, {m_name} ends ahead "
            f"of {b_name} by {gain:.1f} points of average R@1, {size_word} the paper's {paper_gain:+.1f} on DOCCI; "
            "section 3 shows in which epochs. This is one seed: whether the claim reproduces is the scorecard's "
            "verdict, over every seed and against the seed spread (chapter 5).")
    else:
        parts.append(
            f"* **HN-CLIP vs InfoNCE, at this seed.** {m_name} ends {_versus(gain)} {b_name} "
            f"({gain:+.1f} points of average R@1; the paper: {paper_gain:+.1f} on DOCCI). This is one seed: whether "
            "the claim reproduces is the scorecard's verdict, over every seed and against the seed spread "
            "(chapter 5).")

    paper_base, paper_ours = paper_r1[baseline] - paper_r1["zero-shot"], paper_r1[method] - paper_r1["zero-shot"]
    above = {name: value - zero for name, value in ((b_name, base), (m_name, ours))}
    paper_said = (f"the paper's fine-tuning gains {paper_base:.1f} ({b_name}) and {paper_ours:.1f} ({m_name}) points "
                  "over Long-CLIP-L on DOCCI")
    if all(v > SAME_RECALL for v in above.values()):
        parts.append(
            f"* **Against the zero-shot model.** Both fine-tuned models end above it "
            f"({b_name} {above[b_name]:+.1f}, {m_name} {above[m_name]:+.1f} points), as {paper_said}"
            + (f"; {m_name} gains more." if above[m_name] > above[b_name] + SAME_RECALL else "."))
    elif all(v < -SAME_RECALL for v in above.values()):
        text = (f"* **Against the zero-shot model.** Both fine-tuned models end *below* it "
                f"({b_name} {above[b_name]:+.1f}, {m_name} {above[m_name]:+.1f} points), whereas {paper_said}.")
        if above[m_name] > above[b_name] + SAME_RECALL:
            text += (f" {m_name} loses less: here the boost limits the damage fine-tuning does, rather than adding to "
                     "what it learns.")
        if is_toy:
            text += (" One reading: Long-CLIP-L meets DOCCI with a domain gap that fine-tuning closes; the toy was "
                     f"pretrained on the same kind of scenes and every content word, so {num_train_pairs:,} in-domain "
                     "pairs add little it lacks, while each Adam step still moves every weight. `results/README.md` "
                     "shows the learning-rate sweep behind the toy's preset.")
        parts.append(text)
    else:
        winner = m_name if above[m_name] > above[b_name] else b_name
        loser = b_name if winner == m_name else m_name
        where = {name: _versus(above[name], "above", "below") for name in above}
        parts.append(
            f"* **Against the zero-shot model.** {winner} ends {where[winner]} the zero-shot model "
            f"({above[winner]:+.1f} points), {loser} {where[loser]} it ({above[loser]:+.1f}); {paper_said}.")
    return "\n".join(parts)
