"""Multi-process training on ``torch.distributed``: ``torchrun --nproc_per_node=N -m hnclip_core train ...``.

How the paper's objective is kept *global* across processes:

* Every process encodes its own shard of each micro-batch (``micro_batch_size`` pairs per process, so a
  global micro-batch of ``N × micro_batch_size``), then :func:`gather_encoded` all-gathers the features —
  global embeddings *and* the patch/word tokens of L_tok — with gradient for the local shard
  (``torch.distributed.nn.functional.all_gather``, as open_clip's ``gather_with_grad``). Every process then
  evaluates the same loss on the whole global micro-batch: the InfoNCE negatives, Ḡ of L_HN and the
  in-batch negatives of L_tok all span the global batch, exactly as in one process with the large batch.
* The all-gather's backward sums, over processes, the gradients that reach each shard; since every process
  computed the same global loss, process r receives N × ∂L/∂(its features). :func:`average_gradients`
  then averages the parameter gradients over processes (one all-reduce per optimizer step, after all
  accumulated micro-batches), which gives exactly the single-process gradient of the global loss — the
  learned temperature, whose gradient is not routed through the gather, included. The model is therefore
  not wrapped in ``DistributedDataParallel`` (whose reducer expects ``forward`` to be called; the
  objectives need the encoders' token outputs), and the equality is tested (``tests/test_distributed.py``).
* Both accumulation modes compose with this: ``naive`` gathers each micro-batch; ``cached`` gathers the
  cached features of all micro-batches and, per micro-batch, the re-encoded one with gradient.

The data order is the single-process one: every process draws the same global batches (same seed) and
takes its slice of each global micro-batch, so a run on N processes with ``micro_batch_size = m`` sees the
same batches as one process with ``m × N``. Evaluation, checkpoints and result files are done by every
process on identical weights but written only by rank 0.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

import torch
import torch.distributed as dist
import torch.nn.functional as F

from .features import EncodedBatch

__all__ = ["DistributedContext", "init_distributed", "gather_encoded", "gather_indices", "average_gradients"]


@dataclass(frozen=True)
class DistributedContext:
    """Rank and world size of this process (``world_size == 1``: not distributed)."""

    rank: int = 0
    world_size: int = 1
    local_rank: int = 0

    @property
    def enabled(self) -> bool:
        return self.world_size > 1

    @property
    def is_main(self) -> bool:
        return self.rank == 0


def init_distributed(device: torch.device) -> DistributedContext:
    """Join the process group that ``torchrun`` describes in the environment (``WORLD_SIZE`` > 1), if any.

    The backend is NCCL for CUDA devices and Gloo otherwise (CPU runs, and the tests).
    """
    world_size = int(os.environ.get("WORLD_SIZE", "1"))
    if world_size <= 1:
        return DistributedContext()
    if not dist.is_initialized():
        dist.init_process_group("nccl" if device.type == "cuda" else "gloo")
    return DistributedContext(dist.get_rank(), dist.get_world_size(), int(os.environ.get("LOCAL_RANK", "0")))


def _gather_with_grad(tensors: list[torch.Tensor]) -> list[torch.Tensor]:
    """All-gather several ``[B, ...]`` tensors (equal shapes on every process) with gradient, in rank order.

    They travel packed in *one* collective on purpose: the backward of each all-gather is a collective too,
    and autograd may run the backward of separate gathers in a different order on different processes —
    which pairs up the wrong tensors whenever their shapes happen to agree.
    """
    from torch.distributed.nn.functional import all_gather

    batch = tensors[0].shape[0]
    packed = torch.cat([t.reshape(batch, -1) for t in tensors], dim=1).contiguous()
    gathered = torch.cat(all_gather(packed))
    pieces = gathered.split([t[0].numel() for t in tensors], dim=1)
    return [piece.reshape(-1, *t.shape[1:]) for piece, t in zip(pieces, tensors, strict=True)]


def gather_encoded(batch: EncodedBatch, context: DistributedContext) -> EncodedBatch:
    """The global micro-batch: every process's features concatenated in rank order, differentiable for the
    local shard. Word-token tensors are right-padded to the longest caption of any process (id 0 = padding,
    which L_tok masks)."""
    if not context.enabled:
        return batch
    if batch.text_tokens is None:
        return EncodedBatch(*_gather_with_grad([batch.image_features, batch.text_features]))
    length = torch.tensor([batch.text_ids.shape[1]], device=batch.text_ids.device)
    dist.all_reduce(length, op=dist.ReduceOp.MAX)
    pad = int(length) - batch.text_ids.shape[1]
    text_tokens = F.pad(batch.text_tokens, (0, 0, 0, pad))
    gathered = _gather_with_grad([batch.image_features, batch.text_features, batch.image_tokens, text_tokens])
    ids = F.pad(batch.text_ids, (0, pad)).contiguous()
    parts = [torch.empty_like(ids) for _ in range(context.world_size)]
    dist.all_gather(parts, ids)
    return EncodedBatch(*gathered, text_ids=torch.cat(parts))


def gather_indices(indices: torch.Tensor, context: DistributedContext) -> torch.Tensor:
    """Dataset indices of the global micro-batch (rank order), e.g. to look up frozen caption features."""
    if not context.enabled:
        return indices
    parts = [torch.empty_like(indices) for _ in range(context.world_size)]
    dist.all_gather(parts, indices.contiguous())
    return torch.cat(parts)


def average_gradients(model: torch.nn.Module, context: DistributedContext) -> None:
    """Average every parameter's gradient over the processes (one flat all-reduce)."""
    if not context.enabled:
        return
    grads = [p.grad for p in model.parameters() if p.grad is not None]
    if not grads:
        return
    flat = torch.cat([g.reshape(-1) for g in grads])
    dist.all_reduce(flat)
    flat /= context.world_size
    offset = 0
    for g in grads:
        g.copy_(flat[offset : offset + g.numel()].view_as(g))
        offset += g.numel()
