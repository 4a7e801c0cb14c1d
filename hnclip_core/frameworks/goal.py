"""GOAL-style fine-tuning: global and local image–sentence matching over segments (Choi et al., "GOAL: Global-local
Object Alignment Learning", CVPR'25; the GOAL rows of arXiv 2608.18521 Table 2 / A4, App. D.2: "the original-pair
contrastive term is swapped; segment-level alignment terms are untouched").

What GOAL's training code computes (PerceptualAI-Lab/GOAL, ``goal_loss_finetuning.py`` at commit 34f018e; read,
not copied), per batch of B images, each with its best-matching segment (the crop with the highest
``similarity_score``, :mod:`hnclip_core.frameworks.segments`)::

    L = L_org + 0.5·L_seg + L_patch + L_text

* ``L_org`` — the symmetric InfoNCE of the (image, caption) pairs: **this is the global term the plug-and-play
  study swaps for L_HN** (here: ``objective``, so InfoNCE for ``clip``, L_HN for ``hn``, plus L_tok for the
  ``…tok`` objectives);
* ``L_seg`` — the same symmetric InfoNCE over the B (segment crop, sentence) pairs, with the same learned
  temperature;
* ``L_patch`` — token-to-region alignment: the full image's last-layer patch states (before the final norm) that
  the segment's box touches are averaged, passed through the visual tower's final norm and projection, and
  pulled towards the crop's embedding: mean over the batch of (cos − 1)², no temperature;
* ``L_text`` — the same on the text side: the caption's last-layer token states (before the final norm) that
  spell the segment's sentence are averaged, normed, projected and pulled towards the sentence's embedding.

Where we differ, and why: GOAL maps a box to patches by dividing by the *crop's* size and with a hard-coded patch
size of 16 (wrong for ViT-L/14), ignoring the resize and centre crop of its preprocessing; we map the box through
the actual preprocessing (shorter side resized to the model's input size, centre crop) onto the model's real
patch grid, which is what the term intends. GOAL finds the sentence's tokens by tokenising the caption text
before it; we search the sentence's token ids in the caption's token ids (the same positions for CLIP's
word-level BPE, and robust to caption augmentation); a sentence cut off by the 248-token context takes the last
tokens before the end token, as GOAL does, and a sentence absent from the (augmented) caption leaves that pair
out of L_text. GOAL adds 1e-8 before normalising; we do not.
"""

from __future__ import annotations

from collections.abc import Callable

import torch
import torch.nn.functional as F
from open_clip.loss import ClipLoss
from PIL import Image

from ..accumulation import MicroBatch, batch_loss
from ..data.pairs import ImageCaptionPair
from ..features import EncodedBatch, encode_images_with_hidden, text_hidden_states
from ..losses import HNClipTokenLoss
from .augment import CaptionAugmentation
from .base import Framework
from .segments import Segment

__all__ = [
    "GOAL_SEGMENT_WEIGHT", "GoalFramework", "box_patch_mask", "sentence_token_span", "region_alignment_loss",
    "masked_mean", "goal_total",
]

#: Weight of L_seg in GOAL's total loss (L_org, L_patch and L_text have weight 1).
GOAL_SEGMENT_WEIGHT = 0.5


