"""Exact loading of Long-CLIP checkpoints into open_clip, and writing them back.

Long-CLIP (Zhang et al. 2024; the backbone of every experiment in arXiv 2608.18521, §3.1 and App. D.1)
is OpenAI's CLIP with the text positional table stretched from 77 to 248 rows. Its released files
(``longclip-L.pt``: ViT-L/14, ``longclip-B.pt``: ViT-B/16) are plain fp32 state dicts with OpenAI's key
names plus one extra tensor, ``positional_embedding_res``. Long-CLIP's text forward adds
``positional_embedding * mask1 + positional_embedding_res * mask2`` (mask1 = rows 0–19, mask2 = rows
20–247), so the *effective* table is rows 0–19 of the first and rows 20–247 of the second. We merge the
two into open_clip's single ``positional_embedding`` and load strictly into an open_clip ``CLIP`` with
QuickGELU at context 248; the forward is then the same function as Long-CLIP's.

During fine-tuning Long-CLIP keeps rows 0–19 (the well-trained short-context positions) fixed;
:func:`keep_first_positions_frozen` and :func:`longclip_param_groups` reproduce that on the merged table.

The embedded toy model of this project is written with :func:`save_longclip` and read back with
:func:`load_longclip`, so the tutorial exercises exactly the code path a real checkpoint takes.
"""

from __future__ import annotations

import contextlib
import os
import pickle
import zipfile
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from functools import partial
from pathlib import Path

import open_clip
import torch
from open_clip.model import CLIP, CLIPTextCfg, CLIPVisionCfg

from .files import write_atomically

__all__ = [
    "KEEP_POSITIONS",
    "LONG_CONTEXT",
    "CheckpointError",
    "ClipArchitecture",
    "infer_architecture",
    "build_clip",
    "open_clip_config",
    "load_longclip",
    "load_longclip_state_dict",
    "merge_positional_embedding",
    "save_longclip",
    "longclip_state_dict",
    "stretch_positional_embedding",
    "keep_first_positions_frozen",
    "longclip_param_groups",
]

#: Positional rows Long-CLIP keeps from the 77-token CLIP and never trains.
KEEP_POSITIONS = 20
#: Long-CLIP's text context: 4·77 − 3·20 = 248.
LONG_CONTEXT = 4 * 77 - 3 * KEEP_POSITIONS
#: Keys some CLIP state dicts carry that are not weights (OpenAI's JIT archives); they are dropped.
_NON_WEIGHT_KEYS = ("input_resolution", "context_length", "vocab_size")
#: Tensors every ViT CLIP state dict has; their shapes determine the architecture.
_SHAPE_KEYS = (
    "visual.conv1.weight",
    "visual.positional_embedding",
    "visual.proj",
    "token_embedding.weight",
    "positional_embedding",
    "ln_final.weight",
    "text_projection",
    "logit_scale",
)


class CheckpointError(ValueError):
    """A checkpoint file is missing, unreadable, or not a (Long-)CLIP ViT state dict."""


