"""Trimmed text encoding and token outputs equal open_clip's own forward (features.py)."""

import open_clip
import torch

from hnclip_core.features import encode_batch
from hnclip_core.longclip import LONG_CONTEXT, ClipArchitecture, build_clip


def test_encode_batch_matches_open_clip_forward():
    torch.manual_seed(0)
    model = build_clip(ClipArchitecture(32, 32, 8, 64, 2, 4.0, LONG_CONTEXT, 49408, 64, 2, 4.0)).eval()
    tokenizer = open_clip.SimpleTokenizer(context_length=LONG_CONTEXT)
    ids = tokenizer(["a small red circle", "two blue squares above a large green triangle near the top left"])
    images = torch.randn(2, 3, 32, 32)
    with torch.no_grad():
        out = encode_batch(model, images, ids, with_tokens=True)
        assert torch.allclose(out.text_features, model.encode_text(ids), atol=1e-5)
        assert torch.allclose(out.image_features, model.encode_image(images), atol=1e-6)
        longest = int((ids != 0).sum(1).max())
        assert out.text_ids.shape == (2, longest) and out.text_tokens.shape == (2, longest, 32)
        assert out.image_tokens.shape == (2, 16, 32)
        # the end-of-text token's state is the pooled caption embedding
        eot = ids.argmax(dim=-1)
        assert torch.allclose(out.text_tokens[torch.arange(2), eot], out.text_features, atol=1e-6)
        # patch tokens: ln_post(last block)[:, 1:] @ proj, i.e. the same path as the class token
        assert model.visual.output_tokens is False
        plain = encode_batch(model, images, ids)
        assert plain.image_tokens is None and plain.text_tokens is None
