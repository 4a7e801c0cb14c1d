"""What a notebook's ``parameters`` cell resolves to: model, data, output folder, and cached training runs.

Every chapter notebook starts with the same few parameters (papermill's convention: one cell tagged
``parameters``, derived values computed afterwards). :class:`Experiment` validates them with clear
messages and turns them into the objects the chapter needs, so the notebooks hold narrative, not logic:

* ``backbone="toy"`` is the embedded toy Long-CLIP (shipped with the package, :mod:`hnclip_core.toy.model`);
  anything else is the path of a Long-CLIP-format checkpoint such as ``longclip-L.pt``. Both go through
  :func:`~hnclip_core.longclip.load_longclip`.
* ``dataset``/``data_root`` name a benchmark of :mod:`hnclip_core.data` (``synthetic`` needs no root);
  ``eval_dataset`` evaluates on another one (the paper's VG → Urban-1K transfer setting).
* ``lr=None`` means the backbone's recipe: the paper's 2e-6 for a real checkpoint (§3.1; 5e-5 for the LoRA/DoRA
  frameworks, App. D.2), the toy's calibrated preset (:data:`hnclip_core.toy.model.TOY_FINETUNE`) for the toy (×25, the
  paper's adapter/full ratio, for adapters: not calibrated on the toy).
* ``framework``, ``caption_augmentation`` and ``segment_file`` choose a plug-and-play framework
  (:mod:`hnclip_core.frameworks`) and the DeBias-CLIP caption augmentation.
* :meth:`Experiment.run` is the *load-or-train* pattern: a training run is stored under
  ``runs_dir/<objective>-<hash of its configuration>/`` (``runs_dir`` defaults to ``output_dir/runs``) and a
  later call with the same configuration (from the same or another notebook, or another point of an ablation
  grid sharing ``runs_dir``) reads its results instead of training again. An interrupted run is resumed from
  its last completed epoch. Runs that start from the same model and evaluate on the same split share their
  zero-shot (epoch-0) evaluation, kept in ``runs_dir/zero_shot/`` (its recorded ``seconds`` are then ≈ 0).
* :meth:`Experiment.evaluate_on` scores a run's final model (or the backbone) on another benchmark: the
  cross-domain settings of Tables A7 and A10.
"""

from __future__ import annotations

import csv
import dataclasses
import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from functools import cached_property
from pathlib import Path

import torch

from ..data import SPLITS, PairDataset, check_dataset, load_pairs
from ..evaluate import DEFAULT_KS, encode_dataset, recall_at_k
from ..files import config_digest, write_text_atomically
from ..frameworks import ADAPTER_LR, build_framework
from ..longclip import load_longclip
from ..toy import register_datasets
from ..toy.synthetic import SYNTHETIC_DATASETS, SyntheticConfig, config_hash
from ..train import (
    FIELD_ROLES,
    PAPER_LR,
    STATE_FILE,
    TrainConfig,
    check_field_types,
    config_fields,
    recall_row,
    resolve_device,
    train,
)
from .objectives import objective_name, objective_parameters
from .plots import save_figure

__all__ = [
    "Experiment", "OUTPUT_DIR_VARIABLE", "PAPER_LR", "run_directory",
]

#: Environment variable naming the output folder when a notebook's ``output_dir`` parameter is None.
OUTPUT_DIR_VARIABLE = "HNCLIP_OUTPUT_DIR"
#: Bump when a change of code changes what a cached run computes: every cached run is then trained anew.
RUN_CACHE_VERSION = 3
#: The framework settings a run adds to its TrainConfig; like the config's ``training`` fields they shape the
#: fine-tuning alone.
FRAMEWORK_FIELDS = ("framework", "caption_augmentation", "segment_file")


def _write_json(path: Path, data, indent: int = 2) -> None:
    """Write ``data`` to ``path`` whole or not at all (chapters run side by side share the run cache)."""
    write_text_atomically(path, json.dumps(data, indent=indent, default=float))


