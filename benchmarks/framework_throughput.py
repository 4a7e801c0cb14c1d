"""Training throughput (img/s) of every plug-and-play framework with InfoNCE and with L_HN, measured interleaved
(the efficiency comparison of arXiv 2608.18521 Table A3, on the toy Long-CLIP).

    python benchmarks/framework_throughput.py [--rounds 3] [--steps 1] [--frameworks longclip goal ...] [--json FILE]

A small synthetic benchmark is written to a temporary folder; each round runs ``--steps`` optimizer steps of
every (framework, objective) in turn on the same fixed training batch, *including* the per-pair inputs each
framework builds in its dataset (segment crops, edge maps, filtered captions), since that work is part of what a
framework costs. Reported: median img/s over rounds and each configuration's time relative to Long-CLIP with
InfoNCE. Not a test: numbers depend on the machine; the script prints what it ran on. ``--json`` also writes the
numbers (``results/framework_throughput.json`` is what chapter 5's efficiency table draws).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import tempfile
import time
from functools import partial
from pathlib import Path

import open_clip
import torch
from conditions import conditions, write_json

from hnclip_core.accumulation import MicroBatch, accumulated_losses
from hnclip_core.data import PairDataset, load_pairs
from hnclip_core.features import encode_batch
from hnclip_core.frameworks import FRAMEWORKS, build_framework
from hnclip_core.longclip import LONG_CONTEXT, build_clip, keep_first_positions_frozen
from hnclip_core.losses import HNClipTokenLoss
from hnclip_core.replication.objectives import objective_parameters
from hnclip_core.replication.report import describe_machine
from hnclip_core.toy import TOY_ARCHITECTURE, register_datasets
from hnclip_core.toy.synthetic import SyntheticConfig, write_synthetic_benchmark

OBJECTIVES = ("clip", "hn")


class Setup:
    """One framework's model, optimizer and training items, ready to time."""

    def __init__(self, name: str, pairs, preprocess, tokenizer):
        torch.manual_seed(0)
        self.framework = build_framework(name, "synthetic")
        model = build_clip(dataclasses.replace(TOY_ARCHITECTURE, context_length=LONG_CONTEXT)).train()
        keep_first_positions_frozen(model)
        # the model to train (adapters, extra heads) and the items with the framework's per-pair inputs
        self.model, self.items = self.framework.prepare(model, PairDataset(pairs, preprocess, tokenizer))
        self.encode = partial(encode_batch, self.model)
        self.optimizer = torch.optim.AdamW(self.framework.param_groups(self.model, 0.01), lr=1e-6)

    def micro_batches(self, indices: list[int], size: int) -> list[MicroBatch]:
        images, tokens, *extras = torch.utils.data.default_collate([self.items[i] for i in indices])
        extras = extras[0] if extras else {}
        return [
            MicroBatch(images[i : i + size], tokens[i : i + size], torch.arange(i, i + size),
                       {k: v[i : i + size] for k, v in extras.items()} or None)
            for i in range(0, len(indices), size)
        ]

    def time_steps(self, loss_fn: HNClipTokenLoss, indices: list[int], size: int, steps: int) -> float:
        started = time.perf_counter()
        for step in range(steps):
            micro = self.micro_batches(indices, size)
            self.framework.start_step(1, step, steps)
            self.optimizer.zero_grad(set_to_none=True)
            if self.framework.has_auxiliary_loss:
                losses = (self.framework.loss(self.model, m, loss_fn, self.model.logit_scale.exp()) / len(micro)
                          for m in micro)
            else:
                losses = accumulated_losses(self.encode, self.model.logit_scale, micro, loss_fn, "naive")
            for loss in losses:
                loss.backward()
            self.optimizer.step()
            self.framework.after_optimizer_step(self.model)
        return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=1, help="optimizer steps per configuration per round")
    parser.add_argument("--micro-batch-size", type=int, default=16)
    parser.add_argument("--accumulation-steps", type=int, default=8)
    parser.add_argument("--frameworks", nargs="+", choices=FRAMEWORKS, default=list(FRAMEWORKS))
    parser.add_argument("--json", type=Path, help="also write the measurements to this file")
    parser.add_argument("--note", help="with --json: a remark on the conditions, e.g. what else ran")
    args = parser.parse_args()
    measured_under = conditions(args.note)

    batch = args.micro_batch_size * args.accumulation_steps
    preprocess = open_clip.image_transform(TOY_ARCHITECTURE.image_size, is_train=False)
    tokenizer = open_clip.SimpleTokenizer(context_length=LONG_CONTEXT)
    with tempfile.TemporaryDirectory() as folder:
        config = SyntheticConfig(seed=123, num_train_families=max(1, batch // 4 + 1), num_test_families=1,
                                 num_val_families=1, image_size=TOY_ARCHITECTURE.image_size)
        root = write_synthetic_benchmark(Path(folder) / "bench", config)
        register_datasets()
        pairs = load_pairs("synthetic", root, "train")[:batch]
        if len(pairs) < batch:
            raise SystemExit(f"only {len(pairs)} training pairs for a batch of {batch}")
        indices = list(range(batch))
        setups = {name: Setup(name, pairs, preprocess, tokenizer) for name in args.frameworks}
        objectives = {name: HNClipTokenLoss(**objective_parameters(name)) for name in OBJECTIVES}
        for setup in setups.values():  # warm-up
            setup.time_steps(objectives["clip"], indices, args.micro_batch_size, 1)
        seconds = {(f, o): [] for f in setups for o in OBJECTIVES}
        for _ in range(args.rounds):
            for (framework, objective), runs in seconds.items():
                runs.append(setups[framework].time_steps(objectives[objective], indices, args.micro_batch_size,
                                                         args.steps))

    setting = (f"toy Long-CLIP, effective batch {batch} = {args.micro_batch_size} x {args.accumulation_steps} "
               f"(naive), {args.rounds} interleaved rounds x {args.steps} steps, per-pair inputs built in every step")
    print(f"machine: {describe_machine(measured_under['machine'])}\n{setting}")
    reference = statistics.median(next(iter(seconds.values())))
    print(f"{'framework':<12}{'objective':<10}{'img/s':>10}{'time vs first':>15}")
    measured: dict = {}
    for (framework, objective), runs in seconds.items():
        median = statistics.median(runs)
        row = {"img_per_s": batch * args.steps / median, "relative_time": median / reference}
        print(f"{framework:<12}{objective:<10}{row['img_per_s']:>10.1f}{row['relative_time']:>15.3f}")
        measured.setdefault(framework, {})[objective] = {
            "img_per_s": round(row["img_per_s"], 2), "relative_time": round(row["relative_time"], 4),
            "seconds": [round(r, 4) for r in runs]}
    if args.json:
        write_json(args.json, {**measured_under, "setting": setting, "batch": batch, "rounds": args.rounds,
                               "steps": args.steps, "frameworks": measured})


if __name__ == "__main__":
    main()
