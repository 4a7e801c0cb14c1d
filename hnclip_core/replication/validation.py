"""Choosing the toy's fine-tuning recipe on the synthetic benchmark's validation split, never on its test split.

The fine-tuning learning rate of :data:`~hnclip_core.toy.model.TOY_FINETUNE` is the one at which the *baseline*,
InfoNCE, ends best on the validation split (new scenes, the same family rule and camera as the test split), averaged
over seeds, so that no gain of HN-CLIP comes from a rate that harms InfoNCE. The per-epoch validation R@1 of the same
runs says whether InfoNCE is still improving at the last epoch. The test split is only reported (calibration, chapters).

``python -m hnclip_core.replication.validation --lrs 3e-5 5e-5 1e-4 --seeds 0 1`` writes
``results/validation.json``; :func:`chosen_rate` reads the choice back.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch

from ..files import write_text_atomically
from ..train import TrainConfig, train
from .ablations import portable_paths
from .experiment import objective_parameters

__all__ = ["sweep_rates", "chosen_rate"]

VALIDATION_SPLIT = "val"


def sweep_rates(base: TrainConfig, lrs: list[float], seeds: list[int], objective: str = "clip",
                output: str | Path | None = None, progress: bool = False) -> dict:
    """Fine-tune ``base`` (the toy's preset: :func:`~hnclip_core.toy.model.toy_train_config`) with ``objective`` at
    every rate and seed, evaluated on the validation split after every epoch."""
    started = time.perf_counter()
    runs = []
    for lr in lrs:
        for seed in seeds:
            config = replace(base, eval_split=VALIDATION_SPLIT, lr=lr, seed=seed, output_dir=None, progress=progress,
                             **objective_parameters(objective, base.gamma, base.token_weight))
            result = train(config)
            runs.append({"lr": lr, "seed": seed, "per_epoch_r1": [h["mean_r1"] for h in result["history"]],
                         "train_loss": [h.get("train_loss") for h in result["history"][1:]]})
    results = {"objective": objective, "split": VALIDATION_SPLIT, "base_config": portable_paths(asdict(config)),
               "runs": runs, "chosen_lr": _best_rate(runs), "seconds": time.perf_counter() - started,
               "torch": torch.__version__}
    if output is not None:
        write_text_atomically(output, json.dumps(results, indent=2))
    return results


def _best_rate(runs: list[dict]) -> float:
    """The rate whose last-epoch validation R@1, averaged over the seeds, is highest."""
    by_rate: dict[float, list[float]] = {}
    for run in runs:
        by_rate.setdefault(run["lr"], []).append(run["per_epoch_r1"][-1])
    return max(by_rate, key=lambda lr: statistics.fmean(by_rate[lr]))


def chosen_rate(path: str | Path = "results/validation.json") -> float:
    """The learning rate a recorded sweep chose."""
    return json.loads(Path(path).read_text())["chosen_lr"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lrs", type=float, nargs="+", default=[3e-5, 5e-5, 1e-4])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    parser.add_argument("--objective", default="clip")
    parser.add_argument("--output", default="results/validation.json")
    args = parser.parse_args(argv)
    from ..toy.model import toy_train_config

    results = sweep_rates(toy_train_config(), args.lrs, args.seeds, args.objective, args.output, progress=True)
    for run in results["runs"]:
        print(f"lr {run['lr']:g} seed {run['seed']}: " + " / ".join(f"{r:.2f}" for r in run["per_epoch_r1"]))
    print(f"chosen lr {results['chosen_lr']:g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
