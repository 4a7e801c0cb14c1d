"""Shared fixtures: a tiny Long-CLIP-format checkpoint and a tiny synthetic benchmark on disk."""

import pytest
import torch

from hnclip_core.longclip import LONG_CONTEXT, ClipArchitecture, build_clip, save_longclip
from hnclip_core.toy.synthetic import SyntheticConfig, register_datasets, write_synthetic_benchmark

TINY_ARCH = ClipArchitecture(
    embed_dim=32, image_size=32, patch_size=8, vision_width=64, vision_layers=1, vision_mlp_ratio=2.0,
    context_length=LONG_CONTEXT, vocab_size=49408, text_width=64, text_layers=1, text_mlp_ratio=2.0,
)


@pytest.fixture(scope="session")
def tiny_checkpoint(tmp_path_factory):
    """A randomly initialised tiny CLIP saved in Long-CLIP's format (s = 100, as Long-CLIP's)."""
    torch.manual_seed(0)
    model = build_clip(TINY_ARCH)
    with torch.no_grad():
        model.logit_scale.fill_(torch.log(torch.tensor(100.0)))
    return save_longclip(model, tmp_path_factory.mktemp("ckpt") / "tiny-longclip.pt")


@pytest.fixture(scope="session")
def tiny_benchmark(tmp_path_factory):
    """48 train / 16 test images in DOCCI's format."""
    config = SyntheticConfig(seed=3, num_train_families=12, num_test_families=4, num_val_families=4, image_size=32)
    register_datasets()  # the tests train on it by its name, "synthetic"
    return write_synthetic_benchmark(tmp_path_factory.mktemp("synthetic") / "bench", config)
