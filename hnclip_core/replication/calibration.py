"""Does the embedded toy reproduce the paper's phenomenon? The runs behind the toy's design targets, over seeds.

The toy (:mod:`hnclip_core.toy.model`) should behave like Long-CLIP-L on DOCCI in the respects the paper's story
rests on (arXiv 2608.18521 §2.1, §2.4, Fig. 4, Table 1, Table A1). :func:`run_calibration` measures what that takes
— the zero-shot regime and caption geometry of the initial model, and InfoNCE and HN-CLIP fine-tuned with the
gradient monitor on, at every seed — and writes it to ``results/calibration.json``. It judges nothing: the
eight design targets are claims of the scorecard, judged over the same tidy table as the paper's
(:data:`hnclip_core.replication.scorecard.CALIBRATION`, :func:`recheck`).
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, replace
from pathlib import Path

import torch

from ..data import load_pairs
from ..files import write_text_atomically
from ..longclip import load_longclip
from ..losses import PAPER_GAMMA
from ..train import TrainConfig, resolve_device, train
from .ablations import portable_paths
from .geometry import caption_similarity_stats, encode_captions, in_batch_hardness
from .objectives import objective_parameters
from .scorecard import Verdict, calibration_view
from .tidy import read_results

__all__ = ["caption_geometry_of", "recheck", "run_calibration", "synthetic_benchmark_of", "token_alignment_of",
           "zero_shot_regime_of"]


def caption_geometry_of(config: TrainConfig, split: str = "test", progress: bool = False) -> dict:
    """Caption statistics of ``split`` under the initial text encoder of ``config`` (Fig. 1, Table A1)."""
    device = resolve_device(config.device)
    model, _, tokenizer = load_longclip(config.checkpoint, device=device)
    captions = [pair.caption for pair in load_pairs(config.dataset, config.data_root, split)]
    features = encode_captions(model, tokenizer, captions, device=device, progress=progress)
    geometry = caption_similarity_stats(features).as_dict()
    geometry["in_batch"] = in_batch_hardness(features, batch_size=min(128, len(captions))).as_dict()
    return geometry


def synthetic_benchmark_of(config: TrainConfig):
    """The :class:`hnclip_core.toy.synthetic.SyntheticConfig` that ``config`` trains on: the default one, or the one
    recorded in ``config.data_root``."""
    from ..toy.synthetic import SyntheticConfig, read_config_record

    if config.dataset != "synthetic":
        raise ValueError("the zero-shot regime needs the synthetic benchmark's families")
    if config.data_root is None:
        return SyntheticConfig()
    record = read_config_record(Path(config.data_root))
    if record is None:
        raise ValueError(f"{config.data_root} holds no synthetic benchmark record (config.json)")
    return SyntheticConfig(**record["config"])


def zero_shot_regime_of(config: TrainConfig) -> dict:
    """:func:`hnclip_core.toy.regime.zero_shot_regime` of the initial model of ``config`` on its synthetic benchmark
    (:func:`synthetic_benchmark_of`)."""
    from ..toy.regime import benchmark_tensors, zero_shot_regime

    benchmark = synthetic_benchmark_of(config)
    model, _, tokenizer = load_longclip(config.checkpoint)
    return zero_shot_regime(model, benchmark_tensors("train", benchmark), benchmark_tensors("test", benchmark),
                            tokenizer)


def token_alignment_of(config: TrainConfig) -> dict:
    """:func:`hnclip_core.toy.regime.token_alignment` of the initial model of ``config`` on its synthetic benchmark's
    train split: whether its word tokens and patches already rank the right pairs first, as L_tok (Eq. 3) needs."""
    from ..toy.regime import benchmark_tensors, token_alignment

    model, _, tokenizer = load_longclip(config.checkpoint)
    return token_alignment(model, benchmark_tensors("train", synthetic_benchmark_of(config)), tokenizer,
                           gamma=config.gamma or PAPER_GAMMA)


def _run_summary(result: dict) -> dict:
    keep = ("zero_shot", "best", "last", "history", "diagnostics")
    return {key: result[key] for key in keep if key in result}


def run_calibration(
    base: TrainConfig,
    seeds: tuple[int, ...] = (0, 1, 2),
    output: str | Path | None = None,
    objectives: tuple[str, ...] = ("clip", "hn", "hn+tok"),
    monitor_every: int = 1,
    progress: bool = False,
) -> dict:
    """Fine-tune ``base`` with each objective and seed (gradient monitor on) and write every run, with the initial
    model's caption geometry and zero-shot regime, to ``output`` (JSON). Returns the same dictionary."""
    started = time.perf_counter()
    geometry = caption_geometry_of(base, progress=progress)
    regime = zero_shot_regime_of(base)
    alignment = token_alignment_of(base)
    runs = []
    for seed in seeds:
        per_objective = {}
        for objective in objectives:
            config = replace(base, **objective_parameters(objective, base.gamma, base.token_weight), seed=seed,
                             monitor_every=monitor_every, output_dir=None, progress=progress)
            per_objective[objective] = _run_summary(train(config))
        runs.append({"seed": seed, **per_objective})
    results = {
        "base_config": portable_paths(asdict(base)),  # the checkpoint by file name and SHA-256
        "benchmark": asdict(synthetic_benchmark_of(base)),  # its camera, families and seed
        "seeds": list(seeds),
        "geometry": geometry,
        "zero_shot_regime": regime,
        "token_alignment": alignment,
        "runs": runs,
        "seconds": time.perf_counter() - started,
        "torch": torch.__version__,
    }
    if output is not None:
        write_text_atomically(output, json.dumps(results, indent=2, default=float))
    return results


def recheck(path: str | Path) -> list[Verdict]:
    """The toy's design targets judged by the scorecard on the runs recorded in ``path`` (no training)."""
    return calibration_view(read_results(calibration=path))
