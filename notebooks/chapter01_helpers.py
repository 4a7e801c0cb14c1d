"""Chapter 1's own helpers: one batch's Ḡ, the near-twin pairs, and the chapter's figures (arXiv 2608.18521
§2.1, Fig. 1, App. A.1–A.4).

Kept beside the notebooks (as rasbt keeps ``previous_chapters.py``): chapter 1 and its exercise solutions use
them, nothing else does. The whole-split statistics that calibration also needs — :func:`encode_captions`,
:func:`caption_similarity_stats`, :func:`in_batch_hardness` — stay in :mod:`hnclip_core.replication.geometry`.

By section of ``01_caption_geometry``:

* §2, Fig. 1 / Table A1: :func:`plot_caption_similarity` (pairwise and hardest-companion histograms);
* §3, Fig. A5: :func:`batch_caption_matrix`, :func:`off_diagonal_mean`, :func:`plot_batch_matrix` (Ḡ of one batch);
* §2's and §4's readings: :func:`reading_the_geometry`, :func:`reading_the_batches` (one short template per
  paragraph, words chosen by the numbers; ``tests/test_chapter01_helpers.py`` perturbs them);
* §4, Fig. A6C: :func:`plot_hardness_buckets` (in-batch negatives by hardness bucket);
* §6: :data:`REAL_CLIP_GEOMETRY`, :func:`plot_cone`, :func:`reading_the_cone` (the common direction that crowds the
  captions, and the modality gap across which images meet them);
* §5, Fig. A1–A4: :func:`near_duplicate_pairs`, :func:`differing_phrases`, :func:`plot_near_twins`,
  :func:`near_twin_html` (what near-twins look like, and where they differ); :func:`plot_cameras` (the embedded
  benchmark's scenes through the pretraining world's camera and through its own).

The figures are plain :class:`matplotlib.figure.Figure` objects (no pyplot), shown with
:func:`hnclip_core.replication.plots.show`.
"""

from __future__ import annotations

import difflib
import html
import math
import re
import textwrap
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

import matplotlib
import numpy as np
import torch
from matplotlib.figure import Figure

from hnclip_core.losses import caption_margin
from hnclip_core.replication.geometry import CaptionGeometry, InBatchHardness, caption_similarity_stats
from hnclip_core.replication.paper import CAPTION_GEOMETRY
from hnclip_core.replication.words import most_or_few
from hnclip_core.toy.synthetic import render_scene

__all__ = [
    "REAL_CLIP_GEOMETRY", "plot_cone", "reading_the_cone", "the_toys_cone",
    "STOPWORDS", "NearDuplicate", "batch_caption_matrix", "off_diagonal_mean", "content_words",
    "near_duplicate_pairs", "differing_phrases", "plot_caption_similarity", "plot_batch_matrix",
    "plot_hardness_buckets", "plot_near_twins", "near_twin_html", "plot_cameras", "camera_parts",
    "against_range", "crowding", "reading_the_geometry", "TwinsInBatches", "reading_the_batches",
]

#: English function words left out when comparing captions' content words (App. A.3, Fig. A1–A4
#: highlight the *content* words two near-duplicate captions share).
STOPWORDS = frozenset(
    """
    a an the and or but nor so yet if then than that this these those there here
    is are was were be been being am has have had having do does did doing will would shall should
    can could may might must
    i me my we us our you your he him his she her it its they them their what which who whom whose
    of in on at by for with from to into onto off out up down over under about as
    not no only also just very too more most some any all each both few other such own same
    while when where why how again further once
    """.split()
)


def _features(text_features: torch.Tensor) -> torch.Tensor:
    """``text_features`` as a detached float ``[N, D]`` tensor of at least two captions (else ValueError)."""
    if text_features.dim() != 2:
        raise ValueError(f"text_features must be [N, D], got shape {tuple(text_features.shape)}")
    if text_features.shape[0] < 2:
        raise ValueError(f"need at least 2 captions, got {text_features.shape[0]}")
    return text_features.detach().float()


# --------------------------------------------------------------------------------------------------------
# §3: one batch (Fig. A5)
# --------------------------------------------------------------------------------------------------------


