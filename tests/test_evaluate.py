"""Recall@K for 1:1 retrieval (paper App. D.3) against a per-query loop, ties, and dataset encoding."""

import pytest
import torch
import torch.nn.functional as F
from PIL import Image

from hnclip_core.data import ImageCaptionPair, PairDataset
from hnclip_core.evaluate import encode_dataset, mean_recall, ranks_of_ground_truth, recall_at_k
from hnclip_core.longclip import build_clip


def loop_recall(images, texts, k):
    """Reference: rank every query with argsort, one query at a time."""
    scores = F.normalize(texts, dim=-1) @ F.normalize(images, dim=-1).t()
    t2i = sum(i in scores[i].argsort(descending=True)[:k].tolist() for i in range(len(scores)))
    i2t = sum(j in scores[:, j].argsort(descending=True)[:k].tolist() for j in range(len(scores)))
    return 100 * t2i / len(scores), 100 * i2t / len(scores)


@pytest.mark.parametrize("block_size", [3, 4096])
def test_recall_matches_per_query_loop(block_size):
    g = torch.Generator().manual_seed(0)
    images = torch.randn(50, 8, generator=g)
    texts = images + 1.2 * torch.randn(50, 8, generator=g)
    t2i_ranks, i2t_ranks = ranks_of_ground_truth(images, texts, block_size=block_size)
    recalls = recall_at_k(images, texts, ks=(1, 5, 10))
    for k in (1, 5, 10):
        t2i, i2t = loop_recall(images, texts, k)
        assert recalls["t2i"][k] == pytest.approx(t2i)
        assert recalls["i2t"][k] == pytest.approx(i2t)
        assert 100 * (t2i_ranks <= k).float().mean() == pytest.approx(t2i)
    assert 0 < recalls["t2i"][1] < 100  # the fixture is neither trivial nor hopeless


def test_known_ranks_and_ties_count_against_the_query():
    images = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    texts = torch.tensor([[1.0, 0.1], [1.0, 0.0], [1.0, 1.0]])
    t2i, i2t = ranks_of_ground_truth(images, texts)
    # caption 1 = [1, 0] scores image 0 (cos 1) above its own image 1 (cos 0) and image 2 (0.71)
    assert t2i.tolist() == [1, 3, 1]
    # duplicate captions: image 0 is matched equally well by caption 0's twin → a tie is not a hit
    twins = torch.tensor([[1.0, 0.0], [1.0, 0.0], [0.0, 1.0]])
    t2i, i2t = ranks_of_ground_truth(twins, twins)
    assert t2i.tolist() == [2, 2, 1] and i2t.tolist() == [2, 2, 1]
    recalls = recall_at_k(twins, twins, ks=(1, 2))
    assert recalls["t2i"] == {1: pytest.approx(100 / 3), 2: 100.0}
    assert mean_recall(recalls, 2) == 100.0


def test_perfect_and_shape_mismatch():
    x = torch.eye(6)
    assert recall_at_k(x, x, ks=(1,)) == {"t2i": {1: 100.0}, "i2t": {1: 100.0}}
    with pytest.raises(ValueError, match="as many captions as images"):
        recall_at_k(torch.eye(6), torch.eye(5, 6))


def test_encode_dataset_returns_normalised_features_in_order(tmp_path):
    torch.manual_seed(0)
    import open_clip

    from hnclip_core.longclip import ClipArchitecture

    arch = ClipArchitecture(32, 32, 16, 64, 1, 4.0, 77, 49408, 64, 1, 4.0)
    model = build_clip(arch)
    model.train()
    pairs = []
    for i, colour in enumerate(["red", "green", "blue", "white", "black"]):
        path = tmp_path / f"{i}.png"
        Image.new("RGB", (32, 32), colour).save(path)
        pairs.append(ImageCaptionPair(path, f"a {colour} square"))
    preprocess = open_clip.image_transform(32, is_train=False)
    dataset = PairDataset(pairs, preprocess, open_clip.SimpleTokenizer(context_length=77))
    images, texts = encode_dataset(model, dataset, batch_size=2, progress=False)
    assert images.shape == (5, 32) and texts.shape == (5, 32)
    assert torch.allclose(images.norm(dim=-1), torch.ones(5)) and torch.allclose(texts.norm(dim=-1), torch.ones(5))
    assert model.training  # mode restored
    with torch.no_grad():
        model.eval()
        third = F.normalize(model.encode_text(dataset[2][1][None]), dim=-1)
    assert torch.allclose(texts[2], third[0], atol=1e-6)
