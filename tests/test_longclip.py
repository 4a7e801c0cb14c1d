"""Long-CLIP checkpoint loading (research notes longclip.md §1, §3): a tiny checkpoint with the real key
names, checked against an independent functional forward of Long-CLIP's architecture."""

import math

import pytest
import torch
import torch.nn.functional as F
from PIL import Image

from hnclip_core.longclip import (
    KEEP_POSITIONS,
    LONG_CONTEXT,
    CheckpointError,
    ClipArchitecture,
    build_clip,
    infer_architecture,
    keep_first_positions_frozen,
    load_longclip,
    longclip_param_groups,
    save_longclip,
    stretch_positional_embedding,
)

TINY = ClipArchitecture(
    embed_dim=64, image_size=32, patch_size=8, vision_width=128, vision_layers=2, vision_mlp_ratio=4.0,
    context_length=LONG_CONTEXT, vocab_size=49408, text_width=128, text_layers=2, text_mlp_ratio=4.0,
)


def tiny_longclip_state_dict(seed=0):
    """Random weights under the key names of longclip-L.pt, with distinct positional_embedding_res."""
    torch.manual_seed(seed)
    state = {k: v.clone() for k, v in build_clip(TINY).state_dict().items()}
    for value in state.values():  # open_clip zero-initialises some tensors; make every one informative
        value.add_(0.02 * torch.randn_like(value))
    state["positional_embedding_res"] = torch.randn_like(state["positional_embedding"])
    return state


@pytest.fixture
def checkpoint(tmp_path):
    state = tiny_longclip_state_dict()
    path = tmp_path / "longclip-tiny.pt"
    torch.save(state, path)
    return path, state


# ---------------------------------------------------------------- independent reference forward

def _block(x, sd, prefix, heads, attn_mask=None):
    def ln(t, name):
        return F.layer_norm(t, t.shape[-1:], sd[f"{prefix}.{name}.weight"], sd[f"{prefix}.{name}.bias"])

    h = ln(x, "ln_1").transpose(0, 1)  # [L, B, W]
    attn, _ = F.multi_head_attention_forward(
        h, h, h, h.shape[-1], heads,
        sd[f"{prefix}.attn.in_proj_weight"], sd[f"{prefix}.attn.in_proj_bias"],
        None, None, False, 0.0,
        sd[f"{prefix}.attn.out_proj.weight"], sd[f"{prefix}.attn.out_proj.bias"],
        need_weights=False, attn_mask=attn_mask,
    )
    x = x + attn.transpose(0, 1)
    h = F.linear(ln(x, "ln_2"), sd[f"{prefix}.mlp.c_fc.weight"], sd[f"{prefix}.mlp.c_fc.bias"])
    h = h * torch.sigmoid(1.702 * h)  # QuickGELU
    return x + F.linear(h, sd[f"{prefix}.mlp.c_proj.weight"], sd[f"{prefix}.mlp.c_proj.bias"])