def _default_benchmark(settings: dict) -> str | None:
    """The hash of the synthetic benchmark a run reads by name alone (no data root), whose defaults (its camera) can
    change while the settings stay the same; None when the run names no such benchmark."""
    by_name = ((settings["dataset"], settings["data_root"]),
               (settings.get("eval_dataset"), settings.get("eval_data_root")))
    if any(name in SYNTHETIC_DATASETS and root is None for name, root in by_name):
        return config_hash(SyntheticConfig())
    return None


def _identity(settings: dict) -> dict:
    """The part of a run's settings (training config plus objective and framework) that decides what it computes,
    with the default synthetic benchmark's hash where the run reads it by name. Left out: the config's runtime
    fields (:data:`hnclip_core.train.FIELD_ROLES`) and the objective's name, a label (what it trains is its γ, λ)."""
    left_out = (*config_fields("runtime"), "objective")
    identity = {k: v for k, v in settings.items() if k not in left_out}
    identity["eval_ks"] = list(identity["eval_ks"])
    return {**identity, "default_benchmark": _default_benchmark(settings), "cache_version": RUN_CACHE_VERSION}


def _zero_shot_identity(settings: dict) -> dict:
    """What decides a run's epoch-0 evaluation: its identity without what shapes the fine-tuning alone (the config's
    training fields, the framework's): runs that differ only in these share their zero-shot evaluation."""
    return {k: v for k, v in _identity(settings).items() if k not in (*config_fields("training"), *FRAMEWORK_FIELDS)}


def run_directory(runs_dir: str | Path, settings: dict) -> Path:
    """``runs_dir/[<framework>-]<objective>-<12 hex digits of the settings' identity>``: one folder per distinct
    run (the framework is named unless it is the default ``longclip``)."""
    prefix = objective_name(settings["gamma"], settings["token_weight"]).replace("+", "_")
    if settings["framework"] != "longclip":
        prefix = f"{settings['framework']}-{prefix}"
    return Path(runs_dir) / f"{prefix}-{config_digest(_identity(settings), 12)}"


