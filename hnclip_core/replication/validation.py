"""Choosing the embedded default on the synthetic benchmark's validation split, never on its test split.

The benchmark's camera (:data:`~hnclip_core.toy.synthetic.CAMERAS`) is the strongest cast of
:data:`~hnclip_core.toy.synthetic.CAMERA_LADDER` that keeps the shipped toy in the paper's regime on the
validation split: most random micro-batches solved and most errors on near-twins (§2.1, Fig. 4), so that InfoNCE
saturates and fine-tuning still has a domain shift to learn (:func:`sweep_cameras`).

The fine-tuning learning rate of :data:`~hnclip_core.toy.model.TOY_FINETUNE` is the one at which the *baseline*,
InfoNCE, ends best on the validation split (new scenes, the same family rule and camera as the test split), averaged
over seeds, so that no gain of HN-CLIP comes from a rate that harms InfoNCE. The per-epoch validation R@1 of the same
runs says whether InfoNCE is still improving at the last epoch. The test split is only reported (calibration, chapters).

``python -m hnclip_core.replication.validation cameras`` and ``… rates --lrs 3e-5 5e-5 7e-5 --seeds 0 1`` write
their sections of ``results/validation.json``; :func:`chosen_camera` and :func:`chosen_rate` read the choices back.
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
from .objectives import objective_parameters

__all__ = ["sweep_cameras", "chosen_camera", "sweep_rates", "chosen_rate", "CAMERA_TARGETS"]

VALIDATION_SPLIT = "val"
RESULTS = Path("results/validation.json")
#: What a camera must keep (readings of :func:`~hnclip_core.toy.regime.zero_shot_regime` on the validation split,
#: as in :data:`~hnclip_core.toy.regime.REGIME_TARGETS`): the two the camera moves. The captions' geometry is the
#: text encoder's and does not depend on how the images were photographed.
CAMERA_TARGETS = ("solved_share", "twin_error_share")


def _write_section(path: str | Path, section: str, results: dict, key: str | None = None) -> None:
    """Replace ``section`` of the file at ``path`` (or only its entry ``key``) with ``results``."""
    path = Path(path)
    recorded = json.loads(path.read_text()) if path.is_file() else {}
    if key is not None:
        results = {**recorded.get(section, {}), key: results}
    write_text_atomically(path, json.dumps({**recorded, section: results}, indent=2))


def sweep_cameras(checkpoint: str | Path, cameras: tuple[str, ...] | None = None,
                  output: str | Path | None = None) -> dict:
    """The zero-shot regime of ``checkpoint`` on the validation split through each of ``cameras`` (default
    :data:`~hnclip_core.toy.synthetic.CAMERA_LADDER`, weakest first), and the strongest one that meets
    :data:`CAMERA_TARGETS` (None if none does)."""
    from ..longclip import load_longclip
    from ..toy.regime import benchmark_tensors, meets_regime_targets, zero_shot_regime
    from ..toy.synthetic import CAMERA_LADDER, SyntheticConfig

    started = time.perf_counter()
    model, _, tokenizer = load_longclip(checkpoint)
    readings = {}
    for camera in cameras or CAMERA_LADDER:
        split = benchmark_tensors(VALIDATION_SPLIT, SyntheticConfig(camera=camera))
        readings[camera] = zero_shot_regime(model, split, split, tokenizer)
    keeps = [camera for camera, reading in readings.items() if meets_regime_targets(reading, CAMERA_TARGETS)]
    results = {"checkpoint": Path(checkpoint).name, "split": VALIDATION_SPLIT, "targets": list(CAMERA_TARGETS),
               "readings": readings, "chosen": keeps[-1] if keeps else None,
               "seconds": time.perf_counter() - started, "torch": torch.__version__}
    if output is not None:
        _write_section(output, "camera", results)
    return results


def chosen_camera(path: str | Path = RESULTS) -> str | None:
    """The camera a recorded sweep chose."""
    return json.loads(Path(path).read_text())["camera"]["chosen"]


def sweep_rates(base: TrainConfig, lrs: list[float], seeds: list[int], objective: str = "clip",
                output: str | Path | None = None, progress: bool = False, framework: str = "longclip") -> dict:
    """Fine-tune ``base`` (the toy's preset: :func:`~hnclip_core.toy.model.toy_train_config`) with ``objective`` at
    every rate and seed, evaluated on the validation split after every epoch (epoch 0: zero-shot). ``framework``
    other than plain Long-CLIP fine-tuning (a plug-and-play framework, :mod:`hnclip_core.frameworks`) is recorded
    under ``framework_rates`` of the results file: its own recipe's rate, chosen the same way."""
    from ..frameworks import build_framework

    started = time.perf_counter()
    runs = []
    for lr in lrs:
        for seed in seeds:
            config = replace(base, eval_split=VALIDATION_SPLIT, lr=lr, seed=seed, output_dir=None, progress=progress,
                             **objective_parameters(objective, base.gamma, base.token_weight))
            result = train(config, hooks=build_framework(framework, config.dataset, seed=seed))
            runs.append({"lr": lr, "seed": seed, "per_epoch_r1": [h["mean_r1"] for h in result["history"]],
                         "train_loss": [h.get("train_loss") for h in result["history"][1:]]})
    results = {"objective": objective, "framework": framework, "split": VALIDATION_SPLIT,
               "base_config": portable_paths(asdict(config)),
               "runs": runs, "chosen_lr": _best_rate(runs), "seconds": time.perf_counter() - started,
               "torch": torch.__version__}
    if output is not None:
        if framework == "longclip":
            _write_section(output, "learning_rate", results)
        else:
            _write_section(output, "framework_rates", results, key=framework)
    return results


def _best_rate(runs: list[dict]) -> float:
    """The rate whose last-epoch validation R@1, averaged over the seeds, is highest."""
    by_rate: dict[float, list[float]] = {}
    for run in runs:
        by_rate.setdefault(run["lr"], []).append(run["per_epoch_r1"][-1])
    return max(by_rate, key=lambda lr: statistics.fmean(by_rate[lr]))


def chosen_rate(path: str | Path = RESULTS) -> float:
    """The learning rate a recorded sweep chose."""
    return json.loads(Path(path).read_text())["learning_rate"]["chosen_lr"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    cameras = commands.add_parser("cameras", help="the zero-shot regime through each camera; the strongest kept")
    cameras.add_argument("--cameras", nargs="+", default=None)
    rates = commands.add_parser("rates", help="InfoNCE at each fine-tuning rate and seed; the best on the mean")
    rates.add_argument("--lrs", type=float, nargs="+", default=[3e-5, 5e-5, 7e-5])
    rates.add_argument("--seeds", type=int, nargs="+", default=[0, 1])
    rates.add_argument("--objective", default="clip")
    rates.add_argument("--framework", default="longclip", help="a plug-and-play framework's own rate (its recipe)")
    parser.add_argument("--output", default=str(RESULTS))
    args = parser.parse_args(argv)
    from ..toy.model import ensure_toy_model, toy_train_config

    if args.command == "cameras":
        results = sweep_cameras(ensure_toy_model(), tuple(args.cameras) if args.cameras else None, args.output)
        for camera, reading in results["readings"].items():
            print(f"{camera}: solved {reading['solved_share']:.1%}, twin errors {reading['twin_error_share']:.1%}, "
                  f"R@1 {(reading['t2i_r1'] + reading['i2t_r1']) / 2:.2f}, "
                  f"matching cosine {reading['positive_cosine']:.3f}")
        print(f"chosen camera {results['chosen']}")
        return 0
    results = sweep_rates(toy_train_config(), args.lrs, args.seeds, args.objective, args.output, progress=True,
                          framework=args.framework)
    for run in results["runs"]:
        print(f"lr {run['lr']:g} seed {run['seed']}: " + " / ".join(f"{r:.2f}" for r in run["per_epoch_r1"]))
    print(f"chosen lr {results['chosen_lr']:g}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
