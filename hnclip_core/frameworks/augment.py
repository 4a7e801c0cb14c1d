"""DeBias-CLIP caption augmentation, a data option any fine-tuning framework can use.

DeBias-CLIP (Lavoie et al., "CLIP Is Shortsighted: Paying Attention Beyond the First Sentence", CVPR 2026,
arXiv 2602.22419; project page trailab.github.io/DeBias-CLIP-website) observes that long captions open with a
one-sentence summary that lets a model match image and text from the first tokens alone. Its training
captions are therefore augmented in three steps, which this module implements:

1. **drop the summary**: the first sentence is removed (a caption of a single sentence keeps it: there
   would be nothing left to train on);
2. **sub-sample the rest**: a random number ``k`` of the remaining sentences (uniform in 1…n) is kept, in
   a random order (the project page: "randomly permuting and subsampling the rest");
3. **pad the tokens**: a random number of padding tokens (uniform in 0…the free room of the context) is
   inserted after the start token, so the caption's text lands at later positions and every position of
   the 248-token context receives supervision.

What we inferred (the public description gives no numbers and its code was not available here): the
uniform distributions above, sentence splitting at ``.``/``!``/``?`` followed by white space, and the
padding token, which is the tokenizer's padding id 0 (``valid_text_token_mask`` then leaves the inserted
positions out of L_tok, as it does trailing padding). DeBias-CLIP also trains on the full caption as a second
text input; here the augmented caption *replaces* the training caption (evaluation captions are never
augmented), which is what a pure data option can do.

Every draw comes from a generator seeded by ``(seed, epoch, index)``: the augmentation of a pair is the same
in every run, in any DataLoader worker and after a resume, and changes from epoch to epoch.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import torch

__all__ = ["CAPTION_AUGMENTATIONS", "CaptionAugmentation", "split_sentences", "debias_caption", "padded_token_ids"]

CAPTION_AUGMENTATIONS = ("none", "debias")

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")


def split_sentences(caption: str) -> list[str]:
    """Sentences of ``caption``: split after ``.``, ``!`` or ``?`` followed by white space; empty ones dropped."""
    return [s.strip() for s in _SENTENCE_END.split(caption.strip()) if s.strip()]


def debias_caption(caption: str, rng: np.random.Generator) -> str:
    """Steps 1–2: without its first sentence, a random non-empty subset of the others in a random order."""
    sentences = split_sentences(caption)
    if len(sentences) <= 1:
        return caption
    rest = sentences[1:]
    keep = int(rng.integers(1, len(rest) + 1))
    chosen = rng.permutation(len(rest))[:keep]
    return " ".join(rest[i] for i in chosen)


def padded_token_ids(caption: str, tokenizer, rng: np.random.Generator) -> torch.Tensor:
    """Step 3: ``[start, 0 × p, caption tokens, end, 0 …]`` of the tokenizer's context length, p uniform in
    0…(context − 2 − caption tokens). A caption too long for the context is cut as the tokenizer cuts it."""
    context = tokenizer.context_length
    body = tokenizer.encode(caption)[: context - 2]
    room = context - 2 - len(body)
    padding = int(rng.integers(0, room + 1))
    ids = torch.zeros(context, dtype=torch.long)
    sequence = [tokenizer.sot_token_id, *([0] * padding), *body, tokenizer.eot_token_id]
    ids[: len(sequence)] = torch.tensor(sequence, dtype=torch.long)
    return ids


@dataclass(frozen=True)
class CaptionAugmentation:
    """One of :data:`CAPTION_AUGMENTATIONS`; ``augment(caption, epoch, index)`` returns ``(caption, token ids)``."""

    name: str
    tokenizer: object
    seed: int = 0

    def __post_init__(self):
        if self.name not in CAPTION_AUGMENTATIONS:
            raise ValueError(f"unknown caption_augmentation {self.name!r}; choose one of {CAPTION_AUGMENTATIONS}")

    def generator(self, epoch: int, index: int) -> np.random.Generator:
        return np.random.default_rng([self.seed, epoch, index])

    def __call__(self, caption: str, epoch: int, index: int) -> tuple[str, torch.Tensor]:
        if self.name == "none":
            return caption, self.tokenizer([caption])[0]
        rng = self.generator(epoch, index)
        augmented = debias_caption(caption, rng)
        return augmented, padded_token_ids(augmented, self.tokenizer, rng)
