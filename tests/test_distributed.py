"""Two CPU processes (gloo) compute exactly what one process computes on the same global batch.

Checked: the trainer's objectives through :func:`accumulated_losses`, the loss gathering every process's shard
(naive and cached accumulation, live and frozen Ḡ, L_tok's token tensors) under ``DistributedDataParallel`` with
``no_sync`` on all but the last micro-batch, as the trainer steps; ``HNClipLoss`` as a drop-in ``ClipLoss``
(open_clip's ``local_loss`` and ``gather_with_grad`` options); and ``torchrun -m hnclip_core train`` end to end.
"""

import json
import os
import subprocess
import sys
from contextlib import nullcontext
from functools import partial
from pathlib import Path

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
from torch.nn.parallel import DistributedDataParallel

from hnclip_core.accumulation import MicroBatch, accumulated_losses
from hnclip_core.features import BatchEncoder, encode_batch
from hnclip_core.longclip import build_clip
from hnclip_core.losses import HNClipLoss, HNClipTokenLoss
from tests.conftest import TINY_ARCH

WORLD = 2
MICRO = 3  # pairs per process and micro-batch
STEPS = 2  # accumulated micro-batches
CASES = [("hn+tok", "naive", False), ("hn+tok", "cached", False), ("hn", "naive", True), ("clip", "cached", False)]
#: Table 3b's objectives as (γ, λ)
OBJECTIVES = {"clip": (0.0, 0.0), "hn": (0.5, 0.0), "hn+tok": (0.5, 1.0)}


def global_batch():
    generator = torch.Generator().manual_seed(1)
    n = WORLD * MICRO * STEPS
    images = torch.randn(n, 3, TINY_ARCH.image_size, TINY_ARCH.image_size, generator=generator)
    tokens = torch.zeros(n, TINY_ARCH.context_length, dtype=torch.long)
    for i in range(n):  # captions of different lengths: start token, words, end-of-text token
        length = 5 + (7 * i) % 11
        tokens[i, 0] = 49406
        tokens[i, 1:length] = torch.randint(1, 49000, (length - 1,), generator=generator)
        tokens[i, length] = 49407
    frozen = torch.nn.functional.normalize(torch.randn(n, TINY_ARCH.embed_dim, generator=generator), dim=-1)
    return images, tokens, frozen


def model():
    torch.manual_seed(0)
    return build_clip(TINY_ARCH).train()


def loss_features():
    return torch.nn.functional.normalize(torch.randn(WORLD * 4, 8, generator=torch.Generator().manual_seed(2)), dim=-1)


def micro_batches(images, tokens, rank=None):
    """Global micro-batches (rank=None), or one process's shard of each."""
    global_size = WORLD * MICRO
    parts = []
    for start in range(0, len(images), global_size):
        lo, hi = (start, start + global_size) if rank is None else (start + rank * MICRO, start + (rank + 1) * MICRO)
        parts.append(MicroBatch(images[lo:hi], tokens[lo:hi], torch.arange(lo, hi)))
    return parts


def losses_and_grads(net, parts, objective, accumulation, frozen, distributed=False):
    net.zero_grad(set_to_none=True)
    margin = (lambda idx: frozen[idx]) if frozen is not None else None
    encode = DistributedDataParallel(BatchEncoder(net)) if distributed else partial(encode_batch, net)
    # as the trainer builds it: across processes the loss gathers the shards
    world = {"rank": dist.get_rank(), "world_size": WORLD} if distributed else {}
    loss = HNClipTokenLoss(*OBJECTIVES[objective], gather_with_grad=True, **world)
    stream = accumulated_losses(encode, net.logit_scale, parts, loss, accumulation, margin)
    values = []
    for i in range(len(parts)):
        last = i == len(parts) - 1
        with encode.no_sync() if distributed and not last else nullcontext():
            loss = next(stream)
            loss.backward()
        values.append(loss.item())
    return values, {name: p.grad.clone() for name, p in net.named_parameters() if p.grad is not None}


def worker(rank, out_dir):
    dist.init_process_group("gloo", init_method=f"file://{out_dir}/rendezvous", rank=rank, world_size=WORLD)
    torch.set_num_threads(1)
    images, tokens, frozen = global_batch()
    results = {}
    for name, accumulation, use_frozen in CASES:
        net = model()
        results[(name, accumulation, use_frozen)] = losses_and_grads(
            net, micro_batches(images, tokens, rank), name, accumulation, frozen if use_frozen else None,
            distributed=True)
    # HNClipLoss as a drop-in ClipLoss: features of this process's shard, leaf tensors.
    features = loss_features()
    for local_loss in (False, True):
        image = features[rank * 4 : (rank + 1) * 4].clone().requires_grad_()
        text = features.flip(0)[rank * 4 : (rank + 1) * 4].clone().requires_grad_()
        loss_fn = HNClipLoss(gamma=0.5, local_loss=local_loss, gather_with_grad=True, rank=rank, world_size=WORLD)
        loss = loss_fn(image, text, torch.tensor(20.0))
        loss.backward()
        results[("HNClipLoss", local_loss)] = (loss.item(), image.grad, text.grad)
    torch.save(results, Path(out_dir) / f"rank{rank}.pt")
    dist.destroy_process_group()


