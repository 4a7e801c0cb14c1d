"""StructXLIP-style fine-tuning: an edge-map view of every image aligned with a caption whose colour terms are
filtered out (Ruan et al., StructXLIP, CVPR'26; the StructXLIP rows of arXiv 2608.18521 Table 2 / A4, App. D.2:
"the RGB–caption global term is swapped; the three structural auxiliary losses are untouched").

What StructXLIP's released training code computes (intelligolabs/StructXLIP ``structxlip/train.py``,
``structxlip/losses.py``, ``scripts/finetune.sh`` at commit 035eb34; read, not copied)::

    L = 1.0·L_global + w_sc(e)·L_sc + w_rgb(e)·L_rgb + w_lsc(e)·L_lsc

* ``L_global`` — symmetric InfoNCE of (RGB image, caption) with the learned temperature: **the term the
  plug-and-play study swaps for L_HN** (here: ``objective``);
* ``L_sc`` (structure-centric alignment) — symmetric InfoNCE of (edge-map image, filtered caption), the
  temperature detached;
* ``L_rgb`` (RGB–structure consistency) — mean of 1 − cos(RGB image embedding, edge-map embedding);
* ``L_lsc`` (local structure-centric) — the filtered caption is cut into word windows inside each sentence
  (sentences end at ``. , ; ! ?``; window 2 words for sentences up to 4 words, 3 up to 10, 4 up to 20, 5 up to
  40, else 6; stride 1; at most 64 windows); each window's embedding is the softmax(token-norm)-weighted sum of
  its token states (weights detached), normed and projected; it is scored against the edge-map crops of the
  top-k segments of *every* image of the batch at scale min(s / 0.07, 100), and a multi-positive InfoNCE
  −[logsumexp(own crops) − logsumexp(all crops)] is averaged over the windows, then over the images.

Weights are the released recipe's (``finetune.sh``: 0.25 / 0.001 / 0.001, top-k = 2, ``--remove_colors``),
annealed per epoch by the code's schedule (warm-up 1 epoch, cosine decay from epoch 1 to 8 (0-based) down to a
floor of 0.7 / 0.5 / 0.4 of the base weight); after every optimizer step the learned log-temperature is
clamped to [0, 3.5] (s ≤ 33), as the code does.

Inferred or changed, and why:

* **Edge maps.** StructXLIP's edge extraction is not released (folder names suggest SAM2 + Canny); we use
  Pillow's ``FIND_EDGES`` filter on the grey image (white edges on black, as RGB), computed on the fly.
* **Filtered captions.** The released filter removes words of a fixed vocabulary by regular expression and
  keeps the original text when fewer than 2 content words remain; we wrote our own colour vocabulary
  (:data:`COLOUR_TERMS`; :data:`MATERIAL_TERMS` exist but, as in ``finetune.sh``, are not removed).
* **Segments.** The edge crops come from the same segments as GOAL's (:mod:`hnclip_core.frameworks.segments`): the
  synthetic benchmark's object boxes, or a GOAL-format segment file on real data; without segments L_lsc has no
  crops and is 0 (the code's ``edge_valid_mask`` behaviour).
* **Word windows.** The released code computes the windows on the filtered caption but reads the token states of
  the *unfiltered* caption at those positions, an index mismatch; we read the filtered caption's own states.
  Its token states are Hugging Face's ``last_hidden_state``, already after the final norm, which it norms again
  before projecting; we keep that double norm.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable

import torch
import torch.nn.functional as F
from open_clip.loss import ClipLoss
from PIL import Image, ImageFilter

from ..accumulation import MicroBatch, batch_loss
from ..data.pairs import ImageCaptionPair
from ..features import EncodedBatch, encode_images, text_hidden_states
from ..losses import HNClipTokenLoss
from .augment import CaptionAugmentation
from .base import Framework
from .segments import Segment

__all__ = [
    "STRUCTXLIP_WEIGHTS", "STRUCTXLIP_TOP_K", "COLOUR_TERMS", "MATERIAL_TERMS", "StructXLIPFramework", "edge_map",
    "filter_visual_terms", "word_windows", "annealed_weight", "structure_centric_loss", "rgb_structure_loss",
    "window_embeddings", "local_structure_loss",
]

#: Base weight and annealing floor of each auxiliary loss (scripts/finetune.sh and train.py).
STRUCTXLIP_WEIGHTS = {"structure_centric": (0.25, 0.7), "rgb_structure": (0.001, 0.5), "local_structure": (0.001, 0.4)}
#: Edge crops per image for L_lsc (finetune.sh's chunk_top_k).
STRUCTXLIP_TOP_K = 2
#: L_lsc's temperature τ (scale min(s / τ, 100)) and the bound on the learned log-temperature after each step.
WINDOW_TAU, WINDOW_MAX_SCALE, MAX_LOG_SCALE = 0.07, 100.0, 3.5
MAX_WINDOWS = 64

COLOUR_TERMS = (
    "red", "orange", "yellow", "green", "blue", "purple", "violet", "pink", "brown", "white", "black", "gray",
    "grey", "beige", "navy", "teal", "turquoise", "cyan", "magenta", "maroon", "crimson", "scarlet", "gold",
    "golden", "silver", "tan", "ivory", "cream", "lavender", "olive", "khaki", "indigo", "amber", "bronze",
    "reddish", "bluish", "greenish", "yellowish", "brownish", "greyish", "grayish", "pinkish", "colorful",
    "colourful", "multicolored", "multicoloured",
)
MATERIAL_TERMS = (
    "wooden", "wood", "metal", "metallic", "glass", "plastic", "stone", "concrete", "brick", "fabric", "leather",
    "paper", "ceramic", "marble", "steel", "iron", "cotton", "wool", "rubber", "velvet", "denim", "granite",
)
_SHADES = r"(?:light|dark|pale|bright|deep)[\s-]+"
_FILLER_WORDS = frozenset({"and", "or", "a", "an", "the", ",", "."})


def _vocabulary_pattern(words) -> re.Pattern:
    alternatives = "|".join(sorted(words, key=len, reverse=True))
    return re.compile(rf"\b(?:{_SHADES})?(?:{alternatives})(?:-colou?red)?\b", re.IGNORECASE)


_COLOURS = _vocabulary_pattern(COLOUR_TERMS)
_MATERIALS = _vocabulary_pattern(MATERIAL_TERMS)


def filter_visual_terms(text: str, colours: bool = True, materials: bool = False) -> str:
    """``text`` without its colour (and optionally material) words; the original if fewer than 2 content words
    would remain."""
    filtered = text
    for wanted, pattern in ((colours, _COLOURS), (materials, _MATERIALS)):
        if wanted:
            filtered = pattern.sub("", filtered)
    filtered = re.sub(r"\s+", " ", filtered).strip()
    filtered = re.sub(r"\s+([,.;!?])", r"\1", filtered)
    content = [w for w in filtered.split() if w.lower() not in _FILLER_WORDS]
    return filtered if len(content) >= 2 else text


def edge_map(image: Image.Image) -> Image.Image:
    """The structural view of an image: Pillow's FIND_EDGES on its grey levels, as an RGB image."""
    return image.convert("L").filter(ImageFilter.FIND_EDGES).convert("RGB")