@dataclass
class Experiment:
    """A notebook's parameters, validated, with the model, data and runs they describe.

    Field names are the notebooks' parameter names; see the module docstring for their meaning.
    """

    backbone: str = "toy"
    dataset: str = "synthetic"
    data_root: str | None = None
    eval_dataset: str | None = None
    eval_data_root: str | None = None
    device: str = "auto"
    seed: int = 0
    epochs: int = 3
    lr: float | None = None
    micro_batch_size: int = 16
    accumulation_steps: int = 8
    accumulation: str = "naive"
    train_fraction: float = 1.0
    output_dir: str | None = None
    runs_dir: str | None = None
    framework: str = "longclip"
    caption_augmentation: str = "none"
    segment_file: str | None = None
    progress: bool = True
    _models: dict = field(default_factory=dict, init=False, repr=False)

    def __post_init__(self):
        check_field_types(self, "parameter")
        register_datasets()  # an experiment runs on the embedded benchmark unless told otherwise
        for name, root, option in ((self.dataset, self.data_root, "data_root"),
                                   (self.eval_dataset, self.eval_data_root, "eval_data_root")):
            if name is not None:
                check_dataset(name, root, root_option=option)
        if self.backbone != "toy" and not Path(self.backbone).expanduser().is_file():
            raise FileNotFoundError(
                f"backbone {self.backbone!r} is neither 'toy' nor an existing checkpoint file "
                "(e.g. the path of longclip-L.pt)"
            )
        TrainConfig.from_dict({"checkpoint": self.backbone, **self._training_fields()})  # TrainConfig's own checks
        build_framework(self.framework, self.dataset, self.segment_file, self.caption_augmentation, self.seed)

    @classmethod
    def from_parameters(cls, parameters: dict) -> Experiment:
        """Build from a mapping (e.g. a papermill parameter dict), naming unknown keys and the valid ones."""
        valid = [f.name for f in dataclasses.fields(cls) if f.init]
        unknown = sorted(set(parameters) - set(valid))
        if unknown:
            raise ValueError(f"unknown parameter(s) {unknown}; valid: {valid}")
        return cls(**parameters)

    # ------------------------------------------------------------------ resolved values
    @cached_property
    def output_path(self) -> Path:
        """``output_dir``, else ``$HNCLIP_OUTPUT_DIR``, else ``runs/notebooks`` in the working directory."""
        chosen = self.output_dir or os.environ.get(OUTPUT_DIR_VARIABLE) or "runs/notebooks"
        path = Path(chosen).expanduser()
        path.mkdir(parents=True, exist_ok=True)
        return path

    @cached_property
    def runs_path(self) -> Path:
        """Where training runs are cached: ``runs_dir``, else ``output_dir/runs``."""
        return Path(self.runs_dir).expanduser() if self.runs_dir else self.output_path / "runs"

    @cached_property
    def checkpoint(self) -> Path:
        """The Long-CLIP-format checkpoint: the toy shipped with the package or ``backbone``."""
        if self.backbone == "toy":
            from ..toy.model import ensure_toy_model

            return ensure_toy_model()
        return Path(self.backbone).expanduser()

    @property
    def is_toy(self) -> bool:
        return self.backbone == "toy"

    @property
    def torch_device(self) -> torch.device:
        return resolve_device(self.device)

    @property
    def learning_rate(self) -> float:
        """``lr``, else the recipe's: the paper's 2e-6 (full fine-tuning) or 5e-5 (LoRA/DoRA adapters) for a real
        checkpoint; for the toy its calibrated preset, times the paper's adapter/full ratio (25) for adapters."""
        if self.lr is not None:
            return self.lr
        adapters = self.framework in ("lora", "dora")
        if self.is_toy:
            from ..toy.model import TOY_FINETUNE

            return TOY_FINETUNE["lr"] * (ADAPTER_LR / PAPER_LR if adapters else 1.0)
        return ADAPTER_LR if adapters else PAPER_LR

    @property
    def eval_name(self) -> str:
        return self.eval_dataset or self.dataset

    # ------------------------------------------------------------------ model and data
    def load_model(self, checkpoint: str | Path | None = None):
        """``(model, preprocess, tokenizer)`` of ``checkpoint`` (default: the backbone), in eval mode, cached."""
        path = Path(checkpoint) if checkpoint is not None else self.checkpoint
        if path not in self._models:
            model, preprocess, tokenizer = load_longclip(path, device=self.torch_device)
            self._models[path] = (model.eval(), preprocess, tokenizer)
        return self._models[path]

    def load_trained_model(self, result: dict):
        """The fine-tuned model of a :meth:`run` result (its last epoch), as ``(model, preprocess, tokenizer)``."""
        state_path = Path(result["run_dir"]) / STATE_FILE
        if not state_path.is_file():
            raise FileNotFoundError(f"{state_path} is missing: the run was made with save_state=False")
        model, preprocess, tokenizer = load_longclip(self.checkpoint, device=self.torch_device)
        # The framework's modules (peft adapters, FineLIP's refiners) must exist for the saved state to load.
        framework = build_framework(result["config"]["framework"])
        model = framework.prepare_model(model)
        state = torch.load(state_path, map_location=self.torch_device, weights_only=True)
        model.load_state_dict(state["model"])
        return framework.unwrap_for_inference(model).eval(), preprocess, tokenizer

    def pairs(self, split: str = "test", evaluation: bool = True):
        """Image–caption pairs of the evaluation (default) or training dataset."""
        name = self.eval_name if evaluation else self.dataset
        root = (self.eval_data_root if self.eval_dataset else self.data_root) if evaluation else self.data_root
        if split not in SPLITS[name]:
            raise ValueError(f"dataset {name!r} has splits {SPLITS[name]}, not {split!r}")
        return load_pairs(name, root, split)

    def dataset_of(self, split: str = "test", checkpoint: str | Path | None = None) -> PairDataset:
        """A :class:`PairDataset` of the evaluation split, preprocessed for ``checkpoint``'s model."""
        _, preprocess, tokenizer = self.load_model(checkpoint)
        return PairDataset(self.pairs(split), preprocess, tokenizer)

    def first_training_batch(self, size: int | None = None, checkpoint: str | Path | None = None):
        """Features of the first micro-batch the trainer would draw (epoch 1, this seed): a real training batch.

        Returns ``(image_features, text_features, logit_scale)`` of ``checkpoint``'s model (default: the
        backbone), L2-normalised, for the first ``size`` (default: ``micro_batch_size``) pairs of the batch.
        """
        from ..train import epoch_batches, training_subset

        model, preprocess, tokenizer = self.load_model(checkpoint)
        train_pairs = load_pairs(self.dataset, self.data_root, "train")
        subset = training_subset(len(train_pairs), self.train_fraction, self.seed).tolist()
        order = epoch_batches(len(subset), self.micro_batch_size * self.accumulation_steps, self.seed, 1)[0]
        chosen = [train_pairs[subset[i]] for i in order[: size or self.micro_batch_size].tolist()]
        images, texts = encode_dataset(model, PairDataset(chosen, preprocess, tokenizer), device=self.torch_device,
                                       progress=False)
        return images, texts, model.logit_scale.exp().item()

    # ------------------------------------------------------------------ training runs
    def _training_fields(self) -> dict:
        """The TrainConfig fields these parameters set: each parameter named as a field (``lr`` resolved), but
        ``output_dir``, which here is the notebook's folder, not a run's (:meth:`run` gives each run its own)."""
        shared = [f.name for f in dataclasses.fields(self)
                  if f.init and f.name in config_fields(*FIELD_ROLES) and f.name != "output_dir"]
        return {**{name: getattr(self, name) for name in shared}, "lr": self.learning_rate}

    def _framework_fields(self) -> dict:
        return {name: getattr(self, name) for name in FRAMEWORK_FIELDS}

    def train_config(self, objective: str = "hn+tok", **overrides) -> TrainConfig:
        """The :class:`TrainConfig` of these parameters and ``objective``; ``overrides`` are further TrainConfig
        fields (``gamma``/``token_weight`` set the strengths of the objective's terms).

        The checkpoint is always a path (for the toy: the shipped file, whose name carries the recipe's hash),
        so a run's identity changes when the toy does.
        """
        strengths = objective_parameters(objective, **{name: overrides.pop(name) for name in ("gamma", "token_weight")
                                                         if name in overrides})
        values = {"checkpoint": str(self.checkpoint), **self._training_fields(), **strengths}
        return TrainConfig.from_dict({**values, **overrides})

    def run_settings(self, objective: str = "hn+tok", **overrides) -> tuple[TrainConfig, dict]:
        """The :class:`TrainConfig` of one run and its settings: the config's fields, ``objective`` and the
        framework's (``framework``, ``caption_augmentation``, ``segment_file``, which ``overrides`` may also set)."""
        framework_fields = {**self._framework_fields(),
                            **{k: overrides.pop(k) for k in list(overrides) if k in self._framework_fields()}}
        config = self.train_config(objective, **overrides)
        return config, {**asdict(config), "objective": objective, **framework_fields}

    def run(self, objective: str = "hn+tok", **overrides) -> dict:
        """Train (or load the stored result of) one configuration; returns :func:`~hnclip_core.train.train`'s
        result plus ``run_dir``, with ``objective`` and the framework's settings in its ``config``.
        ``overrides`` are :class:`TrainConfig` fields (e.g. ``gamma=0.25``) or this experiment's ``framework``,
        ``caption_augmentation`` and ``segment_file``."""
        config, settings = self.run_settings(objective, **overrides)
        framework_fields = {k: settings[k] for k in self._framework_fields()}
        run_dir = run_directory(self.runs_path, settings)
        stored = run_dir / "history.json"
        if stored.is_file():
            result = json.loads(stored.read_text())
            if result["last"]["epoch"] == config.epochs:
                return {**result, "run_dir": str(run_dir)}
        resume = (run_dir / STATE_FILE).is_file()
        zero_shot_file = self.runs_path / "zero_shot" / f"{config_digest(_zero_shot_identity(settings), 12)}.json"
        known = json.loads(zero_shot_file.read_text()) if zero_shot_file.is_file() else None
        hooks = build_framework(framework_fields["framework"], config.dataset, framework_fields["segment_file"],
                                framework_fields["caption_augmentation"], config.seed)
        result = train(dataclasses.replace(config, output_dir=str(run_dir), resume=resume), zero_shot=known,
                       hooks=hooks)
        result["config"].update(objective=objective, **framework_fields)
        _write_json(stored, result)
        if known is None:
            evaluation = {k: v for k, v in result["history"][0].items() if k not in ("epoch", "seconds")}
            _write_json(zero_shot_file, evaluation, indent=1)
        return {**result, "run_dir": str(run_dir)}

    def evaluate_on(self, dataset: str, data_root: str | None = None, result: dict | None = None,
                    split: str = "test") -> dict:
        """Recall@K of a run's final model (``result`` from :meth:`run`; None: the backbone, zero-shot) on
        ``dataset``'s ``split``, as a flat row like the rows of a run's history (``t2i_r1``, ..., ``mean_r1``).

        This is the cross-domain protocol of Tables A7 and A10: train on one benchmark, evaluate the same
        weights on another. A run's score is stored in its folder, the backbone's in ``runs_dir/zero_shot/``, and
        read back on the next call.
        """
        check_dataset(dataset, data_root, split)
        name = f"transfer-{dataset}-{split}-{hashlib.sha256(str(data_root).encode()).hexdigest()[:8]}.json"
        if result is not None:
            stored = Path(result["run_dir"]) / name
        else:  # the backbone's score: one per checkpoint, as its in-domain zero-shot evaluation is
            stored = self.runs_path / "zero_shot" / f"{config_digest({'checkpoint': str(self.checkpoint)}, 12)}-{name}"
        if stored.is_file():
            return json.loads(stored.read_text())
        model, preprocess, tokenizer = self.load_model() if result is None else self.load_trained_model(result)
        pairs = PairDataset(load_pairs(dataset, data_root, split), preprocess, tokenizer)
        images, texts = encode_dataset(model, pairs, device=self.torch_device, progress=self.progress)
        ks = tuple(result["config"]["eval_ks"]) if result is not None else DEFAULT_KS
        row = {"dataset": dataset, **recall_row(recall_at_k(images, texts, ks))}
        _write_json(stored, row)
        return row

    @staticmethod
    def gradient_measurements(result: dict) -> list[dict]:
        """The gradient monitor's rows of a run made with ``monitor_every`` (its ``gradient_measurements.csv``)."""
        path = Path(result["run_dir"]) / "gradient_measurements.csv"
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: was the run made with monitor_every > 0?")
        with open(path, newline="") as handle:
            return list(csv.DictReader(handle))

    # ------------------------------------------------------------------ outputs
    def save_figure(self, fig, name: str) -> Path:
        """Write ``fig`` as ``output_dir/figures/<name>.png``."""
        return save_figure(fig, self.output_path / "figures", name)

    def save_json(self, name: str, data) -> Path:
        """Write ``data`` as ``output_dir/<name>.json`` (what the results notebook collects)."""
        path = self.output_path / f"{name}.json"
        _write_json(path, data)
        return path

    def load_json(self, name: str):
        path = self.output_path / f"{name}.json"
        if not path.is_file():
            raise FileNotFoundError(f"{path} does not exist yet: run the notebook that writes {name}.json first")
        return json.loads(path.read_text())