@pytest.fixture(scope="module")
def distributed_results(tmp_path_factory):
    out_dir = tmp_path_factory.mktemp("ddp")
    mp.start_processes(worker, args=(str(out_dir),), nprocs=WORLD, start_method="spawn")
    return [torch.load(out_dir / f"rank{r}.pt", weights_only=False) for r in range(WORLD)]


@pytest.mark.parametrize("case", CASES, ids=["-".join(map(str, c)) for c in CASES])
def test_two_processes_give_the_single_process_loss_and_gradient(distributed_results, case):
    name, accumulation, use_frozen = case
    images, tokens, frozen = global_batch()
    single_losses, single_grads = losses_and_grads(
        model(), micro_batches(images, tokens), name, accumulation, frozen if use_frozen else None)
    for rank_results in distributed_results:
        losses, grads = rank_results[case]
        assert losses == pytest.approx(single_losses, rel=1e-5)
        assert grads.keys() == single_grads.keys()
        for key, grad in grads.items():
            scale = max(1.0, single_grads[key].abs().max().item())  # float summation order differs
            torch.testing.assert_close(grad, single_grads[key], rtol=1e-4, atol=1e-6 * scale, msg=key)


@pytest.mark.parametrize("local_loss", [False, True])
def test_hnclip_loss_distributed_path_matches_one_process(distributed_results, local_loss):
    features = loss_features()
    image = features.clone().requires_grad_()
    text = features.flip(0).clone().requires_grad_()
    single = HNClipLoss(gamma=0.5)(image, text, torch.tensor(20.0))
    single.backward()
    losses = [r[("HNClipLoss", local_loss)][0] for r in distributed_results]
    # local_loss: each process's loss covers its own rows, so their mean is the global loss.
    assert sum(losses) / WORLD == pytest.approx(single.item(), rel=1e-5)
    for rank, result in enumerate(distributed_results):
        _, image_grad, text_grad = result[("HNClipLoss", local_loss)]
        rows = slice(rank * 4, (rank + 1) * 4)
        # The gather's backward sums over processes; averaging over processes (as DDP does) gives the
        # single-process gradient.
        torch.testing.assert_close(image_grad / WORLD, image.grad[rows], rtol=1e-4, atol=1e-6)
        torch.testing.assert_close(text_grad / WORLD, text.grad[rows], rtol=1e-4, atol=1e-6)


@pytest.mark.slow
def test_torchrun_training_equals_one_process_with_the_global_micro_batch(tiny_checkpoint, tiny_benchmark, tmp_path):
    common = ["--checkpoint", str(tiny_checkpoint), "--dataset", "synthetic", "--data-root", str(tiny_benchmark),
              "--epochs", "1", "--accumulation-steps", "2", "--lr", "1e-3", "--warmup-steps", "1",
              "--eval-ks", "1", "5", "--device", "cpu", "--no-progress"]
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    launcher = [sys.executable, "-m", "torch.distributed.run", "--standalone", "--nproc-per-node", "2"]
    launched = subprocess.run([*launcher, "-m", "hnclip_core", "train", *common, "--micro-batch-size", "4",
                               "--output-dir", str(tmp_path / "ddp")], check=True, env=env, capture_output=True,
                              text=True)
    assert launched.stdout.count('"zero_shot"') == 1  # one summary, from rank 0
    subprocess.run([sys.executable, "-m", "hnclip_core", "train", *common, "--micro-batch-size", "8",
                    "--output-dir", str(tmp_path / "single")], check=True, env=env, capture_output=True)
    ddp = torch.load(tmp_path / "ddp" / "training_state.pt", weights_only=True)["model"]
    single = torch.load(tmp_path / "single" / "training_state.pt", weights_only=True)["model"]
    # The key third of an attention layer's in_proj_bias has an exactly-zero true gradient (softmax ignores a
    # shift shared by all keys), so what it gets is float noise, which AdamW (dividing by the gradient's RMS)
    # turns into lr-sized steps. It is left out; everything else must agree.
    for key in single:
        a, b = ddp[key], single[key]
        if key.endswith("attn.in_proj_bias"):
            third = len(b) // 3
            a, b = torch.cat([a[:third], a[2 * third :]]), torch.cat([b[:third], b[2 * third :]])
        torch.testing.assert_close(a, b, rtol=1e-3, atol=1e-5, msg=key)
    ddp_history = json.loads((tmp_path / "ddp" / "history.json").read_text())["history"]
    single_history = json.loads((tmp_path / "single" / "history.json").read_text())["history"]
    assert ddp_history[-1]["train_loss"] == pytest.approx(single_history[-1]["train_loss"], rel=1e-4)