def _window_length(words_in_sentence: int) -> int:
    for limit, length in ((4, 2), (10, 3), (20, 4), (40, 5)):
        if words_in_sentence <= limit:
            return length
    return 6


def word_windows(text: str, tokenizer, max_windows: int = MAX_WINDOWS) -> list[tuple[int, int]]:
    """Token ``[start, end)`` positions (start token at 0) of StructXLIP's sliding word windows over ``text``.

    Positions are those of ``tokenizer([text])``: the text is cleaned as the tokenizer cleans it, cut into the
    tokenizer's pre-tokens with their character offsets, and each pre-token's BPE pieces are counted, so a
    word's character range maps to its token positions exactly. Windows reaching past the context are dropped.
    """
    cleaned = tokenizer.clean_fn(text)
    char_to_token, position = {}, 1  # position 0 is the start token
    for match in tokenizer.pat.finditer(cleaned):
        pieces = tokenizer.bpe("".join(tokenizer.byte_encoder[b] for b in match.group().encode("utf-8"))).split(" ")
        for char in range(match.start(), match.end()):
            char_to_token[char] = (position, position + len(pieces))
        position += len(pieces)
    words = list(re.finditer(r"\b\w+\b", cleaned))
    bounds, begin = [], 0
    for punctuation in re.finditer(r"[.,;!?]+", cleaned):
        bounds.append((begin, punctuation.end()))
        begin = punctuation.end()
    if begin < len(cleaned):
        bounds.append((begin, len(cleaned)))
    windows, first = [], 0
    for _, sentence_end in bounds:
        last = first
        while last < len(words) and words[last].start() < sentence_end:
            last += 1
        count = last - first
        if count > 0:
            length = _window_length(count)
            for i in range(first, last - length + 1):
                start = char_to_token.get(words[i].start())
                end = char_to_token.get(words[i + length - 1].end() - 1)
                if start is not None and end is not None and end[1] <= tokenizer.context_length - 1:
                    windows.append((start[0], end[1]))
                if len(windows) >= max_windows:
                    return windows
        first = last
    return windows