@torch.no_grad()
def batch_caption_matrix(
    text_features: torch.Tensor, batch_size: int = 8, seed: int = 0
) -> tuple[torch.Tensor, torch.Tensor]:
    """Ḡ of one random batch: the matrix HN-CLIP adds (scaled by γ) to the logits (App. A.2, Fig. A5).

    Returns ``(indices, matrix)``: the ``batch_size`` caption indices drawn without replacement (in draw
    order, deterministic given ``seed``) and their ``[B, B]`` caption-similarity matrix with the diagonal
    masked to 0, built by :func:`hnclip_core.losses.caption_margin` with γ = 1, exactly as the loss builds it.
    The paper's B = 8 batches have off-diagonal means 0.82–0.84 on all four benchmarks
    (:func:`off_diagonal_mean`).
    """
    features = _features(text_features)
    if batch_size > features.shape[0]:
        raise ValueError(f"batch_size {batch_size} exceeds the number of captions {features.shape[0]}")
    indices = torch.randperm(features.shape[0], generator=torch.Generator().manual_seed(seed))[:batch_size]
    batch = features[indices.to(features.device)]
    return indices, caption_margin(batch, batch, gamma=1.0).cpu()


def off_diagonal_mean(matrix: torch.Tensor) -> float:
    """Mean of a square matrix's off-diagonal entries (the statistic quoted for Fig. A5)."""
    size = matrix.shape[0]
    off_diagonal = ~torch.eye(size, dtype=torch.bool, device=matrix.device)
    return float(matrix[off_diagonal].double().mean())


# --------------------------------------------------------------------------------------------------------
# §5: what near-duplicates look like (App. A.3, Fig. A1–A4)
# --------------------------------------------------------------------------------------------------------


def content_words(caption: str) -> list[str]:
    """The caption's distinct content words in order of first appearance.

    Lowercased, split at anything that is not a letter or digit (so punctuation is stripped and "car's"
    gives "car"), without :data:`STOPWORDS` and without single letters.
    """
    words = re.findall(r"[^\W_]+", caption.lower())
    kept = (w for w in words if w not in STOPWORDS and not (len(w) == 1 and w.isalpha()))
    return list(dict.fromkeys(kept))


@dataclass(frozen=True)
class NearDuplicate:
    """Captions ``i`` and ``j`` with cosine ``similarity``, and their content words split three ways
    (``shared_words`` are the words Fig. A1–A4 highlight, in order of first appearance in caption ``i``)."""

    i: int
    j: int
    similarity: float
    shared_words: tuple[str, ...]
    only_in_i: tuple[str, ...]
    only_in_j: tuple[str, ...]


def _describe_pair(i: int, j: int, similarity: float, captions: Sequence[str]) -> NearDuplicate:
    words_i, words_j = content_words(captions[i]), content_words(captions[j])
    set_i, set_j = set(words_i), set(words_j)
    return NearDuplicate(
        i=i,
        j=j,
        similarity=similarity,
        shared_words=tuple(w for w in words_i if w in set_j),
        only_in_i=tuple(w for w in words_i if w not in set_j),
        only_in_j=tuple(w for w in words_j if w not in set_i),
    )


