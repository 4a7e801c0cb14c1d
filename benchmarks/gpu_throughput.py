"""Training throughput of a randomly initialised Long-CLIP-L per objective (img/s) on a GPU, measured interleaved.

    python benchmarks/gpu_throughput.py [--rounds 3] [--steps 2] [--accumulation naive cached] [--json out.json]
    python benchmarks/gpu_throughput.py --device cpu --arch tiny --rounds 1 --steps 1   # smoke test, seconds

The GPU counterpart of ``train_throughput.py``: the paper's backbone (ViT-L/14 at 224 px with the 248-token
Long-CLIP text encoder, QuickGELU; arXiv 2608.18521 App. D.1) built by ``build_clip`` with random weights
(throughput does not depend on them), one fixed batch of random images and random token sequences of
dense-caption length (~150 tokens; the text encoder runs up to the longest caption of each micro-batch,
as in training), and the training step of ``hnclip_core.train``: bf16 autocast on CUDA, AdamW over
``longclip_param_groups``, positional rows 0–19 frozen, effective batch 128 = micro-batch 16 × 8
accumulation. Each round runs ``--steps`` optimizer steps of every (accumulation, objective) case in
turn, so slow drifts of the machine hit all cases alike. Reported: median img/s per case, its time
relative to ``clip`` under the same accumulation, peak GPU memory (``torch.cuda.max_memory_allocated``
and ``max_memory_reserved`` over that case's steps), and the paper's Table A3 beside it. Data loading is
not included (the batch lives on the device), so absolute img/s are an upper bound of a training run's;
the ratios between objectives are the comparable numbers. Not a test: the script prints what it ran on.
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import statistics
import time
from functools import partial
from pathlib import Path

import torch
from conditions import conditions, write_json

from hnclip_core.accumulation import ACCUMULATION_MODES, MicroBatch, accumulated_losses
from hnclip_core.features import encode_batch
from hnclip_core.longclip import (
    LONG_CONTEXT,
    ClipArchitecture,
    build_clip,
    keep_first_positions_frozen,
    longclip_param_groups,
)
from hnclip_core.losses import HNClipTokenLoss
from hnclip_core.replication import paper
from hnclip_core.replication.objectives import OBJECTIVES, objective_parameters
from hnclip_core.replication.report import describe_machine
from hnclip_core.toy import TOY_ARCHITECTURE

#: Long-CLIP-L = OpenAI ViT-L/14 (open_clip ``ViT-L-14-quickgelu``: embed 768, 224 px, patch 14, vision
#: width 1024 × 24 layers, text width 768 × 12 layers, 12 text heads, 16 vision heads, MLP ratio 4)
#: with the text context stretched from 77 to 248 positions.
ARCHITECTURES = {
    "longclip-l": ClipArchitecture(
        embed_dim=768, image_size=224, patch_size=14, vision_width=1024, vision_layers=24, vision_mlp_ratio=4.0,
        context_length=LONG_CONTEXT, vocab_size=49408, text_width=768, text_layers=12, text_mlp_ratio=4.0,
    ),
    "toy": dataclasses.replace(TOY_ARCHITECTURE, context_length=LONG_CONTEXT),
    "tiny": ClipArchitecture(
        embed_dim=32, image_size=32, patch_size=8, vision_width=64, vision_layers=1, vision_mlp_ratio=2.0,
        context_length=LONG_CONTEXT, vocab_size=49408, text_width=64, text_layers=1, text_mlp_ratio=2.0,
    ),
}
DEFAULT_OBJECTIVES = ("clip", "hn", "hn+tok")
MEAN_CAPTION_TOKENS = 150  # dense captions (DOCCI, DCI) average ~150 of Long-CLIP's 248 positions


def paper_table_a3() -> list[dict]:
    """Table A3 of the paper (DCI fine-tuning, one Ascend 910B, effective batch 128), from the paper data
    (``hnclip_core/replication/paper/tableA3.json``): per row the method, wall-clock minutes and img/s (``None``
    where the paper prints "—"), the values it prints with "≈", and the objective of ours it corresponds to."""
    return [{"method": row.method, "wall_clock_min": row.values["wall_clock_min"],
             "throughput_img_s": row.values["throughput_img_s"], "approximate": list(row.approximate),
             "objective": row.objective} for row in paper.table("A3").rows]


def _shown(row: dict, metric: str, unit: str = "") -> str:
    """A Table A3 cell as the paper prints it: "—" for no number, "~" for its "≈"."""
    if row[metric] is None:
        return "-"
    return f"{'~' if metric in row['approximate'] else ''}{row[metric]:g}{unit}"


def random_batch(arch: ClipArchitecture, size: int, mean_tokens: int, seed: int = 0):
    """Random images (``[size, 3, S, S]``, standard normal like normalised pixels) and random token ids laid
    out as the tokenizer lays them out: start token, body, end token (the largest id, where ``encode_texts``
    pools), zero padding. Lengths ~ N(mean, (mean/5)²), clipped to [8, context]."""
    generator = torch.Generator().manual_seed(seed)
    images = torch.randn(size, 3, arch.image_size, arch.image_size, generator=generator)
    context, start, end = arch.context_length, arch.vocab_size - 2, arch.vocab_size - 1
    lengths = (mean_tokens + mean_tokens / 5 * torch.randn(size, generator=generator)).round().long()
    lengths = lengths.clamp(min=min(8, context), max=context)
    positions = torch.arange(context)[None]
    ids = torch.randint(1, start, (size, context), generator=generator)
    ids = torch.where(positions < lengths[:, None], ids, torch.zeros_like(ids))
    ids[:, 0] = start
    ids[torch.arange(size), lengths - 1] = end
    return images, ids, lengths


def synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def time_steps(model, optimizer, micro_batches, objective, loss_fn, accumulation, steps, device, autocast) -> float:
    """``steps`` optimizer steps of ``objective`` (its loss ``loss_fn``) as ``hnclip_core.train`` runs them
    (autocast around forward and backward, ``loss.item()`` after each micro-batch); seconds between synchronised
    start and end."""
    encode = partial(encode_batch, model)
    synchronize(device)
    started = time.perf_counter()
    for _ in range(steps):
        optimizer.zero_grad(set_to_none=True)
        total = 0.0
        with torch.autocast(device.type, dtype=torch.bfloat16, enabled=autocast):
            for loss in accumulated_losses(encode, model.logit_scale, micro_batches, loss_fn, accumulation):
                loss.backward()
                total += loss.item()
        if not math.isfinite(total):
            raise FloatingPointError(f"{objective} ({accumulation}): loss is {total}")
        optimizer.step()
    synchronize(device)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--arch", choices=tuple(ARCHITECTURES), default="longclip-l")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--steps", type=int, default=2, help="optimizer steps per case per round")
    parser.add_argument("--micro-batch-size", type=int, default=16)
    parser.add_argument("--accumulation-steps", type=int, default=8)
    parser.add_argument("--accumulation", choices=ACCUMULATION_MODES, nargs="+", default=["naive"],
                        help="one or both readings of accumulation (interleaved with the objectives)")
    parser.add_argument("--objectives", choices=tuple(OBJECTIVES), nargs="+", default=list(DEFAULT_OBJECTIVES))
    parser.add_argument("--caption-tokens", type=int, default=MEAN_CAPTION_TOKENS, help="mean caption length")
    parser.add_argument("--autocast", action=argparse.BooleanOptionalAction, default=None,
                        help="bf16 autocast (default: on for CUDA, off otherwise, as hnclip_core.train)")
    parser.add_argument("--json", type=Path, help="also write the results here")
    parser.add_argument("--note", help="with --json: a remark on the conditions, e.g. what else ran")
    parser.add_argument("--force", action="store_true", help="allow --arch longclip-l on a CPU")
    parser.add_argument("--threads", type=int, help="torch CPU threads (1 avoids oversubscription on a busy CPU)")
    args = parser.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)

    device = torch.device(args.device)
    if device.type == "cpu" and args.arch == "longclip-l" and not args.force:
        parser.error("--arch longclip-l on the CPU takes minutes per optimizer step and ~10 GB of memory; "
                     "use --arch toy or tiny for a smoke test, or pass --force")
    if device.type == "cuda" and not torch.cuda.is_available():
        parser.error("CUDA is not available here; pass --device cpu (with --arch toy or tiny)")
    autocast = device.type == "cuda" if args.autocast is None else args.autocast
    objectives_present = list(dict.fromkeys(["clip", *args.objectives]))  # ratios need clip

    arch = ARCHITECTURES[args.arch]
    torch.manual_seed(0)
    model = build_clip(arch)
    with torch.no_grad():
        model.logit_scale.fill_(math.log(100.0))  # Long-CLIP's s at the start of fine-tuning
    model = model.to(device).train()
    keep_first_positions_frozen(model)
    optimizer = torch.optim.AdamW(longclip_param_groups(model, 0.01), lr=2e-6)
    parameters = sum(p.numel() for p in model.parameters())

    size, batch = args.micro_batch_size, args.micro_batch_size * args.accumulation_steps
    images, token_ids, lengths = random_batch(arch, batch, args.caption_tokens)
    images, token_ids = images.to(device), token_ids.to(device)
    micro = [MicroBatch(images[i : i + size], token_ids[i : i + size], torch.arange(i, i + size))
             for i in range(0, batch, size)]
    trimmed = statistics.mean(int(lengths[i : i + size].max()) for i in range(0, batch, size))
    cases = [(acc, name) for acc in args.accumulation for name in objectives_present]
    losses = {name: HNClipTokenLoss(**objective_parameters(name)) for name in objectives_present}

    cuda = device.type == "cuda"
    for accumulation, name in cases:  # warm-up; also allocates AdamW's state
        time_steps(model, optimizer, micro, name, losses[name], accumulation, 1, device, autocast)
    resident = torch.cuda.memory_allocated(device) if cuda else None
    seconds = {case: [] for case in cases}
    peaks = {case: (0, 0) for case in cases}
    for _ in range(args.rounds):
        for case in cases:
            accumulation, name = case
            if cuda:
                torch.cuda.reset_peak_memory_stats(device)
            seconds[case].append(time_steps(model, optimizer, micro, name, losses[name], accumulation, args.steps,
                                            device, autocast))
            if cuda:
                allocated, reserved = torch.cuda.max_memory_allocated(device), torch.cuda.max_memory_reserved(device)
                peaks[case] = (max(peaks[case][0], allocated), max(peaks[case][1], reserved))

    measured_under = conditions(args.note)
    device_name = torch.cuda.get_device_name(device) if cuda else "CPU"
    print(f"device: {device_name}; {describe_machine(measured_under['machine'])}")
    print(f"model: {args.arch}, random init, {parameters / 1e6:.1f} M parameters, "
          f"{'bf16 autocast' if autocast else 'fp32'}, AdamW, positional rows 0-19 frozen")
    print(f"batch: {batch} = {size} x {args.accumulation_steps}, random images {arch.image_size} px, captions "
          f"{lengths.float().mean():.0f} tokens on average, text encoded up to {trimmed:.0f} (longest per "
          f"micro-batch); {args.rounds} interleaved rounds x {args.steps} steps")
    if cuda:
        print(f"resident after warm-up (weights, grads, AdamW state): {resident / 2**30:.2f} GiB")
    print(f"{'accumulation':<14}{'objective':<10}{'img/s':>9}{'time vs clip':>14}{'peak alloc GiB':>16}"
          f"{'peak reserved GiB':>19}")
    results = []
    for accumulation, name in cases:
        median = statistics.median(seconds[accumulation, name])
        base = statistics.median(seconds[accumulation, "clip"])
        allocated, reserved = peaks[accumulation, name]
        row = {"accumulation": accumulation, "objective": name, "img_per_s": batch * args.steps / median,
               "time_vs_clip": median / base, "seconds": seconds[accumulation, name],
               "peak_allocated_gib": allocated / 2**30 if cuda else None,
               "peak_reserved_gib": reserved / 2**30 if cuda else None}
        results.append(row)
        memory = f"{allocated / 2**30:>16.2f}{reserved / 2**30:>19.2f}" if cuda else f"{'-':>16}{'-':>19}"
        print(f"{accumulation:<14}{name:<10}{row['img_per_s']:>9.1f}{row['time_vs_clip']:>14.3f}{memory}")

    ours = {r["objective"]: r["img_per_s"] for r in results if r["accumulation"] == args.accumulation[0]}
    table_a3 = paper_table_a3()
    print(f"\npaper, Table A3 ({paper.table('A3').caption.split(':')[0]}; throughput = images / wall-clock,\n"
          f"so it includes data loading) beside ours ({args.accumulation[0]}):")
    print(f"{'method':<22}{'wall-clock':>11}{'img/s':>8}   ours")
    for row in table_a3:
        objective = row["objective"]
        mine = f"{objective}: {ours[objective]:.1f} img/s" if objective in ours else ""
        print(f"{row['method']:<22}{_shown(row, 'wall_clock_min', ' min'):>11}{_shown(row, 'throughput_img_s'):>8}"
              f"   {mine}")
    plain, hn_clip = (paper.value("A3", method=o, dataset="DCI", metric="throughput_img_s") for o in ("clip", "hn+tok"))
    line = f"time of HN-CLIP vs plain fine-tuning: paper {plain / hn_clip:.3f} ({plain:g} / {hn_clip:g} img/s)"
    if "hn+tok" in ours:
        line += f", ours (hn+tok vs clip) {ours['clip'] / ours['hn+tok']:.3f}"
    print(line)

    if args.json:
        write_json(args.json, {
            **measured_under, "device": device_name, "arch": args.arch, "architecture": arch.as_dict(),
            "parameters": parameters,
            "autocast_bf16": autocast, "micro_batch_size": size, "accumulation_steps": args.accumulation_steps,
            "rounds": args.rounds, "steps": args.steps, "mean_caption_tokens": float(lengths.float().mean()),
            "mean_encoded_tokens": trimmed, "resident_gib": resident / 2**30 if cuda else None,
            "results": results,
            "paper_table_a3": table_a3,
        })
        print(f"wrote {args.json}")


if __name__ == "__main__":
    main()