def annealed_weight(base: float, epoch_index: int, floor: float, decay_start: int = 1, decay_end: int = 8) -> float:
    """StructXLIP's per-epoch weight (``epoch_index`` from 0): full weight until ``decay_start``, then a cosine
    decay to ``floor``·base at ``decay_end``, constant after (its one warm-up epoch already gives full weight)."""
    if epoch_index < decay_start:
        return base
    progress = min(epoch_index - decay_start, decay_end - decay_start) / (decay_end - decay_start)
    return base * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * progress)))


def structure_centric_loss(edge_features: torch.Tensor, filtered_text_features: torch.Tensor,
                           logit_scale) -> torch.Tensor:
    """L_sc: symmetric InfoNCE of (edge map, filtered caption) with the temperature detached."""
    scale = logit_scale.detach() if isinstance(logit_scale, torch.Tensor) else logit_scale
    return ClipLoss()(F.normalize(edge_features, dim=-1), F.normalize(filtered_text_features, dim=-1), scale)


def rgb_structure_loss(image_features: torch.Tensor, edge_features: torch.Tensor) -> torch.Tensor:
    """L_rgb: mean over the batch of 1 − cos(RGB embedding, edge-map embedding)."""
    return (1 - F.cosine_similarity(image_features, edge_features, dim=-1)).mean()


def window_embeddings(states: torch.Tensor, windows: list[tuple[int, int]]) -> torch.Tensor:
    """One vector per window: the window's token states weighted by softmax(‖state‖) (weights detached)."""
    rows = []
    for start, end in windows:
        span = states[start:end]
        weights = torch.softmax(span.detach().norm(dim=-1), dim=0)
        rows.append((span * weights[:, None]).sum(dim=0))
    return torch.stack(rows)


def local_structure_loss(window_features: list[torch.Tensor], crop_features: torch.Tensor, crop_valid: torch.Tensor,
                         scale) -> torch.Tensor:
    """L_lsc: for image b, windows ``window_features[b]`` ``[n_b, D]`` against all valid crops ``[B·k, D]``
    (``crop_valid`` ``[B, k]``): mean over windows of −[logsumexp(own valid crops) − logsumexp(all valid crops)],
    averaged over the images that have windows and at least one valid crop; 0 if none has."""
    batch, top_k = crop_valid.shape
    crops = F.normalize(crop_features, dim=-1)
    valid = crop_valid.reshape(-1)
    per_image = []
    for b in range(batch):
        own = torch.zeros_like(valid)
        own[b * top_k : (b + 1) * top_k] = crop_valid[b]
        if window_features[b].shape[0] == 0 or not own.any():
            continue
        logits = scale * F.normalize(window_features[b], dim=-1) @ crops.t()
        log_all = torch.logsumexp(logits[:, valid], dim=1)
        log_own = torch.logsumexp(logits[:, own], dim=1)
        per_image.append(-(log_own - log_all).mean())
    if not per_image:
        return crop_features.sum() * 0.0
    return torch.stack(per_image).mean()


