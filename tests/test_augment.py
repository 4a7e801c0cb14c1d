"""DeBias-CLIP caption augmentation (data/augment.py): behaviour, determinism, and how padded ids encode."""

import numpy as np
import open_clip
import pytest
import torch

from hnclip_core.features import encode_texts
from hnclip_core.frameworks import build_framework
from hnclip_core.frameworks.augment import CaptionAugmentation, debias_caption, padded_token_ids, split_sentences
from hnclip_core.longclip import LONG_CONTEXT, build_clip

from .conftest import TINY_ARCH

CAPTION = "A summary of the scene. The red circle is left. A blue star is on top! Is the square green? It is small."
TOKENIZER = open_clip.SimpleTokenizer(context_length=LONG_CONTEXT)


def test_summary_is_dropped_and_the_rest_subsampled():
    rest = split_sentences(CAPTION)[1:]
    assert len(rest) == 4
    seen_sizes = set()
    for index in range(40):
        augmented = CaptionAugmentation("debias", TOKENIZER, seed=0)(CAPTION, epoch=1, index=index)[0]
        kept = split_sentences(augmented)
        assert "A summary of the scene." not in kept
        assert set(kept) <= set(rest) and len(set(kept)) == len(kept) >= 1
        seen_sizes.add(len(kept))
    assert len(seen_sizes) > 1  # the number kept varies
    single = "Only one sentence here."
    assert debias_caption(single, np.random.default_rng(0)) == single


def test_augmentation_is_deterministic_per_seed_epoch_and_index():
    augment = CaptionAugmentation("debias", TOKENIZER, seed=3)
    first = augment(CAPTION, 2, 7)
    again = CaptionAugmentation("debias", TOKENIZER, seed=3)(CAPTION, 2, 7)
    assert first[0] == again[0] and torch.equal(first[1], again[1])
    others = [augment(CAPTION, epoch, index) for epoch, index in ((3, 7), (2, 8), (4, 7), (2, 9))]
    assert any(not torch.equal(first[1], o[1]) for o in others)
    none = CaptionAugmentation("none", TOKENIZER)(CAPTION, 1, 0)
    assert none[0] == CAPTION and torch.equal(none[1], TOKENIZER([CAPTION])[0])


def test_token_padding_shifts_the_caption_and_encodes_as_the_explicit_sequence():
    ids = padded_token_ids("a red circle.", TOKENIZER, np.random.default_rng(1))
    body = TOKENIZER.encode("a red circle.")
    nonzero = ids.nonzero().flatten().tolist()
    padding = nonzero[1] - 1
    assert ids[0] == TOKENIZER.sot_token_id and padding >= 0
    assert ids[nonzero[1] : nonzero[1] + len(body)].tolist() == body
    assert ids[nonzero[-1]] == TOKENIZER.eot_token_id and len(ids) == LONG_CONTEXT
    # padding inside the sequence is kept by the encoder: same as encoding exactly the ids up to the end token
    torch.manual_seed(0)
    model = build_clip(TINY_ARCH).eval()
    end = nonzero[-1] + 1
    pooled = encode_texts(model, ids[None])[0]
    x = model.token_embedding(ids[None, :end]) + model.positional_embedding[:end]
    x = model.ln_final(model.transformer(x, attn_mask=model.attn_mask[:end, :end]))
    torch.testing.assert_close(pooled, x[:, end - 1] @ model.text_projection)


def test_unknown_augmentation_is_refused():
    with pytest.raises(ValueError, match="caption_augmentation"):
        build_framework("longclip", caption_augmentation="shuffle")
    with pytest.raises(ValueError, match="caption_augmentation"):
        CaptionAugmentation("shuffle", TOKENIZER)