def _most_similar_pairs(features: torch.Tensor, top: int, block_size: int) -> list[tuple[int, int, float]]:
    """The ``top`` most similar unordered pairs (i < j), found ``block_size`` rows of the cosine matrix at a
    time with a running top-k (the full N × N matrix is never held)."""
    n = features.shape[0]
    best_values = torch.empty(0)
    best_pairs = torch.empty(0, 2, dtype=torch.long)
    for start in range(0, n, block_size):
        rows = torch.arange(start, min(start + block_size, n), device=features.device)
        block = features[rows] @ features.t()
        upper = torch.arange(n, device=rows.device)[None, :] > rows[:, None]  # each pair i < j once
        candidates = block.masked_fill(~upper, float("-inf")).flatten()
        k = min(top, int(upper.sum()))
        if k == 0:
            continue
        values, flat = candidates.topk(k)
        pairs = torch.stack([rows[flat // n], flat % n], dim=1).cpu()
        best_values = torch.cat([best_values, values.cpu()])
        best_pairs = torch.cat([best_pairs, pairs])
        keep = best_values.topk(min(top, len(best_values))).indices
        best_values, best_pairs = best_values[keep], best_pairs[keep]
    found = [(int(i), int(j), float(v)) for (i, j), v in zip(best_pairs.tolist(), best_values.tolist(), strict=True)]
    return sorted(found, key=lambda pair: (-pair[2], pair[0], pair[1]))


def _pairs_near_quantile(features: torch.Tensor, top: int, quantile: float, block_size: int):
    """Queries whose hardest-companion cosine lies closest to its ``quantile``, each with that companion.

    A pair that two queries would both contribute (each the other's hardest companion) is listed once.
    """
    geometry = caption_similarity_stats(features, block_size=block_size, max_pairwise_values=0)
    hardest, companion = geometry.hardest_negative, geometry.hardest_negative_index
    target = torch.quantile(hardest.double(), quantile).float()
    closest_first = torch.argsort((hardest - target).abs(), stable=True)
    chosen, seen = [], set()
    for query in closest_first.tolist():
        other = int(companion[query])
        if frozenset((query, other)) in seen:
            continue
        seen.add(frozenset((query, other)))
        chosen.append((query, other, float(hardest[query])))
        if len(chosen) == top:
            break
    return sorted(chosen, key=lambda pair: (-pair[2], pair[0], pair[1]))


@torch.no_grad()
def near_duplicate_pairs(
    text_features: torch.Tensor,
    captions: Sequence[str],
    top: int = 10,
    quantile: float | None = None,
    block_size: int = 1024,
) -> list[NearDuplicate]:
    """Near-duplicate caption pairs with the content words they share (App. A.3, Fig. A1–A4).

    Without ``quantile``: the ``top`` most similar pairs of the whole set, each unordered pair once with
    i < j. With ``quantile`` (the paper uses 0.9): the ``top`` captions whose hardest-companion cosine is
    closest to that quantile of the hardest-companion distribution, each paired with its hardest companion
    (i = query, j = companion) — "striking but not extreme"; the paper's DOCCI/DCI/Urban-1K examples reach
    0.93–0.97. Either way the list is sorted by decreasing similarity.
    """
    features = _features(text_features)
    if len(captions) != features.shape[0]:
        raise ValueError(f"{len(captions)} captions for {features.shape[0]} feature rows")
    if top < 1:
        raise ValueError(f"top must be at least 1, got {top}")
    if quantile is None:
        pairs = _most_similar_pairs(features, top, block_size)
    else:
        if not 0.0 <= quantile <= 1.0:
            raise ValueError(f"quantile must lie in [0, 1], got {quantile}")
        pairs = _pairs_near_quantile(features, top, quantile, block_size)
    return [_describe_pair(i, j, similarity, captions) for i, j, similarity in pairs]


def differing_phrases(caption_a: str, caption_b: str) -> tuple[list[str], list[str]]:
    """Where two captions differ, word by word: the phrases of ``caption_a`` and of ``caption_b`` that the
    other caption does not have at that place (a word-level diff, so swapped positions and changed sizes
    show even when both captions use the same words somewhere)."""
    words_a, words_b = caption_a.split(), caption_b.split()
    only_a, only_b = [], []
    matcher = difflib.SequenceMatcher(a=words_a, b=words_b, autojunk=False)
    for tag, a_start, a_end, b_start, b_end in matcher.get_opcodes():
        if tag != "equal":
            if a_end > a_start:
                only_a.append(" ".join(words_a[a_start:a_end]))
            if b_end > b_start:
                only_b.append(" ".join(words_b[b_start:b_end]))
    return only_a, only_b


# --------------------------------------------------------------------------------------------------------
# The chapter's figures
# --------------------------------------------------------------------------------------------------------


def plot_caption_similarity(
    geometry: CaptionGeometry, label: str, paper: dict[str, dict[str, float]] | None = None
) -> Figure:
    """Fig. 1: histograms of (a) pairwise caption cosines and (b) each caption's hardest-negative cosine.

    Dotted lines mark our means; ``paper`` (e.g. :data:`hnclip_core.replication.paper.CAPTION_GEOMETRY`) adds the
    paper's Long-CLIP-L means as dashed grey lines for comparison.
    """
    fig = Figure(figsize=(10, 3.6))
    axes = fig.subplots(1, 2)
    panels = (
        (axes[0], geometry.pairwise_similarities, geometry.mean_pairwise, "mean_pairwise", "(a) all caption pairs"),
        (axes[1], geometry.hardest_negative, geometry.mean_hardest, "mean_hardest",
         "(b) each caption's hardest negative"),
    )
    for ax, values, mean, key, title in panels:
        counts, _, _ = ax.hist(np.asarray(values, dtype=float), bins=60, range=(-0.2, 1.0), color="#4c72b0",
                               alpha=0.85)
        ax.set_ylim(0, 1.3 * counts.max())  # headroom: the legend sits above the tallest bar, wherever it is
        ax.axvline(mean, color="black", linestyle=":", label=f"{label}: mean {mean:.2f}")
        for n, stats in enumerate((paper or {}).values()):
            ax.axvline(stats[key], color="grey", linestyle="--", linewidth=0.8,
                       label="paper's benchmarks (Long-CLIP-L)" if n == 0 else None)
        ax.set_title(title)
        ax.set_xlabel("caption–caption cosine similarity")
        ax.set_ylabel("count")
        ax.legend(loc="upper left", fontsize=8)
    fig.suptitle("How similar are the captions? (dashed: the paper's benchmarks under Long-CLIP-L)", fontsize=10)
    fig.tight_layout()
    return fig


def distinguishing_labels(captions: Sequence[str], words: int = 4) -> list[str]:
    """A short label per caption that tells the captions apart: its ``words`` content words that the fewest of
    the other captions share, in the caption's order (a template's opening says nothing about which row is which)."""
    vocabularies = [content_words(c) for c in captions]
    frequency = Counter(w for v in vocabularies for w in set(v))
    labels = []
    for vocabulary in vocabularies:
        rarest = set(sorted(vocabulary, key=lambda w: (frequency[w], vocabulary.index(w)))[:words])
        labels.append(" ".join(w for w in vocabulary if w in rarest))
    return labels


def plot_batch_matrix(matrix, captions: Sequence[str] | None = None, title: str = "Ḡ of one batch") -> Figure:
    """Fig. A5: the detached caption-similarity matrix Ḡ of one batch (diagonal masked), values annotated.

    A diverging colour map centred at 0 over [−1, 1], so negative cosines (which lower a negative's margin)
    read as such. ``captions`` (optional) label the rows by :func:`distinguishing_labels`.
    """
    values = np.asarray(matrix, dtype=float)
    size = values.shape[0]
    shown = np.ma.masked_where(np.eye(size, dtype=bool), values)
    fig = Figure(figsize=(0.75 * size + 3.2, 0.6 * size + 1.2))
    ax = fig.subplots()
    image = ax.imshow(shown, vmin=-1.0, vmax=1.0, cmap="RdBu_r")
    off_diagonal = values[~np.eye(size, dtype=bool)]
    hardest = np.unravel_index(np.argmax(np.where(np.eye(size, dtype=bool), -np.inf, values)), values.shape)
    for i in range(size):
        for j in range(size):
            if i != j:
                weight = "bold" if (i, j) == hardest else "normal"
                colour = "white" if abs(values[i, j]) > 0.55 else "black"
                ax.text(j, i, f"{values[i, j]:.2f}", ha="center", va="center", fontsize=7, color=colour,
                        fontweight=weight)
    ax.set_xticks(range(size))
    ax.set_yticks(range(size))
    if captions is not None:
        labels = distinguishing_labels(captions)
        ax.set_yticklabels([f"{k}: {textwrap.shorten(label, 30, placeholder='…')}" for k, label in enumerate(labels)],
                           fontsize=7)
    ax.set_xlabel("negative (row and column k: the same caption)")
    ax.set_title(f"{title}: off-diagonal mean {off_diagonal.mean():.2f}, max {off_diagonal.max():.2f}", fontsize=10)
    fig.colorbar(image, ax=ax, label="caption cosine Ḡ (diagonal masked)")
    fig.tight_layout()
    return fig


def plot_hardness_buckets(
    compositions: dict[str, InBatchHardness | dict[str, float]], paper_at_least_0_8: tuple[float, float] | None = None,
) -> Figure:
    """Fig. A6C: stacked bars of in-batch negatives by caption-similarity bucket, one bar per entry; with
    ``paper_at_least_0_8`` (the paper's low and high share of in-batch negatives at Ḡ ≥ 0.8 over its four
    benchmarks) a last bar shows that range."""
    names = list(compositions)
    fractions = [c.bucket_fractions if isinstance(c, InBatchHardness) else c for c in compositions.values()]
    labels = list(fractions[0])
    colours = matplotlib.colormaps["magma"](np.linspace(0.25, 0.85, len(labels)))
    fig = Figure(figsize=(2.6 + 1.4 * (len(names) + (paper_at_least_0_8 is not None)), 3.6))
    ax = fig.subplots()
    bottom = np.zeros(len(names))
    for label, colour in zip(labels, colours, strict=True):
        heights = np.array([100 * f[label] for f in fractions])
        ax.bar(names, heights, bottom=bottom, color=colour, label=f"Ḡ {label}")
        for x, (h, b) in enumerate(zip(heights, bottom, strict=True)):
            if h >= 4:
                ax.text(x, b + h / 2, f"{h:.0f}%", ha="center", va="center", fontsize=8, color="white")
        bottom += heights
    if paper_at_least_0_8 is not None:
        low, high = (100 * x for x in paper_at_least_0_8)
        paper_name = "paper (Fig. A6C)\nfour benchmarks"
        ax.bar([paper_name], [100 - high], color=colours[0])
        ax.bar([paper_name], [high - low], bottom=[100 - high], color="none", edgecolor="0.3", hatch="//",
               label="paper's range")
        ax.bar([paper_name], [low], bottom=[100 - low], color=colours[-1], label="paper: Ḡ ≥ 0.8")
        ax.text(len(names), 100 - low / 2, f"Ḡ ≥ 0.8:\n{low:.0f}–{high:.0f}%", ha="center", va="center",
                fontsize=8, color="black")
    ax.set_ylabel("% of in-batch negatives")
    ax.set_ylim(0, 100)
    ax.set_title("How hard are the negatives a caption meets in a batch?")
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    return fig


def plot_near_twins(pairs: Sequence[NearDuplicate], images: Sequence[tuple], captions: Sequence[str]) -> Figure:
    """Fig. A1–A4: near-twin caption pairs with their images; under each image, where its caption differs.

    ``images[k]`` is the ``(image_i, image_j)`` PIL pair of ``pairs[k]``; the differences are a word-level
    diff of the two captions (:func:`differing_phrases`).
    """
    rows = len(pairs)
    fig = Figure(figsize=(6.4, 2.9 * rows))
    axes = fig.subplots(rows, 2, squeeze=False)
    for (ax_i, ax_j), pair, (image_i, image_j) in zip(axes, pairs, images, strict=True):
        only_i, only_j = differing_phrases(captions[pair.i], captions[pair.j])
        sides = ((ax_i, image_i, pair.i, only_i), (ax_j, image_j, pair.j, only_j))
        for ax, image, index, only in sides:
            ax.imshow(image)
            ax.set_xticks([])
            ax.set_yticks([])
            text = " … ".join(only) if only else "(identical caption)"
            ax.set_xlabel(textwrap.shorten(f"differs: {text}", 110, placeholder=" …"), fontsize=8, color="#c0392b",
                          wrap=True)
            ax.set_title(f"caption {index}", fontsize=9)
        ax_i.text(1.1, 1.14, f"cos {pair.similarity:.3f} · {len(pair.shared_words)} shared words",
                  transform=ax_i.transAxes, ha="center", fontsize=9, fontweight="bold")
    fig.tight_layout()
    return fig


def near_twin_html(pair: NearDuplicate, captions: Sequence[str]) -> str:
    """Both captions of a near-twin pair as HTML, the words where they differ (word-level diff) highlighted."""
    words_i, words_j = captions[pair.i].split(), captions[pair.j].split()
    marked_i, marked_j = [html.escape(w) for w in words_i], [html.escape(w) for w in words_j]
    matcher = difflib.SequenceMatcher(a=words_i, b=words_j, autojunk=False)
    for tag, a_start, a_end, b_start, b_end in matcher.get_opcodes():
        if tag != "equal":
            for marked, start, end in ((marked_i, a_start, a_end), (marked_j, b_start, b_end)):
                for k in range(start, end):
                    marked[k] = f"<mark>{marked[k]}</mark>"
    blocks = [f"<p><b>caption {index}</b>: {' '.join(marked)}</p>" for index, marked in
              ((pair.i, marked_i), (pair.j, marked_j))]
    return f"<div><p>cosine {pair.similarity:.3f}</p>{''.join(blocks)}</div>"


def camera_parts(camera) -> str:
    """What ``camera`` (:class:`hnclip_core.toy.synthetic.Camera`) does to a rendering, in words: only its non-zero
    parts."""
    parts = [f"a {100 * camera.cast:g} % warm colour cast"] if camera.cast else []
    parts += [f"sensor noise of σ {camera.noise:g} levels"] if camera.noise else []
    parts += [f"a blur of {camera.blur:g} px"] if camera.blur else []
    if not parts:
        return "nothing: the rendering as it is"
    return parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + " and " + parts[-1]


def plot_cameras(examples: Sequence, camera_name: str, camera) -> Figure:
    """The embedded benchmark's ``examples`` (:class:`hnclip_core.toy.SyntheticExample`) twice: as the toy's
    pretraining world shows a scene (the plain rendering) and as the benchmark's ``camera`` photographed it."""
    fig = Figure(figsize=(1.7 * len(examples), 3.9))
    axes = fig.subplots(2, len(examples), squeeze=False)
    for column, example in enumerate(examples):
        rows = ((render_scene(example.scene, example.image.width), "pretraining world (plain)"),
                (example.image, f"benchmark ({camera_name})"))
        for row, (image, label) in enumerate(rows):
            ax = axes[row][column]
            ax.imshow(image)
            ax.set_xticks([])
            ax.set_yticks([])
            if column == 0:
                ax.set_ylabel(label, fontsize=8)
    fig.suptitle(f"One scene, two cameras: {camera_name} = {camera_parts(camera)}", fontsize=9)
    fig.tight_layout()
    return fig


#: A real CLIP's geometry: Long-CLIP-L's DOCCI captions (Table A1), and the cosine of a matching image and caption,
#: ≈ 0.3 for OpenAI's CLIP — a typical value across the modality gap (Liang et al. 2022), not a number of the paper.
REAL_CLIP_GEOMETRY = {**CAPTION_GEOMETRY["DOCCI"], "matching_cosine": 0.3, "name": "Long-CLIP-L, DOCCI"}


def plot_cone(caption_share, image_share, cone: dict, real: dict = REAL_CLIP_GEOMETRY, name: str = "ours") -> Figure:
    """(a) Each caption's and each image's share of its squared norm along the common direction u; (b) the three
    numbers of a real CLIP beside ours."""
    fig = Figure(figsize=(10, 3.6))
    left, right = fig.subplots(1, 2)
    bins = np.linspace(0, 1, 51)
    left.hist(caption_share.numpy(), bins=bins, color="tab:orange", alpha=0.8, label="captions")
    left.hist(image_share.numpy(), bins=bins, color="tab:blue", alpha=0.8, label="images")
    left.set(xlabel="share of the squared norm along u", ylabel="count",
             title="(a) how much of each embedding is the common direction")
    left.legend(fontsize=8)
    labels = ["mean pairwise\ncaption cosine", "mean hardest\ncaption cosine", "matching image–\ntext cosine"]
    x = np.arange(3)
    theirs = [real["mean_pairwise"], real["mean_hardest"], real["matching_cosine"]]
    ours = [cone["mean_pairwise"], cone["mean_hardest"], cone["matching_cosine"]]
    for offset, values, colour, label in ((-0.2, theirs, "0.6", f"a real CLIP ({real['name']})"),
                                          (0.2, ours, "tab:orange", name)):
        right.bar(x + offset, values, 0.4, color=colour, label=label)
        for position, value in zip(x + offset, values, strict=True):
            right.text(position, value + 0.01, f"{value:.2f}", ha="center", fontsize=8)
    right.set_xticks(x, labels, fontsize=8)
    right.set(ylim=(min(0.0, *ours) - 0.05, 1.3), title="(b) crowded captions across a modality gap")
    right.legend(fontsize=7, loc="upper center", ncol=2)
    fig.tight_layout()
    return fig


def reading_the_cone(cone: dict, real: dict = REAL_CLIP_GEOMETRY) -> str:
    """What §6's figure says, each qualitative word decided by the numbers it describes: the captions *share one
    direction* when it holds at least half of their squared norm on average; the images sit *across a modality gap*
    when they put under 5 % of theirs on it and a matching pair meets at ≤ 0.4."""
    shared = cone["caption_share_mean"] >= 0.5
    gap = cone["image_share_mean"] < 0.05 and cone["matching_cosine"] <= 0.4
    return (
        f"**What you see.** The captions put {100 * cone['caption_share_mean']:.0f} % of their squared norm on one "
        "direction, " + ("so they crowd: " if shared else "too little to crowd them: ")
        + f"an average pair meets at {cone['mean_pairwise']:.2f} ({real['name']}: {real['mean_pairwise']:.2f}). "
        f"The images put {100 * cone['image_share_mean']:.1f} % of theirs there, and a matching image and caption "
        f"meet at {cone['matching_cosine']:.2f} (a real CLIP: ≈ {real['matching_cosine']:.1f}): "
        + ("they sit across a modality gap, as a real CLIP's do." if gap else
           "they do not sit across a modality gap as a real CLIP's do.")
    )


def the_toys_cone(caption_cone: float) -> str:
    """Whether the shipped toy was pretrained under a caption cone (its recipe's α², 0: none), in words."""
    if caption_cone:
        return (f"The shipped toy was pretrained under a caption cone of α² = {caption_cone:g} from its first step, "
                f"so β = {math.sqrt(1 - caption_cone):.2f} and InfoNCE at s = 100 saw an effective scale of "
                f"{100 * math.sqrt(1 - caption_cone):.0f}.")
    return ("The shipped toy was pretrained without a cone (its recipe's `caption_cone` is 0): what you see above is "
            "its own geometry, and the gap to a real CLIP is the part of the paper's cause it cannot show yet. "
            "`results/README.md` records a toy pretrained under α² = 0.75 from its first step, probe by probe.")


# ------------------------------------------------------------------------------------------------ the readings
GEOMETRY_READING = (
    "**Reading the plot.** The hardest-negative distribution (b) is what matters for Recall@1: {with_twin:.0f} % of "
    "the {captions} captions have a companion at Ḡ ≥ {twin:g} somewhere in the test split, and the hardest "
    "companions average {hardest:.2f}, {hardest_vs} the paper's {paper_hardest} (Table A1){by_construction}"
    "The *pairwise* distribution (a) says how crowded the whole space is: mean {pairwise:.2f}, {pairwise_vs} the "
    "paper's {paper_pairwise} under Long-CLIP-L. This text encoder {crowding}{toy_note}"
    "For HN-CLIP this means a margin γḠ of {hard_margin:.2f} (γ = {gamma:g}) against a caption's hardest companion "
    "and {typical_margin:.2f} against an average one: {where_margins}")
SYNTHETIC_TWINS = " — by construction on the synthetic benchmark, whose family members differ in one detail. "
TOY_SPREAD = ("; this is one of the places where the toy is an imperfect stand-in: pretraining it longer made it a "
              "stronger initialisation and spread its captions further at every step (`results/README.md`). ")
BATCHES_READING = (
    "**What you see.** {share_hard:.1f} % of the in-batch negatives have Ḡ ≥ {twin:g}, against {low:.0f}–{high:.0f} % "
    "on the paper's four benchmarks under Long-CLIP-L (Fig. A6C){against_paper}A caption meets at least one of its "
    "near-twins in {in_effective:.0f} % of random batches of {batch} and in {in_micro:.0f} % of random micro-batches "
    "of {micro}: with naive accumulation the loss {how_often} sees a caption together with its twin.\n\n"
    "**What it means for L_HN.** The boost is a per-negative margin, not a twin detector: it adds γḠ_ij to whatever "
    "negatives the micro-batch holds and never looks for a caption's twins elsewhere in the split (the paper: no "
    "mining or resampling). {margins}Per micro-batch rather than per caption: {holding:.0f} % of the {batches} "
    "micro-batches of one shuffled epoch hold at least one near-twin pair{pairs_in_them} {so}")
AS_THERE = ": as there, nearly every negative a caption meets is a near-duplicate of it. "
FEWER = ("{far}fewer. The near-twins are not missing: {with_twin:.0f} % of the captions have at least one in the "
         "split, {per_caption:.1f} on average among their {companions} companions, but that makes them {minority}. ")
TWIN_MARGINS = ("With γ = {gamma:g}, a near-twin that is drawn must be beaten by a margin of {twin:.2f} on average, "
                "the other negatives by {other:.2f}. ")
RARELY_TOGETHER = ("So for a given caption the margin against a near-twin is in play in only {in_micro:.0f} % of its "
                   "micro-batches (it sits in one per epoch); over the epoch the large margins act only in the "
                   "micro-batches that hold a near-twin pair, and only on those pairs, while everywhere else L_HN "
                   "adds smaller margins to strangers. Cached accumulation (chapter 3: all {batch} negatives of the "
                   "effective batch) would raise the per-caption share to {in_effective:.0f} %.")
OFTEN_TOGETHER = "So the boost meets near-twins in {how_many} of the micro-batches it sees."


def _range(values: Sequence[float]) -> str:
    return f"{min(values):.2f}–{max(values):.2f}"


def against_range(ours: float, paper_values: Sequence[float]) -> str:
    """"above", "below" or "within" the paper's range of ``paper_values``."""
    return "above" if ours > max(paper_values) else "below" if ours < min(paper_values) else "within"


def crowding(mean_pairwise: float, mean_hardest: float, paper_pairwise: Sequence[float], twin: float) -> str:
    """How a text encoder's pairwise caption cosine compares with a random cloud and with Long-CLIP-L's cone."""
    if mean_pairwise < 0.5:
        return "spreads unrelated captions far apart" + (" while keeping near-twins close" if mean_hardest >= twin
                                                         else "")
    if mean_pairwise < min(paper_pairwise) - 0.05:
        return "packs captions closer together than a random cloud, though less tightly than Long-CLIP-L"
    return "packs captions into a narrow cone, as Long-CLIP-L does"


def reading_the_geometry(geometry: CaptionGeometry, with_twin: float, twin: float, gamma: float, synthetic: bool,
                         toy: bool, paper: dict = CAPTION_GEOMETRY) -> str:
    """§2's reading of Fig. 1: the hardest companions and the pairwise crowding against Table A1, and what they
    make of L_HN's margins (``with_twin``: the share of captions with a companion at Ḡ ≥ ``twin``)."""
    paper_pairwise = [g["mean_pairwise"] for g in paper.values()]
    paper_hardest = [g["mean_hardest"] for g in paper.values()]
    pairs_at_twin = geometry.fraction_at_least[twin]
    if pairs_at_twin < 0.05:
        where_margins = (f"only {100 * pairs_at_twin:.1f} % of all pairs reach Ḡ ≥ {twin:g}, so the large margins "
                         "fall on the near-twins and almost nowhere else.")
    else:
        who = ("a sizeable minority of the negatives gets" if pairs_at_twin < 0.5 else
               "most negatives get" if pairs_at_twin < 0.85 else "nearly every negative gets")
        where_margins = (f"{100 * pairs_at_twin:.0f} % of all pairs reach Ḡ ≥ {twin:g}, so {who} a margin as large "
                         "as a near-twin's.")
    spread_out = geometry.mean_pairwise < min(paper_pairwise) - 0.05
    return GEOMETRY_READING.format(
        with_twin=100 * with_twin, captions=geometry.num_captions, twin=twin, hardest=geometry.mean_hardest,
        hardest_vs=against_range(geometry.mean_hardest, paper_hardest), paper_hardest=_range(paper_hardest),
        by_construction=SYNTHETIC_TWINS if synthetic else ". ", pairwise=geometry.mean_pairwise,
        pairwise_vs=against_range(geometry.mean_pairwise, paper_pairwise), paper_pairwise=_range(paper_pairwise),
        crowding=crowding(geometry.mean_pairwise, geometry.mean_hardest, paper_pairwise, twin),
        toy_note=TOY_SPREAD if toy and spread_out else ". ", hard_margin=gamma * geometry.mean_hardest,
        typical_margin=gamma * geometry.mean_pairwise, gamma=gamma, where_margins=where_margins)


@dataclass(frozen=True)
class TwinsInBatches:
    """What §4 measures of near-twins in batches (Ḡ ≥ ``twin``): the share of in-batch negatives at it
    (``share_hard``), of captions with a twin in the split (``with_twin``) and their mean number per caption
    (``per_caption``, of ``companions``); the chance that a caption's batch of ``batch`` / micro-batch of ``micro``
    holds a twin (``in_effective``, ``in_micro``); the mean margin γḠ on twins and on the rest (None without such
    pairs); the share of one epoch's ``batches`` micro-batches that hold a twin pair, and their mean number there."""

    twin: float
    share_hard: float
    with_twin: float
    per_caption: float
    companions: int
    batch: int
    micro: int
    in_effective: float
    in_micro: float
    twin_margin: float | None
    other_margin: float | None
    batches: int
    holding: float
    pairs_in_holding: float | None


def reading_the_batches(t: TwinsInBatches, gamma: float, paper_range: tuple[float, float]) -> str:
    """§4's reading of Fig. A6C: how many in-batch negatives are near-twins against the paper's benchmarks, how often
    a caption meets its twin, and what that makes of L_HN's margin."""
    low, high = paper_range
    if t.share_hard >= low:
        against_paper = AS_THERE
    else:
        minority = ("a small minority of any batch's negatives" if t.share_hard < 0.05 else
                    "a minority of any batch's negatives" if t.share_hard < 0.5 else
                    "fewer of any batch's negatives than on the paper's benchmarks")
        against_paper = ": " + FEWER.format(far="far " if t.share_hard < low / 2 else "", with_twin=100 * t.with_twin,
                                            per_caption=t.per_caption, companions=t.companions, minority=minority)
    how_often = "rarely" if t.in_micro < 0.25 else "in a minority of cases" if t.in_micro < 0.5 else "usually"
    margins = (TWIN_MARGINS.format(gamma=gamma, twin=t.twin_margin, other=t.other_margin)
               if t.twin_margin is not None and t.other_margin is not None else "")
    if t.in_micro < 0.5:
        so = RARELY_TOGETHER.format(in_micro=100 * t.in_micro, batch=t.batch, in_effective=100 * t.in_effective)
    else:
        so = OFTEN_TOGETHER.format(how_many="nearly every one" if t.holding >= 0.9 else most_or_few(t.holding))
    return BATCHES_READING.format(
        share_hard=100 * t.share_hard, twin=t.twin, low=100 * low, high=100 * high, against_paper=against_paper,
        in_effective=100 * t.in_effective, batch=t.batch, in_micro=100 * t.in_micro, micro=t.micro,
        how_often=how_often, margins=margins, holding=100 * t.holding, batches=t.batches,
        pairs_in_them=f" ({t.pairs_in_holding:.1f} pairs in those, on average)." if t.pairs_in_holding else ".",
        so=so)
