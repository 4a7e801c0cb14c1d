"""Is a model a *strong initialisation* for the synthetic benchmark? The zero-shot measurements of its design targets.

The paper's diagnosis (arXiv 2608.18521 §2.1, §2.4, Fig. 4) starts from a model that has already
mastered the easy part of the task: on random dense-caption micro-batches InfoNCE is below 1e-3 on most
batches (80 % in epoch 1), and what remains confused are near-twins. Measured here, before any
fine-tuning:

* ``solved_share`` — random 16-pair micro-batches of the train split (drawn like a shuffling loader) with
  L_CLIP < 1e-3 at the model's own s, in fp32; ``solved_share_without_twins`` over the batches that hold
  no two members of one family; ``hardest_margin_*`` — per row, positive minus hardest in-batch negative
  (cosine, both directions), whose 10th percentile predicts the solved share;
* ``twin_error_share`` — of the test split's text→image top-1 errors, the share that land on a member of
  the query's own family (a near-twin), and ``own_family_top1`` — queries whose top-1 is in their family;
* ``geometry`` — mean pairwise and mean hardest caption cosine of the test captions (Table A1), and the
  modality gap that lets crowding and saturation coexist in real CLIP: ``positive_cosine`` (mean matching
  image–text cosine; ≈ 0.3 for CLIP), ``centroid_distance`` (between the mean image and the mean caption
  embedding) and ``image_cone`` (mean pairwise image cosine; the text cone is ``mean_pairwise``);
* zero-shot Recall@1 in both directions.

:func:`token_alignment` asks the same of the token term of Eq. 3: whether the model's word-token and patch
embeddings already rank the right pairs first (FILIP scores, §2.3) as its global embeddings do, and how large and
how aligned L_tok's gradient is beside L_HN's on the same micro-batches.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable
from dataclasses import dataclass

import open_clip
import torch
from open_clip.loss import ClipLoss

from ..evaluate import caption_geometry, encode_dataset
from ..features import encode_batch
from ..losses import PAPER_GAMMA, HNClipLoss, token_loss, token_similarity, valid_text_token_mask
from ..train import shuffled_batches
from .synthetic import SyntheticConfig, iter_examples

__all__ = ["BenchmarkTensors", "benchmark_tensors", "zero_shot_regime", "token_alignment", "REGIME_TARGETS",
           "meets_regime_targets"]

SOLVED_BELOW = 1e-3

#: The zero-shot regime a toy must reach to stand for a real CLIP on dense captions (issue 39; paper §2.1, Table A1,
#: and a CLIP's modality gap): (reading of :func:`zero_shot_regime`, least, most). The hardest caption cosine is
#: left out: a cone sets it at β²·(the twins' own cosine) + α², which training barely moves (reported beside it).
REGIME_TARGETS = {
    "solved_share": (0.5, 1.0),       # most random micro-batches already solved (Fig. 4: 80 % in epoch 1)
    "twin_error_share": (0.8, 1.0),   # what stays confused is near-twins
    "mean_pairwise": (0.75, 1.0),     # crowded captions (Table A1: 0.84–0.88)
    "positive_cosine": (0.2, 0.4),    # matching image–text cosine across the modality gap (CLIP ≈ 0.3)
}


def meets_regime_targets(readings: dict, names: Iterable[str] | None = None) -> bool:
    """Whether every reading named in :data:`REGIME_TARGETS` (or only those of ``names``) lies in its interval."""
    return all(REGIME_TARGETS[name][0] <= readings[name] <= REGIME_TARGETS[name][1]
               for name in (REGIME_TARGETS if names is None else names))


@dataclass
class BenchmarkTensors:
    """One split of the synthetic benchmark, preprocessed: images, captions, family index per example."""

    images: torch.Tensor
    captions: list[str]
    families: torch.Tensor


def benchmark_tensors(split: str, config: SyntheticConfig | None = None) -> BenchmarkTensors:
    """The benchmark's ``split`` in memory (the same examples its DOCCI-format files hold)."""
    config = config or SyntheticConfig()
    preprocess = open_clip.image_transform(config.image_size, is_train=False)
    images, captions, families, names = [], [], [], {}
    for example in iter_examples(config, split):
        images.append(preprocess(example.image))
        captions.append(example.caption)
        families.append(names.setdefault(example.family_id, len(names)))
    return BenchmarkTensors(torch.stack(images), captions, torch.tensor(families))


def _encode(model, data: BenchmarkTensors, tokenizer) -> tuple[torch.Tensor, torch.Tensor]:
    dataset = torch.utils.data.TensorDataset(data.images, tokenizer(data.captions))
    return encode_dataset(model, dataset, batch_size=256, progress=False)


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