def reference_encode_text(sd, tokens):
    """Long-CLIP's text forward: tok_emb + pe·mask1 + pe_res·mask2, causal blocks, EOT pooling."""
    length = tokens.shape[1]
    mask1 = torch.zeros(length, 1)
    mask1[:KEEP_POSITIONS] = 1
    x = sd["token_embedding.weight"][tokens]
    x = x + sd["positional_embedding"] * mask1 + sd["positional_embedding_res"] * (1 - mask1)
    causal = torch.full((length, length), float("-inf")).triu(1)
    for i in range(TINY.text_layers):
        x = _block(x, sd, f"transformer.resblocks.{i}", TINY.text_width // 64, causal)
    x = F.layer_norm(x, x.shape[-1:], sd["ln_final.weight"], sd["ln_final.bias"])
    return x[torch.arange(x.shape[0]), tokens.argmax(dim=-1)] @ sd["text_projection"]


def reference_encode_image(sd, images):
    x = F.conv2d(images, sd["visual.conv1.weight"], stride=TINY.patch_size).flatten(2).transpose(1, 2)
    cls = sd["visual.class_embedding"].expand(x.shape[0], 1, -1)
    x = torch.cat([cls, x], dim=1) + sd["visual.positional_embedding"]
    x = F.layer_norm(x, x.shape[-1:], sd["visual.ln_pre.weight"], sd["visual.ln_pre.bias"])
    for i in range(TINY.vision_layers):
        x = _block(x, sd, f"visual.transformer.resblocks.{i}", TINY.vision_width // 64)
    x = F.layer_norm(x[:, 0], x.shape[-1:], sd["visual.ln_post.weight"], sd["visual.ln_post.bias"])
    return x @ sd["visual.proj"]


# ---------------------------------------------------------------- tests

def test_architecture_is_inferred_from_shapes(checkpoint):
    _, state = checkpoint
    assert infer_architecture(state) == TINY
    assert TINY.text_heads == 2 and TINY.vision_heads == 2


def test_effective_positional_table_merges_rows(checkpoint):
    path, state = checkpoint
    model, _, _ = load_longclip(path)
    expected = torch.cat(
        [state["positional_embedding"][:KEEP_POSITIONS], state["positional_embedding_res"][KEEP_POSITIONS:]]
    )
    assert torch.equal(model.positional_embedding.detach(), expected)


def test_outputs_match_reference_forward(checkpoint):
    path, state = checkpoint
    model, preprocess, tokenizer = load_longclip(path)
    assert tokenizer.context_length == 248
    long_caption = " ".join(["a red circle left of a blue square on a grey floor"] * 30)  # > 248 tokens
    tokens = tokenizer(["a photo of a cat", long_caption])
    assert tokens.shape == (2, 248) and tokens[1, -1] == 49407
    images = torch.stack([preprocess(Image.new("RGB", (40, 50), c)) for c in ("red", "navy")])
    assert images.shape == (2, 3, 32, 32)
    with torch.no_grad():
        assert torch.allclose(model.encode_text(tokens), reference_encode_text(state, tokens), atol=1e-5)
        assert torch.allclose(model.encode_image(images), reference_encode_image(state, images), atol=1e-5)
    assert model.logit_scale.item() == pytest.approx(state["logit_scale"].item())
    assert not model.training


def test_save_load_round_trip(checkpoint, tmp_path):
    path, _ = checkpoint
    model, _, tokenizer = load_longclip(path)
    with torch.no_grad():
        model.positional_embedding[KEEP_POSITIONS:] += 1.0  # as after fine-tuning rows 20+
    copy_path = save_longclip(model, tmp_path / "out" / "copy.pt")
    saved = torch.load(copy_path, weights_only=True)
    assert "positional_embedding_res" in saved and saved["logit_scale"].dtype == torch.float32
    reloaded, _, _ = load_longclip(copy_path)
    for (name, a), b in zip(model.state_dict().items(), reloaded.state_dict().values(), strict=True):
        assert torch.equal(a, b), name
    tokens = tokenizer(["two green triangles"])
    with torch.no_grad():
        assert torch.equal(model.encode_text(tokens), reloaded.encode_text(tokens))
    assert not list((tmp_path / "out").glob("*.tmp"))


def test_module_prefix_and_wrapper_are_accepted(checkpoint, tmp_path):
    _, state = checkpoint
    wrapped = tmp_path / "wrapped.pt"
    torch.save({"state_dict": {f"module.{k}": v for k, v in state.items()}}, wrapped)
    model, _, _ = load_longclip(wrapped)
    assert model.positional_embedding.shape == (248, 128)


def test_missing_file(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.pt"):
        load_longclip(tmp_path / "nope.pt")


@pytest.mark.parametrize("content", [b"not a checkpoint at all", b""])
def test_corrupt_file(tmp_path, content):
    path = tmp_path / "broken.pt"
    path.write_bytes(content)
    with pytest.raises(CheckpointError, match="broken.pt"):
        load_longclip(path)


def test_not_a_state_dict(tmp_path):
    path = tmp_path / "list.pt"
    torch.save([torch.zeros(2)], path)
    with pytest.raises(CheckpointError, match="not a state dict"):
        load_longclip(path)


def test_pickled_code_is_refused(tmp_path):
    path = tmp_path / "object.pt"
    torch.save({"weights": torch.zeros(1), "config": ClipArchitecture(**TINY.as_dict())}, path)
    with pytest.raises(CheckpointError, match="object.pt"):
        load_longclip(path)


def test_missing_and_unexpected_keys_are_named(checkpoint, tmp_path):
    _, state = checkpoint
    broken = dict(state)
    del broken["transformer.resblocks.1.ln_2.bias"]
    broken["visual.extra_head.weight"] = torch.zeros(3)
    path = tmp_path / "keys.pt"
    torch.save(broken, path)
    with pytest.raises(CheckpointError) as err:
        load_longclip(path)
    message = str(err.value)
    assert "keys.pt" in message and "transformer.resblocks.1.ln_2.bias" in message
    assert "visual.extra_head.weight" in message


def test_missing_shape_key_is_named(checkpoint, tmp_path):
    _, state = checkpoint
    broken = {k: v for k, v in state.items() if k != "text_projection"}
    path = tmp_path / "noproj.pt"
    torch.save(broken, path)
    with pytest.raises(CheckpointError, match="text_projection"):
        load_longclip(path)


def test_inconsistent_shapes_are_named(checkpoint, tmp_path):
    _, state = checkpoint
    broken = dict(state)
    broken["transformer.resblocks.0.mlp.c_proj.bias"] = torch.zeros(64)
    path = tmp_path / "shapes.pt"
    torch.save(broken, path)
    with pytest.raises(CheckpointError, match=r"shapes.pt.*transformer\.resblocks\.0\.mlp\.c_proj\.bias"):
        load_longclip(path)
    broken = dict(state)
    broken["positional_embedding_res"] = torch.zeros(77, 128)
    torch.save(broken, path)
    with pytest.raises(CheckpointError, match="positional_embedding_res"):
        load_longclip(path)


def test_stretch_matches_long_clip_formula():
    torch.manual_seed(0)
    old = torch.randn(77, 6)
    new = stretch_positional_embedding(old)
    assert new.shape == (248, 6)
    assert torch.equal(new[:20], old[:20])
    for i in range(56):
        for m in range(4):
            expected = (4 - m) / 4 * old[20 + i] + m / 4 * old[21 + i]
            assert torch.allclose(new[20 + 4 * i + m], expected, atol=1e-6)
    for m in range(4):
        assert torch.allclose(new[244 + m], old[76] + m * (old[76] - old[75]) / 4, atol=1e-6)


def test_first_positions_stay_frozen_under_adamw(checkpoint):
    path, _ = checkpoint
    model, _, tokenizer = load_longclip(path)
    model.train()
    before = model.positional_embedding.detach().clone()
    handle = keep_first_positions_frozen(model)
    optimizer = torch.optim.AdamW(longclip_param_groups(model, weight_decay=0.1), lr=1e-2)
    tokens = tokenizer(["a long caption " * 40, "another long caption " * 40])
    for _ in range(3):
        optimizer.zero_grad()
        model.encode_text(tokens).pow(2).sum().backward()
        optimizer.step()
    after = model.positional_embedding.detach()
    assert torch.equal(after[:KEEP_POSITIONS], before[:KEEP_POSITIONS])
    assert not torch.equal(after[KEEP_POSITIONS:], before[KEEP_POSITIONS:])
    handle.remove()
    groups = longclip_param_groups(model, weight_decay=0.1)
    assert groups[1]["weight_decay"] == 0 and groups[1]["params"][0] is model.positional_embedding
    assert math.isclose(groups[0]["weight_decay"], 0.1)