@dataclass(frozen=True)
class ClipArchitecture:
    """Every size of a ViT CLIP, read off tensor shapes as OpenAI's ``build_model`` does.

    Attention heads are not visible in any shape; as in OpenAI's CLIP they are ``width // 64``.
    """

    embed_dim: int
    image_size: int
    patch_size: int
    vision_width: int
    vision_layers: int
    vision_mlp_ratio: float
    context_length: int
    vocab_size: int
    text_width: int
    text_layers: int
    text_mlp_ratio: float

    @property
    def vision_heads(self) -> int:
        return max(1, self.vision_width // 64)

    @property
    def text_heads(self) -> int:
        return max(1, self.text_width // 64)

    def as_dict(self) -> dict:
        return asdict(self)


def _block_indices(state_dict: Mapping[str, torch.Tensor], prefix: str) -> list[int]:
    return sorted({int(k[len(prefix):].split(".")[0]) for k in state_dict if k.startswith(prefix)})


def infer_architecture(state_dict: Mapping[str, torch.Tensor]) -> ClipArchitecture:
    """Read a ViT CLIP's sizes from its tensor shapes (Long-CLIP's ``build_model`` does the same)."""
    missing = [k for k in _SHAPE_KEYS if k not in state_dict]
    if missing:
        raise CheckpointError(f"not a ViT CLIP state dict: missing keys {missing}")
    conv = state_dict["visual.conv1.weight"]
    vision_width, patch_size = conv.shape[0], conv.shape[-1]
    grid = round((state_dict["visual.positional_embedding"].shape[0] - 1) ** 0.5)
    if grid * grid + 1 != state_dict["visual.positional_embedding"].shape[0]:
        raise CheckpointError(
            "visual.positional_embedding has "
            f"{state_dict['visual.positional_embedding'].shape[0]} rows, not 1 + a square number of patches"
        )
    text_width = state_dict["ln_final.weight"].shape[0]
    vision_layers = _block_indices(state_dict, "visual.transformer.resblocks.")
    text_layers = _block_indices(state_dict, "transformer.resblocks.")
    if not vision_layers or not text_layers:
        raise CheckpointError("state dict has no transformer blocks (visual.transformer.resblocks.* / "
                              "transformer.resblocks.*)")
    for name, layers in (("visual.transformer.resblocks", vision_layers), ("transformer.resblocks", text_layers)):
        if layers != list(range(len(layers))):
            raise CheckpointError(f"{name} indices are not contiguous: {layers}")
    vision_hidden = state_dict.get("visual.transformer.resblocks.0.mlp.c_fc.weight")
    text_hidden = state_dict.get("transformer.resblocks.0.mlp.c_fc.weight")
    return ClipArchitecture(
        embed_dim=state_dict["text_projection"].shape[1],
        image_size=patch_size * grid,
        patch_size=patch_size,
        vision_width=vision_width,
        vision_layers=len(vision_layers),
        vision_mlp_ratio=(vision_hidden.shape[0] / vision_width) if vision_hidden is not None else 4.0,
        context_length=state_dict["positional_embedding"].shape[0],
        vocab_size=state_dict["token_embedding.weight"].shape[0],
        text_width=text_width,
        text_layers=len(text_layers),
        text_mlp_ratio=(text_hidden.shape[0] / text_width) if text_hidden is not None else 4.0,
    )


def open_clip_config(arch: ClipArchitecture) -> dict:
    """open_clip's model config (the JSON of ``open_clip/model_configs``) of a ViT CLIP of the given sizes, with
    QuickGELU (OpenAI and Long-CLIP were trained with it)."""
    return {
        "embed_dim": arch.embed_dim,
        "quick_gelu": True,
        "vision_cfg": {
            "image_size": arch.image_size, "layers": arch.vision_layers, "width": arch.vision_width,
            "head_width": arch.vision_width // arch.vision_heads, "mlp_ratio": arch.vision_mlp_ratio,
            "patch_size": arch.patch_size,
        },
        "text_cfg": {
            "context_length": arch.context_length, "vocab_size": arch.vocab_size, "width": arch.text_width,
            "heads": arch.text_heads, "layers": arch.text_layers, "mlp_ratio": arch.text_mlp_ratio,
        },
    }


def build_clip(arch: ClipArchitecture) -> CLIP:
    """An open_clip ``CLIP`` of the given sizes (:func:`open_clip_config`)."""
    config = open_clip_config(arch)
    return CLIP(config["embed_dim"], vision_cfg=CLIPVisionCfg(**config["vision_cfg"]),
                text_cfg=CLIPTextCfg(**config["text_cfg"]), quick_gelu=config["quick_gelu"])


def merge_positional_embedding(state_dict: dict[str, torch.Tensor]) -> dict[str, torch.Tensor]:
    """Fold ``positional_embedding_res`` into ``positional_embedding`` (a new dict; inputs unchanged).

    Rows 0–19 come from ``positional_embedding``, rows 20+ from ``positional_embedding_res``: exactly
    Long-CLIP's ``pe·mask1 + pe_res·mask2``. A dict without ``positional_embedding_res`` (plain OpenAI
    CLIP format) is returned as is.
    """
    merged = dict(state_dict)
    if "positional_embedding_res" not in merged:
        return merged
    table, residual = merged["positional_embedding"], merged.pop("positional_embedding_res")
    if table.shape != residual.shape:
        raise CheckpointError(
            f"positional_embedding {tuple(table.shape)} and positional_embedding_res "
            f"{tuple(residual.shape)} differ in shape"
        )
    effective = table.clone()
    effective[KEEP_POSITIONS:] = residual[KEEP_POSITIONS:]
    merged["positional_embedding"] = effective
    return merged


def _read_state_dict(path: Path) -> dict[str, torch.Tensor]:
    if not path.is_file():
        raise FileNotFoundError(f"checkpoint not found: {path}")
    try:
        obj = torch.load(path, map_location="cpu", weights_only=True)
    except (pickle.UnpicklingError, zipfile.BadZipFile, RuntimeError, EOFError, OSError) as err:
        raise CheckpointError(f"{path}: cannot be read as a torch checkpoint ({type(err).__name__}: {err})") from err
    if isinstance(obj, Mapping) and "state_dict" in obj and isinstance(obj["state_dict"], Mapping):
        obj = obj["state_dict"]
    if not isinstance(obj, Mapping) or not all(isinstance(v, torch.Tensor) for v in obj.values()):
        raise CheckpointError(f"{path}: not a state dict (a mapping of names to tensors), got {type(obj).__name__}")
    state_dict = {k.removeprefix("module."): v for k, v in obj.items() if k not in _NON_WEIGHT_KEYS}
    return state_dict


@contextlib.contextmanager
def _naming(path: Path):
    """Prefix a :class:`CheckpointError` raised inside with the checkpoint's path."""
    try:
        yield
    except CheckpointError as err:
        raise CheckpointError(f"{path}: {err}") from None


def load_longclip_state_dict(path: str | os.PathLike) -> dict[str, torch.Tensor]:
    """Read a Long-CLIP (or OpenAI-format CLIP) checkpoint as an fp32 state dict with the positional
    tables merged (:func:`merge_positional_embedding`). ``weights_only=True``: no code is unpickled."""
    path = Path(path)
    state_dict = _read_state_dict(path)
    with _naming(path):
        merged = merge_positional_embedding(state_dict)
    return {k: v.float() if v.is_floating_point() else v for k, v in merged.items()}


def load_longclip(path: str | os.PathLike, device: str | torch.device = "cpu"):
    """Load a Long-CLIP-format checkpoint into open_clip: ``(model, preprocess, tokenizer)``.

    Works for the released ``longclip-L.pt`` / ``longclip-B.pt`` and for any smaller model in the same
    format (every size is inferred from tensor shapes, :func:`infer_architecture`). The model is an
    open_clip ``CLIP`` with QuickGELU, in fp32 and eval mode, loaded *strictly*: a missing, unexpected
    or mis-shaped tensor raises :class:`CheckpointError` naming the file and the keys. ``preprocess`` is
    open_clip's eval transform at the model's image size (bicubic resize, centre crop, OpenAI mean/std,
    identical to Long-CLIP's), ``tokenizer`` open_clip's ``SimpleTokenizer`` at the model's context
    length (248 for Long-CLIP; same BPE as Long-CLIP, truncating like its ``truncate=True``).
    """
    path = Path(path)
    state_dict = load_longclip_state_dict(path)
    with _naming(path):
        arch = infer_architecture(state_dict)
    model = build_clip(arch)
    expected = model.state_dict()
    missing = sorted(set(expected) - set(state_dict))
    unexpected = sorted(set(state_dict) - set(expected))
    if missing or unexpected:
        raise CheckpointError(
            f"{path}: keys do not match a CLIP of the inferred architecture {arch.as_dict()}: "
            f"missing {missing[:10]}{' …' if len(missing) > 10 else ''}, "
            f"unexpected {unexpected[:10]}{' …' if len(unexpected) > 10 else ''}"
        )
    wrong_shape = {
        k: (tuple(state_dict[k].shape), tuple(v.shape)) for k, v in expected.items() if state_dict[k].shape != v.shape
    }
    if wrong_shape:
        details = ", ".join(f"{k}: file {a} vs model {b}" for k, (a, b) in list(wrong_shape.items())[:10])
        raise CheckpointError(f"{path}: inconsistent tensor shapes for the inferred architecture: {details}")
    model.load_state_dict(state_dict, strict=True)
    model = model.to(device).eval()
    preprocess = open_clip.image_transform(arch.image_size, is_train=False)
    tokenizer = open_clip.SimpleTokenizer(context_length=arch.context_length)
    return model, preprocess, tokenizer


def longclip_state_dict(model: CLIP) -> dict[str, torch.Tensor]:
    """``model``'s weights in Long-CLIP's file format: OpenAI key names, fp32, on the CPU, plus
    ``positional_embedding_res`` (a copy of the merged table, so rows 20+ are read back from it)."""
    state_dict = {k: v.detach().float().cpu().clone() for k, v in model.state_dict().items()}
    if state_dict["positional_embedding"].shape[0] > KEEP_POSITIONS:
        state_dict["positional_embedding_res"] = state_dict["positional_embedding"].clone()
    return state_dict


def save_longclip(model: CLIP, path: str | os.PathLike) -> Path:
    """Write ``model`` as a Long-CLIP-format checkpoint, atomically (temporary file, then rename)."""
    return write_atomically(path, partial(torch.save, longclip_state_dict(model)))


def stretch_positional_embedding(table: torch.Tensor, keep: int = KEEP_POSITIONS, ratio: int = 4) -> torch.Tensor:
    """Long-CLIP's 77 → 248 knowledge-preserving stretch of a text positional table.

    Rows ``0..keep-1`` are copied; each gap between old rows ``keep..n-1`` is filled by linear
    interpolation at ``ratio`` points (old row p lands at ``keep + ratio·(p - keep)``); the last
    ``ratio`` rows extrapolate linearly past the final old row. 77 rows → ``4·77 − 3·20 = 248``.
    """
    n, width = table.shape
    if n <= keep + 1:
        raise ValueError(f"need more than {keep + 1} positions to stretch, got {n}")
    old = table[keep:]  # [n - keep, W]
    steps = torch.arange(ratio, dtype=table.dtype, device=table.device)[:, None] / ratio  # m / ratio
    lower, upper = old[:-1], old[1:]
    interpolated = (1 - steps[None]) * lower[:, None] + steps[None] * upper[:, None]  # [n-keep-1, ratio, W]
    extrapolated = old[-1] + steps * (old[-1] - old[-2])  # [ratio, W]
    return torch.cat([table[:keep], interpolated.reshape(-1, width), extrapolated])


def keep_first_positions_frozen(model: CLIP, keep: int = KEEP_POSITIONS):
    """Zero the gradient of positional rows ``0..keep-1`` on every backward (Long-CLIP's training rule).

    Together with no weight decay on ``positional_embedding`` (:func:`longclip_param_groups`) AdamW then
    leaves those rows bit-for-bit unchanged. Returns the hook handle (``handle.remove()`` undoes it).
    """

    def zero_kept_rows(grad: torch.Tensor) -> torch.Tensor:
        grad = grad.clone()
        grad[:keep] = 0
        return grad

    return model.positional_embedding.register_hook(zero_kept_rows)


def longclip_param_groups(model: CLIP, weight_decay: float) -> list[dict]:
    """AdamW parameter groups as in Long-CLIP's fine-tuning (weight decay on every trainable tensor),
    except ``positional_embedding``, which gets none so its frozen rows cannot decay."""
    decay, no_decay = [], []
    for name, param in model.named_parameters():
        if not param.requires_grad:
            continue
        (no_decay if name == "positional_embedding" else decay).append(param)
    return [
        {"params": decay, "weight_decay": weight_decay},
        {"params": no_decay, "weight_decay": 0.0},
    ]