@torch.no_grad()
def zero_shot_regime(
    model, train: BenchmarkTensors, test: BenchmarkTensors, tokenizer, micro_batch: int = 16,
    num_batches: int = 500, seed: int = 0,
) -> dict:
    """The measurements listed in the module docstring, for ``model`` (an open_clip ``CLIP``, on the CPU)."""
    train_images, train_texts = _encode(model, train, tokenizer)  # eval mode for the pass, then restored
    test_images, test_texts = _encode(model, test, tokenizer)
    scale = model.logit_scale.exp().float()

    generator = torch.Generator().manual_seed(seed)
    solved, solved_clean, margins = [], [], []
    for rows in shuffled_batches(len(train.captions), micro_batch, generator, num_batches):
        image, text = train_images[rows], train_texts[rows]
        loss = ClipLoss()(image, text, scale).item()
        solved.append(loss < SOLVED_BELOW)
        if len(set(train.families[rows].tolist())) == micro_batch:
            solved_clean.append(loss < SOLVED_BELOW)
        similarity = image @ text.t()
        positive = similarity.diag()
        masked = similarity - 2 * torch.eye(micro_batch)
        margins += (positive - masked.max(dim=1).values).tolist()  # image → text
        margins += (positive - masked.max(dim=0).values).tolist()  # text → image

    similarity = test_texts @ test_images.t()
    top1 = similarity.argmax(dim=1)
    truth = torch.arange(len(top1))
    errors = top1 != truth
    same_family = test.families[top1] == test.families
    image_to_text = (test_images @ test_texts.t()).argmax(dim=1)
    geometry = caption_geometry(test_texts)
    count = len(test_images)
    image_pair_sum = test_images.sum(dim=0).pow(2).sum() - count  # Σ_{i≠j} cos(image_i, image_j)
    return {
        "logit_scale": float(scale),
        "solved_share": statistics.fmean(solved),
        "solved_share_without_twins": statistics.fmean(solved_clean) if solved_clean else float("nan"),
        "hardest_margin_median": statistics.median(margins),
        "hardest_margin_p10": _quantile(margins, 0.1),
        "twin_error_share": float((errors & same_family).sum() / errors.sum().clamp(min=1)),
        "own_family_top1": float(same_family.float().mean()),
        "t2i_r1": 100 * float((top1 == truth).float().mean()),
        "i2t_r1": 100 * float((image_to_text == truth).float().mean()),
        "mean_pairwise": geometry["mean_pairwise"],
        "mean_hardest": geometry["mean_hardest"],
        "positive_cosine": float((test_images * test_texts).sum(dim=1).mean()),
        "centroid_distance": float((test_images.mean(dim=0) - test_texts.mean(dim=0)).norm()),
        "image_cone": float(image_pair_sum / (count * (count - 1))),
    }


def _ranking(scores: torch.Tensor) -> tuple[float, float]:
    """Share of rows whose own column scores highest, and the mean margin of the own column over the best other."""
    others = scores.masked_fill(torch.eye(len(scores), dtype=torch.bool), float("-inf")).max(dim=1).values
    own = scores.diag()
    return float((own > others).float().mean()), float((own - others).mean())


def flat_gradient(loss: torch.Tensor, parameters: list[torch.Tensor]) -> torch.Tensor:
    """``loss``'s gradient over ``parameters`` as one flat vector (zeros where a parameter is unused), leaving the
    graph for the next loss and ``.grad`` untouched."""
    grads = torch.autograd.grad(loss, parameters, retain_graph=True, allow_unused=True)
    return torch.cat([(g if g is not None else torch.zeros_like(p)).flatten()
                      for g, p in zip(grads, parameters, strict=True)])


def token_alignment(model, train: BenchmarkTensors, tokenizer, micro_batch: int = 16, num_batches: int = 16,
                    gamma: float = PAPER_GAMMA, seed: int = 0) -> dict:
    """Global versus token-level (FILIP) ranking on random ``micro_batch``-pair batches of ``train``, and the
    gradients of L_HN (Eq. 2) and L_tok (Eq. 3) at the model's own s, as medians over ``num_batches``:

    * ``global_top1`` / ``token_i2t_top1`` / ``token_t2i_top1`` — share of rows (images; images for the token
      image→text score; captions for text→image) whose own pair scores highest, with ``*_margin`` its mean margin
      over the best other pair (cosine units for global; averaged token–patch maxima for the token scores);
    * ``loss_hn``, ``loss_tok`` and ``grad_norm_ratio`` = ‖∇L_tok‖ / ‖∇L_HN‖ over all parameters, with
      ``grad_cosine`` the cosine between the two gradients.

    Token scores that rank no better than chance make L_tok a large loss whose gradient, at λ = 1, competes with
    L_HN's instead of refining it. The model is left as it was: weights and ``.grad`` fields untouched, its
    train/eval mode restored.
    """
    generator = torch.Generator().manual_seed(seed)
    parameters = [p for p in model.parameters() if p.requires_grad]
    was_training = model.training
    model.train()
    readings: dict[str, list[float]] = {}
    try:
        for _ in range(num_batches):
            rows = torch.randperm(len(train.captions), generator=generator)[:micro_batch]
            batch = encode_batch(model, train.images[rows], tokenizer([train.captions[i] for i in rows]), True)
            images = torch.nn.functional.normalize(batch.image_features, dim=-1)
            texts = torch.nn.functional.normalize(batch.text_features, dim=-1)
            mask = valid_text_token_mask(batch.text_ids)
            scale = model.logit_scale.exp()
            with torch.no_grad():
                image_to_text, text_to_image = token_similarity(batch.image_tokens, batch.text_tokens, mask)
            loss_hn = HNClipLoss(gamma=gamma)(images, texts, scale)
            loss_tok = token_loss(batch.image_tokens, batch.text_tokens, mask, scale)
            grads = [flat_gradient(loss, parameters) for loss in (loss_hn, loss_tok)]
            values = {
                "global": _ranking((images @ texts.t()).detach()), "token_i2t": _ranking(image_to_text),
                "token_t2i": _ranking(text_to_image.t()),
            }
            for name, (top1, margin) in values.items():
                readings.setdefault(f"{name}_top1", []).append(top1)
                readings.setdefault(f"{name}_margin", []).append(margin)
            readings.setdefault("loss_hn", []).append(loss_hn.item())
            readings.setdefault("loss_tok", []).append(loss_tok.item())
            readings.setdefault("grad_norm_ratio", []).append(float(grads[1].norm() / grads[0].norm().clamp(min=1e-30)))
            readings.setdefault("grad_cosine", []).append(float(torch.nn.functional.cosine_similarity(*grads, dim=0)))
    finally:
        model.train(was_training)
    return {name: statistics.median(values) for name, values in readings.items()}