def box_patch_mask(box: tuple[float, float, float, float], image_size: tuple[int, int], input_size: int,
                   patch_size: int) -> torch.Tensor:
    """Patches of the model's input grid that a box of the original image touches, as a flat bool mask.

    The box goes through the evaluation preprocessing: the shorter side is resized to ``input_size`` and the
    centre is cropped. A box falling entirely outside the crop keeps the nearest patch, so the mask is never empty.
    """
    width, height = image_size
    scale = input_size / min(width, height)
    left, top = (width * scale - input_size) / 2, (height * scale - input_size) / 2
    x1, y1, x2, y2 = box
    grid = input_size // patch_size

    def span(low: float, high: float, offset: float) -> tuple[int, int]:
        first = int((low * scale - offset) // patch_size)
        last = int(-((offset - high * scale) // patch_size))  # ceil
        first = min(max(first, 0), grid - 1)
        return first, min(max(last, first + 1), grid)

    (c0, c1), (r0, r1) = span(x1, x2, left), span(y1, y2, top)
    mask = torch.zeros(grid, grid, dtype=torch.bool)
    mask[r0:r1, c0:c1] = True
    return mask.flatten()


def sentence_token_span(sentence_ids: list[int], caption_ids: torch.Tensor, caption: str, sentence: str,
                        context_length: int) -> tuple[int, int]:
    """``[start, end)`` positions of the sentence's tokens in the caption's token ids; ``(0, 0)`` if the
    sentence is not in the caption. A sentence the context cut off takes the last positions before the end
    token (GOAL's rule)."""
    ids = caption_ids.tolist()
    n = len(sentence_ids)
    if n == 0:
        return 0, 0
    for start in range(1, len(ids) - n + 1):
        if ids[start : start + n] == sentence_ids:
            return start, start + n
    if sentence.strip().lower() in caption.lower():
        end = context_length - 1
        return max(1, end - n), end
    return 0, 0


def masked_mean(states: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """Mean of ``states`` ``[B, L, W]`` over the positions where ``mask`` ``[B, L]`` is true: ``[B, W]``."""
    weights = mask.to(states.dtype)
    return (states * weights[..., None]).sum(dim=1) / weights.sum(dim=1, keepdim=True).clamp(min=1)


def region_alignment_loss(pooled: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
    """GOAL's L_patch / L_text: mean over rows of (cos(pooled_i, target_i) − 1)²; 0 for an empty batch."""
    if pooled.shape[0] == 0:
        return pooled.sum() * 0.0
    cosine = (F.normalize(pooled, dim=-1) * F.normalize(targets, dim=-1)).sum(dim=-1)
    return F.mse_loss(cosine, torch.ones_like(cosine))


def goal_total(global_term, segment_term, patch_term, text_term) -> torch.Tensor:
    """L = L_global + 0.5·L_seg + L_patch + L_text (GOAL's weights)."""
    return global_term + GOAL_SEGMENT_WEIGHT * segment_term + patch_term + text_term


def _load_crop(pair_image: Image.Image, segment: Segment) -> Image.Image:
    if segment.crop_path is not None and segment.crop_path.is_file():
        with Image.open(segment.crop_path) as crop:
            return crop.convert("RGB")
    return pair_image.crop(tuple(round(v) for v in segment.box))


class GoalFramework(Framework):
    """``goal``: the global term plus GOAL's segment, patch and text alignment terms."""

    name = "goal"
    has_auxiliary_loss = True
    needs_extras = True

    def __init__(self, read_segments: Callable[[list[ImageCaptionPair]], list[list[Segment]]],
                 augmentation: CaptionAugmentation | None = None):
        super().__init__(augmentation)
        self.read_segments = read_segments
        self.segments = self.preprocess = self.tokenizer = None
        self.input_size = self.patch_size = None

    def attach(self, train_set) -> None:
        self.segments = self.read_segments(train_set.pairs)
        self.preprocess, self.tokenizer = train_set.preprocess, train_set.tokenizer

    def prepare_model(self, model):
        self.input_size = int(model.visual.image_size[0])
        self.patch_size = int(model.visual.patch_size[0])
        return model

    def sample_extras(self, index: int, pair: ImageCaptionPair, caption: str, token_ids: torch.Tensor) -> dict:
        segment = self.segments[index][0]  # best similarity_score first: GOAL's "only max pair"
        image = pair.load_image()
        start, end = sentence_token_span(self.tokenizer.encode(segment.sentence), token_ids, caption,
                                         segment.sentence, self.tokenizer.context_length)
        return {
            "segment_images": self.preprocess(_load_crop(image, segment)),
            "segment_token_ids": self.tokenizer([segment.sentence])[0],
            "segment_patch_mask": box_patch_mask(segment.box, image.size, self.input_size, self.patch_size),
            "sentence_span": torch.tensor([start, end]),
        }

    def loss(self, model, micro: MicroBatch, loss_fn: HNClipTokenLoss, logit_scale: torch.Tensor,
             margin_text_features: torch.Tensor | None = None) -> torch.Tensor:
        extras, batch = micro.extras, len(micro.indices)
        image_features, patch_states = encode_images_with_hidden(
            model, torch.cat([micro.images, extras["segment_images"]])
        )
        text_states, ids = text_hidden_states(model, torch.cat([micro.token_ids, extras["segment_token_ids"]]))
        normed = model.ln_final(text_states)
        text_features = normed[torch.arange(normed.shape[0], device=ids.device), ids.argmax(dim=-1)]
        text_features = text_features @ model.text_projection
        image_tokens = text_tokens = caption_ids = None
        if bool(loss_fn.token_weight):
            image_tokens = model.visual.ln_post(patch_states[:batch]) @ model.visual.proj
            text_tokens, caption_ids = normed[:batch] @ model.text_projection, ids[:batch]
        encoded = EncodedBatch(image_features[:batch], text_features[:batch], image_tokens, text_tokens, caption_ids)
        global_term = batch_loss(loss_fn, encoded, logit_scale, margin_text_features)
        segment_images, segment_texts = image_features[batch:], text_features[batch:]
        segment_term = ClipLoss()(F.normalize(segment_images, dim=-1), F.normalize(segment_texts, dim=-1), logit_scale)

        region = masked_mean(patch_states[:batch], extras["segment_patch_mask"])
        patch_term = region_alignment_loss(model.visual.ln_post(region) @ model.visual.proj, segment_images)

        positions = torch.arange(ids.shape[1], device=ids.device)
        span = extras["sentence_span"]
        in_sentence = (positions >= span[:, :1]) & (positions < span[:, 1:])
        has_sentence = in_sentence.any(dim=1)
        words = masked_mean(text_states[:batch], in_sentence)
        text_term = region_alignment_loss(
            (model.ln_final(words) @ model.text_projection)[has_sentence], segment_texts[has_sentence]
        )
        return goal_total(global_term, segment_term, patch_term, text_term)
