"""Encoding with an open_clip ``CLIP``: global embeddings and, for the token term L_tok (Eq. 3), the
per-patch and per-token embeddings in the joint space — in one forward pass each.

Text is encoded only up to the longest caption of the batch. Long-CLIP's text encoder is causal, so a
position never attends to the padding after it, and cutting the trailing padding gives the same
features as ``model.encode_text`` on the full 248-token input (up to float rounding) at a fraction of
the cost: dense captions average ~150 of the 248 positions.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass

import torch

__all__ = [
    "BatchEncoder", "EncodedBatch", "encode_images", "encode_texts", "encode_batch", "text_hidden_states",
    "encode_images_with_hidden",
]


@dataclass
class EncodedBatch:
    """Unnormalised projected features of a batch; token fields are ``None`` unless requested."""

    image_features: torch.Tensor  # [B, D]
    text_features: torch.Tensor  # [B, D]
    image_tokens: torch.Tensor | None = None  # [B, patches, D]
    text_tokens: torch.Tensor | None = None  # [B, L', D], L' = longest caption of the batch
    text_ids: torch.Tensor | None = None  # [B, L'] the token ids the text tokens belong to


@contextmanager
def _visual_tokens(visual):
    previous = visual.output_tokens
    visual.output_tokens = True
    try:
        yield
    finally:
        visual.output_tokens = previous


def encode_images(model, images: torch.Tensor, with_tokens: bool = False):
    """Image embeddings ``[B, D]``; with ``with_tokens`` also the patch embeddings ``[B, patches, D]``
    (class token excluded, after ``ln_post`` and the visual projection, as FILIP uses them)."""
    if not with_tokens:
        return model.encode_image(images), None
    with _visual_tokens(model.visual):
        pooled, tokens = model.visual(images)
    return pooled, tokens @ model.visual.proj


def encode_images_with_hidden(model, images: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Image embeddings ``[B, D]`` and the patch states *before* ``ln_post`` ``[B, patches, width]`` (class
    token excluded): the last transformer layer's output, which region-pooling objectives (GOAL) average
    before applying the final norm and projection themselves. Read with a forward hook on ``ln_post``."""
    captured = []
    handle = model.visual.ln_post.register_forward_hook(lambda module, inputs, output: captured.append(inputs[0]))
    try:
        pooled = model.encode_image(images)
    finally:
        handle.remove()
    hidden = captured[0]
    if hidden.dim() != 3:
        raise ValueError("the visual tower applies ln_post after pooling; patch states before it are not available")
    return pooled, hidden[:, 1:]


def text_hidden_states(model, token_ids: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """The text transformer's output *before* ``ln_final`` ``[B, L', width]`` and the trimmed ids ``[B, L']``.

    Sequences are cut after the last non-padding position of the batch (for right-padded ids: the longest
    caption); ids with padding inside (the prefix padding of :mod:`hnclip_core.frameworks.augment`) keep it.
    """
    positions = torch.arange(1, token_ids.shape[1] + 1, device=token_ids.device)
    length = int(((token_ids != 0) * positions).max().clamp(min=1))
    ids = token_ids[:, :length]
    cast_dtype = model.transformer.get_cast_dtype()
    x = model.token_embedding(ids).to(cast_dtype) + model.positional_embedding[:length].to(cast_dtype)
    return model.transformer(x, attn_mask=model.attn_mask[:length, :length]), ids


def encode_texts(model, token_ids: torch.Tensor, with_tokens: bool = False):
    """Text embeddings ``[B, D]`` (end-of-text pooling, as ``CLIP.encode_text``); with ``with_tokens``
    also every position's projected state ``[B, L', D]`` and the trimmed ids ``[B, L']``."""
    hidden, ids = text_hidden_states(model, token_ids)
    x = model.ln_final(hidden)
    pooled = x[torch.arange(x.shape[0], device=x.device), ids.argmax(dim=-1)] @ model.text_projection
    if not with_tokens:
        return pooled, None, None
    return pooled, x @ model.text_projection, ids


def encode_batch(model, images: torch.Tensor, token_ids: torch.Tensor, with_tokens: bool = False) -> EncodedBatch:
    """Encode an (images, token ids) batch for the training objectives."""
    image_features, image_tokens = encode_images(model, images, with_tokens)
    text_features, text_tokens, ids = encode_texts(model, token_ids, with_tokens)
    return EncodedBatch(image_features, text_features, image_tokens, text_tokens, ids)


class BatchEncoder(torch.nn.Module):
    """:func:`encode_batch` as a module's forward, so that ``DistributedDataParallel`` can wrap it (its reducer
    is armed in ``forward``; the training losses need the encoders' token outputs, not ``CLIP.forward``'s)."""

    def __init__(self, model: torch.nn.Module):
        super().__init__()
        self.model = model

    def forward(self, images: torch.Tensor, token_ids: torch.Tensor, with_tokens: bool = False) -> EncodedBatch:
        return encode_batch(self.model, images, token_ids, with_tokens)
