"""Training throughput of the toy Long-CLIP for each objective (img/s), measured interleaved.

    python benchmarks/train_throughput.py [--rounds 5] [--steps 2] [--accumulation naive] [--json FILE]

Each round runs ``--steps`` optimizer steps of every objective in turn (clip, hn, hn+tok) at the
paper's effective batch 128 = 16 × 8, on the same fixed batch of synthetic scenes, so slow drifts of
the machine hit all objectives alike. Reported: median img/s per objective over rounds, and each
objective's time relative to InfoNCE. Not a test: numbers depend on the machine; the script prints
what it ran on. ``--json`` also writes every round's seconds and the conditions (``results/train_throughput.json``,
which ``docs/benchmarks.md`` is rendered from).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import time
from functools import partial
from pathlib import Path

import open_clip
import torch
from conditions import conditions, machine, write_json

from hnclip_core.accumulation import ACCUMULATION_MODES, MicroBatch, accumulated_losses
from hnclip_core.features import encode_batch
from hnclip_core.longclip import LONG_CONTEXT, build_clip, keep_first_positions_frozen, longclip_param_groups
from hnclip_core.losses import HNClipTokenLoss
from hnclip_core.replication.objectives import objective_parameters
from hnclip_core.replication.report import describe_machine
from hnclip_core.toy import TOY_ARCHITECTURE
from hnclip_core.toy.synthetic import SyntheticConfig, generate_examples

OBJECTIVES = ("clip", "hn", "hn+tok")


def fixed_batch(size: int):
    config = SyntheticConfig(seed=123, num_train_families=size // 4, num_test_families=0, num_val_families=0)
    examples = generate_examples(config, "train")[:size]
    preprocess = open_clip.image_transform(TOY_ARCHITECTURE.image_size, is_train=False)
    tokenizer = open_clip.SimpleTokenizer(context_length=LONG_CONTEXT)
    return torch.stack([preprocess(e.image) for e in examples]), tokenizer([e.caption for e in examples])


def time_steps(model, optimizer, micro_batches, loss_fn, accumulation, steps):
    encode = partial(encode_batch, model)
    started = time.perf_counter()
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        for loss in accumulated_losses(encode, model.logit_scale, micro_batches, loss_fn, accumulation):
            loss.backward()
        optimizer.step()
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--steps", type=int, default=2, help="optimizer steps per objective per round")
    parser.add_argument("--micro-batch-size", type=int, default=16)
    parser.add_argument("--accumulation-steps", type=int, default=8)
    parser.add_argument("--accumulation", choices=ACCUMULATION_MODES, default="naive")
    parser.add_argument("--json", type=Path, help="also write the measurements to this file")
    parser.add_argument("--note", help="with --json: a remark on the conditions, e.g. what else ran")
    args = parser.parse_args()

    measured_under = conditions(args.note) if args.json else None
    torch.manual_seed(0)
    model = build_clip(dataclasses.replace(TOY_ARCHITECTURE, context_length=LONG_CONTEXT)).train()
    keep_first_positions_frozen(model)
    optimizer = torch.optim.AdamW(longclip_param_groups(model, 0.01), lr=1e-6)
    batch = args.micro_batch_size * args.accumulation_steps
    images, tokens = fixed_batch(batch)
    size = args.micro_batch_size
    micro = [
        MicroBatch(images[i : i + size], tokens[i : i + size], torch.arange(i, i + size)) for i in range(0, batch, size)
    ]
    objectives = {name: HNClipTokenLoss(**objective_parameters(name)) for name in OBJECTIVES}
    for objective in objectives.values():  # warm-up
        time_steps(model, optimizer, micro, objective, args.accumulation, 1)
    seconds = {name: [] for name in OBJECTIVES}
    for _ in range(args.rounds):
        for name, objective in objectives.items():
            seconds[name].append(time_steps(model, optimizer, micro, objective, args.accumulation, args.steps))

    print(f"machine: {describe_machine(measured_under['machine'] if measured_under else machine())}")
    print(f"toy Long-CLIP, effective batch {batch} = {args.micro_batch_size} x {args.accumulation_steps} "
          f"({args.accumulation}), {args.rounds} interleaved rounds x {args.steps} steps")
    base = statistics.median(seconds["clip"])
    print(f"{'objective':<10}{'img/s':>10}{'time vs clip':>15}")
    for name in OBJECTIVES:
        median = statistics.median(seconds[name])
        print(f"{name:<10}{batch * args.steps / median:>10.1f}{median / base:>15.3f}")
    if args.json:
        write_json(args.json, {**measured_under, "open_clip": open_clip.__version__, "model": "toy Long-CLIP",
                               "micro_batch_size": args.micro_batch_size,
                               "accumulation_steps": args.accumulation_steps, "accumulation": args.accumulation,
                               "rounds": args.rounds, "steps": args.steps,
                               "seconds": {name: [round(x, 4) for x in runs] for name, runs in seconds.items()}})


if __name__ == "__main__":
    main()
