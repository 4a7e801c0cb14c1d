"""Time of Recall@K (both directions) for N × N 1:1 retrieval on the CPU.

    python benchmarks/recall_speed.py [--repeats 5] [--json FILE]

For each gallery size and embedding width, reports the median over interleaved repeats of
``recall_at_k`` (the score matrix product + ranking) and of the product alone, so the ranking's own
cost is visible. Not a test: the numbers depend on the machine, which the script prints. ``--json`` also
writes every repeat's seconds and the conditions (``results/recall_speed.json``, which ``docs/benchmarks.md`` is
rendered from).
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import torch
import torch.nn.functional as F
from conditions import conditions, machine, write_json

from hnclip_core.evaluate import recall_at_k
from hnclip_core.replication.report import describe_machine


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--sizes", type=int, nargs="+", default=[5000, 10000])
    parser.add_argument("--dims", type=int, nargs="+", default=[128, 768])
    parser.add_argument("--json", type=Path, help="also write the measurements to this file")
    parser.add_argument("--note", help="with --json: a remark on the conditions, e.g. what else ran")
    args = parser.parse_args()

    measured_under = conditions(args.note) if args.json else None
    cases = [(n, d) for n in args.sizes for d in args.dims]
    data = {}
    for n, d in cases:
        g = torch.Generator().manual_seed(n + d)
        images = F.normalize(torch.randn(n, d, generator=g), dim=-1)
        data[n, d] = (images, F.normalize(images + torch.randn(n, d, generator=g), dim=-1))
    timings = {case: {"recall_at_k": [], "matmul only": []} for case in cases}
    for _ in range(args.repeats):
        for case in cases:
            images, texts = data[case]
            started = time.perf_counter()
            recall_at_k(images, texts)
            timings[case]["recall_at_k"].append(time.perf_counter() - started)
            started = time.perf_counter()
            texts @ images.t()
            timings[case]["matmul only"].append(time.perf_counter() - started)

    print(f"machine: {describe_machine(measured_under['machine'] if measured_under else machine())}")
    print(f"{'N':>7}{'D':>6}{'recall_at_k s':>15}{'matmul s':>10}{'ranking s':>11}")
    for n, d in cases:
        total = statistics.median(timings[n, d]["recall_at_k"])
        product = statistics.median(timings[n, d]["matmul only"])
        print(f"{n:>7}{d:>6}{total:>15.3f}{product:>10.3f}{total - product:>11.3f}")
    if args.json:
        write_json(args.json, {**measured_under, "repeats": args.repeats, "cases": [
            {"n": n, "dim": d, "recall_at_k_seconds": [round(x, 4) for x in timings[n, d]["recall_at_k"]],
             "matmul_seconds": [round(x, 4) for x in timings[n, d]["matmul only"]]} for n, d in cases]})


if __name__ == "__main__":
    main()