class StructXLIPFramework(Framework):
    """``structxlip``: the global term plus StructXLIP's three structural losses."""

    name = "structxlip"
    has_auxiliary_loss = True
    needs_extras = True

    def __init__(self, read_segments: Callable[[list[ImageCaptionPair]], list[list[Segment]] | None],
                 augmentation: CaptionAugmentation | None = None):
        super().__init__(augmentation)
        self.read_segments = read_segments
        self.segments = self.preprocess = self.tokenizer = None

    def attach(self, train_set) -> None:
        self.segments = self.read_segments(train_set.pairs)
        self.preprocess, self.tokenizer = train_set.preprocess, train_set.tokenizer
        self.weights = {name: base for name, (base, _) in STRUCTXLIP_WEIGHTS.items()}

    def start_step(self, epoch: int, step: int, steps_per_epoch: int) -> None:
        self.weights = {
            name: annealed_weight(base, epoch - 1, floor) for name, (base, floor) in STRUCTXLIP_WEIGHTS.items()
        }

    def sample_extras(self, index: int, pair: ImageCaptionPair, caption: str, token_ids: torch.Tensor) -> dict:
        image = pair.load_image()
        edges = edge_map(image)
        edge_pixels = self.preprocess(edges)
        filtered = filter_visual_terms(caption)
        windows = torch.zeros(MAX_WINDOWS, 2, dtype=torch.long)
        found = word_windows(filtered, self.tokenizer)
        if found:
            windows[: len(found)] = torch.tensor(found)
        segments = (self.segments[index] if self.segments is not None else [])[:STRUCTXLIP_TOP_K]
        crops = torch.zeros(STRUCTXLIP_TOP_K, *edge_pixels.shape)
        for k, segment in enumerate(segments):
            crops[k] = self.preprocess(edges.crop(tuple(round(v) for v in segment.box)))
        return {
            "edge_images": edge_pixels,
            "filtered_token_ids": self.tokenizer([filtered])[0],
            "word_windows": windows,
            "edge_crop_images": crops,
            "edge_crop_valid": torch.arange(STRUCTXLIP_TOP_K) < len(segments),
        }

    def loss(self, model, micro: MicroBatch, loss_fn: HNClipTokenLoss, logit_scale: torch.Tensor,
             margin_text_features: torch.Tensor | None = None) -> torch.Tensor:
        extras, batch = micro.extras, len(micro.indices)
        crops = extras["edge_crop_images"].flatten(0, 1)
        image_features, image_tokens = encode_images(
            model, torch.cat([micro.images, extras["edge_images"], crops]), bool(loss_fn.token_weight)
        )
        text_states, ids = text_hidden_states(model, torch.cat([micro.token_ids, extras["filtered_token_ids"]]))
        normed = model.ln_final(text_states)
        text_features = normed[torch.arange(normed.shape[0], device=ids.device), ids.argmax(dim=-1)]
        text_features = text_features @ model.text_projection
        rgb, edge = image_features[:batch], image_features[batch : 2 * batch]
        crop_features = image_features[2 * batch :]
        encoded = EncodedBatch(rgb, text_features[:batch])
        if bool(loss_fn.token_weight):
            encoded = EncodedBatch(rgb, text_features[:batch], image_tokens[:batch],
                                   normed[:batch] @ model.text_projection, ids[:batch])
        global_term = batch_loss(loss_fn, encoded, logit_scale, margin_text_features)

        windows = []
        for b in range(batch):
            spans = [(s, e) for s, e in extras["word_windows"][b].tolist() if e > s and e <= ids.shape[1]]
            states = normed[batch + b]
            windows.append(
                model.ln_final(window_embeddings(states, spans)) @ model.text_projection if spans
                else states.new_zeros(0, text_features.shape[1])
            )
        window_scale = (logit_scale / WINDOW_TAU).clamp(max=WINDOW_MAX_SCALE)
        return (
            global_term
            + self.weights["structure_centric"] * structure_centric_loss(edge, text_features[batch:], logit_scale)
            + self.weights["rgb_structure"] * rgb_structure_loss(rgb, edge)
            + self.weights["local_structure"]
            * local_structure_loss(windows, crop_features, extras["edge_crop_valid"], window_scale)
        )

    def after_optimizer_step(self, model) -> None:
        if model.logit_scale.requires_grad:
            with torch.no_grad():
                model.logit_scale.clamp_(0, MAX_LOG_SCALE)
