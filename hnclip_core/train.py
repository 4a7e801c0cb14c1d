"""Fine-tuning a Long-CLIP-format model with InfoNCE or HN-CLIP — one loop for the real Long-CLIP-L and
the embedded toy model (arXiv 2608.18521 §3.1, App. D.1).

Defaults are the paper's recipe: AdamW at lr 2e-6 with cosine decay, effective batch 128 as micro-batch
16 × 8 accumulation, 10 epochs, the loss L_HN + λ·L_tok with γ = 0.5, λ = 1 (:class:`HNClipTokenLoss`;
γ = λ = 0 is InfoNCE), the learned temperature initialised from the checkpoint, and Long-CLIP's rule that
positional rows 0–19 never change. Every epoch is evaluated with Recall@K in both directions (App. D.3);
``history.json`` / ``history.csv`` and an atomically written training state go to ``output_dir``, from
which ``resume=True`` continues a killed run to the same result.

Where the paper is silent we say what we chose: a linear warm-up of ``warmup_steps`` optimizer steps
(Long-CLIP uses 200 at its much larger step count), weight decay 0.01 (Long-CLIP's), no clamping of the
temperature (Long-CLIP does not clamp), the last incomplete batch of an epoch dropped, and ``naive``
accumulation by default (see :mod:`hnclip_core.accumulation` for both readings).

Several processes: ``torchrun --nproc_per_node=N -m hnclip_core train ...``. The model is wrapped in
``DistributedDataParallel`` (gradients are synchronised once per optimizer step: every micro-step but the
last runs under ``no_sync``); every process draws the same global batches and encodes its slice of each
global micro-batch, so N processes with ``micro_batch_size = m`` see the batches of one process with N·m.
Evaluation runs in every process on identical weights; only rank 0 writes files.

A fine-tuning framework of the plug-and-play study (:mod:`hnclip_core.frameworks`) changes the loop through
:class:`TrainingHooks`, passed as ``train(config, hooks=...)``.
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import json
import logging
import math
import os
import random
import sys
import time
import types
import typing
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field, fields
from functools import partial
from pathlib import Path

import numpy as np
import torch
import torch.distributed as dist
from torch.nn.parallel import DistributedDataParallel
from torch.utils.data import Dataset
from tqdm.auto import tqdm

from .accumulation import ACCUMULATION_MODES, MicroBatch, accumulated_losses
from .data import PairDataset, load_pairs
from .evaluate import DEFAULT_KS, caption_geometry, encode_dataset, mean_recall, recall_at_k
from .features import BatchEncoder
from .files import write_atomically, write_text_atomically
from .longclip import keep_first_positions_frozen, load_longclip, longclip_param_groups
from .losses import PAPER_GAMMA, PAPER_TOKEN_WEIGHT, HNClipTokenLoss

__all__ = [
    "TrainConfig", "FIELD_ROLES", "IDENTITY_ROLES", "PAPER_LR", "config_fields", "changed_identity", "TrainingHooks",
    "check_field_types", "train", "recall_row", "resolve_device", "training_subset",
    "epoch_batches", "shuffled_batches", "TrainingDiverged",
]

log = logging.getLogger(__name__)

MARGIN_SOURCES = ("recomputed", "frozen")
STATE_FILE = "training_state.pt"
#: The fine-tuning learning rate of the paper's recipe (§3.1, App. D.1).
PAPER_LR = 2e-6


def _matches(value, hint) -> bool:
    allowed = typing.get_args(hint) if isinstance(hint, types.UnionType) else (hint,)
    for kind in allowed:
        if kind is type(None) and value is None:
            return True
        if kind is float and isinstance(value, int | float) and not isinstance(value, bool):
            return True
        if kind is int and isinstance(value, int) and not isinstance(value, bool):
            return True
        if kind in (str, bool) and isinstance(value, kind):
            return True
        if typing.get_origin(kind) is tuple and isinstance(value, tuple | list):
            return all(_matches(item, typing.get_args(kind)[0]) for item in value)
    return False


def check_field_types(instance, what: str = "field") -> None:
    """Raise ``TypeError`` naming the first field of a dataclass whose value does not match its annotation
    (an int is a valid float, a bool is not an int): the one type check of every configuration object."""
    hints = typing.get_type_hints(type(instance))
    for f in dataclasses.fields(instance):
        value = getattr(instance, f.name)
        if f.init and not _matches(value, hints[f.name]):
            kinds = typing.get_args(hints[f.name]) if isinstance(hints[f.name], types.UnionType) else (hints[f.name],)
            expected = " or ".join(getattr(kind, "__name__", str(kind)) for kind in kinds)
            raise TypeError(f"{what} {f.name!r} must be {expected}, got {value!r} ({type(value).__name__})")


#: What a :class:`TrainConfig` field is to a run. Every field declares one beside its help text, and every list of
#: fields elsewhere (a run's identity and its cache folder, which runs share an epoch-0 evaluation, what resume
#: checks) is derived from them by :func:`config_fields`.
FIELD_ROLES = {
    "start": "decide the model a run starts from and what it is evaluated on, and so its epoch-0 evaluation",
    "training": "shape the fine-tuning alone: runs that differ only in these share their epoch-0 evaluation",
    "runtime": "change how a run is carried out or where it is written, never what it computes",
}
#: The roles that make up a run's identity: two runs that agree on these compute the same thing.
IDENTITY_ROLES = ("start", "training")


def _option(default, help: str, role: str):
    """A config field with its command-line help text and its role in a run (:data:`FIELD_ROLES`)."""
    if role not in FIELD_ROLES:
        raise ValueError(f"role must be one of {list(FIELD_ROLES)}, got {role!r}")
    metadata = {"help": help, "role": role}
    if isinstance(default, tuple):
        return field(default_factory=lambda: default, metadata=metadata)
    return field(default=default, metadata=metadata)


class TrainingDiverged(FloatingPointError):
    """The loss became NaN or infinite; the last good training state is kept on disk."""


@dataclass
class TrainConfig:
    """Everything a fine-tuning run depends on. Field names are the command line's ``--options``."""

    # model and data
    checkpoint: str | None = _option(
        None, "Long-CLIP-format checkpoint (longclip-L.pt, longclip-B.pt, ...); required", "start")
    dataset: str = _option(
        "docci", "benchmark name: docci, dci, long-dci, urban1k, vg, synthetic or synthetic-alt", "start")
    data_root: str | None = _option(None, "folder holding the benchmark (not needed for synthetic)", "start")
    train_split: str = _option("train", "split to fine-tune on", "start")
    eval_split: str = _option("test", "split to evaluate on every epoch", "start")
    eval_dataset: str | None = _option(
        None, "benchmark evaluated on, for transfer (e.g. vg → urban1k); default: the training dataset", "start")
    eval_data_root: str | None = _option(
        None, "folder of eval_dataset (default: data_root if eval_dataset is unset)", "start")
    train_fraction: float = _option(
        1.0, "share of the training pairs used, the same for every method (Fig. 6)", "training")
    # objective (Eq. 1–3, Table 3): γ = λ = 0 is InfoNCE, λ = 0 is L_HN, both > 0 is HN-CLIP
    gamma: float = _option(PAPER_GAMMA, "boost strength γ of Eq. 2 (0: InfoNCE's logits)", "training")
    token_weight: float = _option(PAPER_TOKEN_WEIGHT, "λ of Eq. 3, the weight of L_tok (0: no token term)", "training")
    margin_source: str = _option(
        "recomputed", "Ḡ from the live text encoder (recomputed) or a frozen copy of the initial one (frozen, "
        "Table 3c)", "training")
    logit_scale: float | None = _option(
        None, "fix the inverse temperature s at this value (not learned; the s × γ study of App. B.2); default: "
        "learned, initialised from the checkpoint", "training")
    # optimisation (§3.1, App. D.1)
    lr: float = _option(PAPER_LR, "AdamW learning rate (paper: 2e-6)", "training")
    weight_decay: float = _option(
        0.01, "AdamW weight decay (Long-CLIP's 0.01; none on the positional table)", "training")
    warmup_steps: int = _option(10, "linear warm-up optimizer steps before the cosine decay", "training")
    epochs: int = _option(10, "fine-tuning epochs (paper: 10)", "training")
    micro_batch_size: int = _option(16, "pairs per forward pass and process (paper: 16, one process)", "training")
    accumulation_steps: int = _option(
        8, "micro-batches per optimizer step (paper: 8, effective batch 128)", "training")
    accumulation: str = _option(
        "naive", "naive (each micro-batch its own contrastive batch) or cached (the effective batch's negatives)",
        "training")
    # run
    seed: int = _option(0, "seed of initialisation, data subset and batch order", "start")
    device: str = _option("auto", "auto (cuda, mps, cpu), or a torch device name", "runtime")
    eval_batch_size: int = _option(64, "batch size of the evaluation encoder pass", "runtime")
    eval_ks: tuple[int, ...] = _option(DEFAULT_KS, "Recall@K ranks reported", "start")
    num_workers: int = _option(0, "DataLoader worker processes for image decoding", "runtime")
    skip_bad_images: bool = _option(
        False, "drop pairs whose image is missing or unreadable (counted, logged once) instead of stopping", "start")
    output_dir: str | None = _option(
        None, "where history.json/.csv and the training state go (nothing is written if unset)", "runtime")
    resume: bool = _option(False, "continue the run in output_dir from its last completed epoch", "runtime")
    save_state: bool = _option(True, "write the training state after every epoch (needed for resume)", "runtime")
    monitor_every: int = _option(0, "gradient diagnostics of §2.4 every k optimizer steps (0 = off)", "training")
    monitor_gamma: float = _option(
        PAPER_GAMMA, "γ of the L_HN the gradient diagnostics compare with L_CLIP, whatever the run trains (§2.4)",
        "training")
    progress: bool | None = _option(None, "show progress bars (default: only on a terminal)", "runtime")

    def __post_init__(self):
        check_field_types(self)
        if self.checkpoint is None:
            raise ValueError(
                "checkpoint is required: the path of a Long-CLIP-format checkpoint "
                "(hnclip_core.toy.ensure_toy_model() returns the embedded toy's)"
            )
        if self.margin_source not in MARGIN_SOURCES:
            raise ValueError(f"margin_source must be one of {MARGIN_SOURCES}, got {self.margin_source!r}")
        if self.accumulation not in ACCUMULATION_MODES:
            raise ValueError(f"accumulation must be one of {ACCUMULATION_MODES}, got {self.accumulation!r}")
        if self.gamma < 0 or self.token_weight < 0:
            raise ValueError(f"gamma and token_weight must be ≥ 0, got {self.gamma} and {self.token_weight}")
        if not 0 < self.train_fraction <= 1:
            raise ValueError(f"train_fraction must be in (0, 1], got {self.train_fraction}")
        for name in ("epochs", "micro_batch_size", "accumulation_steps", "eval_batch_size"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")
        if self.micro_batch_size * self.accumulation_steps < 2:
            raise ValueError("a contrastive batch needs at least 2 pairs")
        if self.logit_scale is not None and not self.logit_scale > 0:
            raise ValueError(f"logit_scale must be positive, got {self.logit_scale}")
        if self.resume and not self.output_dir:
            raise ValueError("resume needs the output_dir of the run to continue")
        self.eval_ks = tuple(int(k) for k in self.eval_ks)

    @property
    def effective_batch_size(self) -> int:
        return self.micro_batch_size * self.accumulation_steps

    @classmethod
    def from_dict(cls, values: dict) -> TrainConfig:
        """Build from a mapping, rejecting unknown keys with the list of valid ones."""
        known = {f.name for f in fields(cls)}
        unknown = sorted(set(values) - known)
        if unknown:
            raise ValueError(f"unknown TrainConfig field(s) {unknown}; valid: {sorted(known)}")
        return cls(**values)


def config_fields(*roles: str) -> tuple[str, ...]:
    """The names of the :class:`TrainConfig` fields whose role (:data:`FIELD_ROLES`) is one of ``roles``, in the
    order they are declared; ``config_fields(*IDENTITY_ROLES)`` is a run's identity."""
    unknown = set(roles) - set(FIELD_ROLES)
    if unknown:
        raise ValueError(f"unknown role(s) {sorted(unknown)}; roles: {list(FIELD_ROLES)}")
    return tuple(f.name for f in fields(TrainConfig) if f.metadata["role"] in roles)


def changed_identity(saved: dict, config: TrainConfig) -> list[str]:
    """The identity fields (:data:`IDENTITY_ROLES`) in which ``config`` differs from a run's ``saved`` config: what
    resume refuses. Runtime fields (the device, the evaluation batch size, ...) may change between the two."""
    current = asdict(config)
    comparable = [name for name in config_fields(*IDENTITY_ROLES) if name in saved]
    as_list = {"eval_ks"}  # a tuple here, a list once it has been through torch.save's pickling or JSON
    return [name for name in comparable if (list(saved[name]) if name in as_list else saved[name])
            != (list(current[name]) if name in as_list else current[name])]


class TrainingHooks:
    """What a fine-tuning framework may change in the loop (the plug-and-play study, §3.3, Table 2); this base
    class is plain Long-CLIP fine-tuning, every hook the identity. :mod:`hnclip_core.frameworks` subclasses it."""

    #: True when :meth:`loss` adds terms to the contrastive objective (then accumulation is ``naive`` only).
    has_auxiliary_loss = False

    def prepare(self, model: torch.nn.Module, train_set: PairDataset) -> tuple[torch.nn.Module, Dataset]:
        """The model to train (e.g. wrapped with adapters) and the training items: ``(image, token ids)`` or,
        with per-pair inputs for :meth:`loss`, ``(image, token ids, extras)``."""
        return model, train_set

    def param_groups(self, model: torch.nn.Module, weight_decay: float) -> list[dict]:
        """AdamW parameter groups over the trainable parameters (Long-CLIP's rule by default)."""
        return longclip_param_groups(model, weight_decay)

    def start_epoch(self, epoch: int) -> None:
        """Called before each epoch's batches are drawn (``epoch`` from 1)."""

    def start_step(self, epoch: int, step: int, steps_per_epoch: int) -> None:
        """Called before each optimizer step (``epoch`` from 1, ``step`` counted over the whole run from 0)."""

    def loss(self, model, micro: MicroBatch, loss_fn: HNClipTokenLoss, logit_scale: torch.Tensor,
             margin_text_features: torch.Tensor | None = None) -> torch.Tensor:
        """The loss of one micro-batch (only called when :attr:`has_auxiliary_loss`)."""
        raise NotImplementedError

    def after_optimizer_step(self, model: torch.nn.Module) -> None:
        """Called after each optimizer step."""


def resolve_device(name: str = "auto") -> torch.device:
    """``auto`` picks cuda, then Apple's mps, then the CPU."""
    if name != "auto":
        return torch.device(name)
    if torch.cuda.is_available():
        return torch.device("cuda")
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return torch.device("mps")
    return torch.device("cpu")


def seed_everything(seed: int) -> None:
    random.seed(seed)
    np.random.seed(seed % 2**32)
    torch.manual_seed(seed)


def training_subset(num_pairs: int, fraction: float, seed: int) -> torch.Tensor:
    """Sorted indices of ``fraction`` of the training pairs. The subset depends only on the seed and
    the size, so every method trains on identical pairs (Fig. 6 / Table A9), and a smaller fraction is
    contained in a larger one."""
    count = max(2, round(num_pairs * fraction))
    order = torch.randperm(num_pairs, generator=torch.Generator().manual_seed(seed))
    return order[:count].sort().values


def shuffled_batches(
    num_items: int, batch_size: int, generator: torch.Generator, num_batches: int | None = None
) -> Iterator[torch.Tensor]:
    """Index batches as a shuffling loader with ``drop_last`` gives them: a permutation of ``num_items`` drawn
    from ``generator``, cut into batches of ``batch_size`` (the last partial one dropped), and a fresh permutation
    whenever an epoch runs out. ``num_batches`` batches in all; ``None``: one epoch, ``num_items // batch_size``."""
    if batch_size < 1:
        raise ValueError(f"batch_size must be at least 1, got {batch_size}")
    num_batches = num_items // batch_size if num_batches is None else num_batches
    if num_batches > 0 and batch_size > num_items:
        raise ValueError(f"batches of {batch_size} cannot be drawn from {num_items} items")

    def batches() -> Iterator[torch.Tensor]:
        produced = 0
        while produced < num_batches:
            order = torch.randperm(num_items, generator=generator)
            for start in range(0, num_items - batch_size + 1, batch_size):
                if produced == num_batches:
                    return
                yield order[start : start + batch_size]
                produced += 1

    return batches()


def epoch_batches(num_pairs: int, batch_size: int, seed: int, epoch: int) -> list[torch.Tensor]:
    """The effective batches of one epoch: a permutation fixed by (seed, epoch), last partial batch
    dropped. Independent of any global random state, so a resumed run sees the same batches."""
    return list(shuffled_batches(num_pairs, batch_size, torch.Generator().manual_seed(seed * 100_003 + epoch)))


def cosine_with_warmup(warmup_steps: int, total_steps: int) -> Callable[[int], float]:
    """Learning-rate factor: linear warm-up, then cosine decay to 0 (Long-CLIP's ``cosine_lr``)."""

    def factor(step: int) -> float:
        if step < warmup_steps:
            return (step + 1) / warmup_steps
        progress = (step - warmup_steps) / max(1, total_steps - warmup_steps)
        return 0.5 * (1 + math.cos(math.pi * min(1.0, progress)))

    return factor


def recall_row(recalls: dict[str, dict[int, float]]) -> dict[str, float]:
    """:func:`~hnclip_core.evaluate.recall_at_k`'s nested result as one flat row: ``t2i_r1``, ..., ``mean_r1``."""
    flat = {f"{direction}_r{k}": value for direction, by_k in recalls.items() for k, value in by_k.items()}
    flat["mean_r1"] = mean_recall(recalls, 1)
    return flat


class _Run:
    """State of one training run; :func:`train` is the public entry point."""

    def __init__(self, config: TrainConfig, zero_shot: dict | None = None, hooks: TrainingHooks | None = None):
        self.config = config
        self.zero_shot = zero_shot
        self.hooks = hooks or TrainingHooks()
        self.device = resolve_device(config.device)
        self.rank, self.world_size = 0, 1
        if int(os.environ.get("WORLD_SIZE", "1")) > 1:  # launched by torchrun
            if not dist.is_initialized():
                dist.init_process_group("nccl" if self.device.type == "cuda" else "gloo")
            self.rank, self.world_size = dist.get_rank(), dist.get_world_size()
            if self.device.type == "cuda":
                self.device = torch.device("cuda", int(os.environ.get("LOCAL_RANK", "0")))
                torch.cuda.set_device(self.device)
        self.is_main = self.rank == 0
        self.progress = (sys.stderr.isatty() if config.progress is None else config.progress) and self.is_main
        self.output_dir = Path(config.output_dir) if config.output_dir else None
        seed_everything(config.seed)

        self.model, preprocess, tokenizer = load_longclip(config.checkpoint, device=self.device)
        self.model.train()
        keep_first_positions_frozen(self.model)
        if config.logit_scale is not None:
            with torch.no_grad():
                self.model.logit_scale.fill_(math.log(config.logit_scale))
            self.model.logit_scale.requires_grad_(False)

        train_pairs = load_pairs(config.dataset, config.data_root, config.train_split)
        subset = training_subset(len(train_pairs), config.train_fraction, config.seed).tolist()
        self.train_set = PairDataset([train_pairs[i] for i in subset], preprocess, tokenizer, config.skip_bad_images)
        if self.hooks.has_auxiliary_loss and (self.world_size > 1 or config.accumulation != "naive"):
            raise ValueError("a framework with auxiliary terms trains in one process with accumulation='naive'")
        self.model, self.train_items = self.hooks.prepare(self.model, self.train_set)
        eval_pairs = load_pairs(
            config.eval_dataset or config.dataset,
            config.eval_data_root or (config.data_root if config.eval_dataset is None else None),
            config.eval_split,
        )
        self.eval_set = PairDataset(eval_pairs, preprocess, tokenizer, config.skip_bad_images)
        self.global_batch_size = config.effective_batch_size * self.world_size
        if len(self.train_set) < self.global_batch_size:
            raise ValueError(
                f"{len(self.train_set)} training pairs are fewer than one effective batch "
                f"({self.global_batch_size}); lower micro_batch_size/accumulation_steps or raise train_fraction"
            )

        # Across processes the loss gathers every shard, with gradient (hnclip_core.accumulation).
        self.loss = HNClipTokenLoss(config.gamma, config.token_weight, gather_with_grad=True, rank=self.rank,
                                    world_size=self.world_size)
        self.frozen_caption_features = None
        if config.margin_source == "frozen" and config.gamma:
            # The frozen encoder never changes, so its caption features are computed once.
            _, self.frozen_caption_features = encode_dataset(
                self.model, self.train_set, config.eval_batch_size, self.device, progress=self.progress
            )
            self.frozen_caption_features = self.frozen_caption_features.to(self.device)

        # DDP synchronises gradients once per optimizer step (see train_epoch); it needs a forward to wrap.
        self.encoder = BatchEncoder(self.model)
        if self.world_size > 1:
            device_ids = [self.device] if self.device.type == "cuda" else None
            self.encoder = DistributedDataParallel(self.encoder, device_ids=device_ids)
        self.optimizer = torch.optim.AdamW(self.hooks.param_groups(self.model, config.weight_decay), lr=config.lr)
        self.steps_per_epoch = len(self.train_set) // self.global_batch_size
        self.scheduler = torch.optim.lr_scheduler.LambdaLR(
            self.optimizer, cosine_with_warmup(config.warmup_steps, self.steps_per_epoch * config.epochs)
        )
        self.autocast = self.device.type == "cuda"
        self.history: list[dict] = []
        self.start_epoch = 1
        self.monitor = None
        if config.monitor_every:
            from .diagnostics import GradientMonitor

            if self.world_size > 1:
                raise ValueError("monitor_every is not supported with several processes: measure on one")
            self.monitor = GradientMonitor(every=config.monitor_every, gamma=config.monitor_gamma)

    # ------------------------------------------------------------------ data
    def margin_features(self, indices: torch.Tensor) -> torch.Tensor | None:
        if self.frozen_caption_features is None:
            return None
        return self.frozen_caption_features[indices.to(self.device)]

    def local_indices(self, batch: torch.Tensor) -> torch.Tensor:
        """This process's shard of each global micro-batch of ``batch`` (all of it in a single process)."""
        size, rank, world = self.config.micro_batch_size, self.rank, self.world_size
        if world == 1:
            return batch
        return torch.cat([batch[start + rank * size : start + (rank + 1) * size]
                          for start in range(0, len(batch), size * world)])

    def micro_batches(self, images: torch.Tensor, tokens: torch.Tensor, indices: torch.Tensor,
                      extras: dict | None = None) -> list[MicroBatch]:
        """Split one effective batch (and a framework's per-pair ``extras``) into ``accumulation_steps``
        micro-batches on the device."""
        images, tokens = images.to(self.device), tokens.to(self.device)
        extras = {name: value.to(self.device) for name, value in (extras or {}).items()}
        size = self.config.micro_batch_size
        return [
            MicroBatch(images[i : i + size], tokens[i : i + size], indices[i : i + size],
                       {name: value[i : i + size] for name, value in extras.items()} or None)
            for i in range(0, len(indices), size)
        ]

    def step_losses(self, micro_batches: list[MicroBatch]):
        """One loss per micro-batch of this optimizer step, each computed when drawn."""
        def framework_loss(micro: MicroBatch) -> torch.Tensor:
            return self.hooks.loss(self.model, micro, self.loss, self.model.logit_scale.exp(),
                                   self.margin_features(micro.indices))

        yield from accumulated_losses(self.encoder, self.model.logit_scale, micro_batches, self.loss,
                                      self.config.accumulation, self.margin_features,
                                      framework_loss if self.hooks.has_auxiliary_loss else None)

    # ------------------------------------------------------------------ evaluation
    def evaluate(self) -> dict[str, float]:
        """Recall@K of the evaluation split, and the geometry of its captions under the current text encoder
        (the mean off-diagonal caption similarity is the mean of the Ḡ that a recomputed boost applies: its
        decay over epochs is the implicit annealing of App. B.2)."""
        images, texts = encode_dataset(
            self.model, self.eval_set, self.config.eval_batch_size, self.device,
            num_workers=self.config.num_workers, progress=self.progress,
        )
        geometry = caption_geometry(texts)
        return {
            **recall_row(recall_at_k(images, texts, self.config.eval_ks)),
            "caption_mean_similarity": geometry["mean_pairwise"],
            "caption_hardest_similarity": geometry["mean_hardest"],
        }

    # ------------------------------------------------------------------ state
    def state_path(self) -> Path | None:
        return None if self.output_dir is None else self.output_dir / STATE_FILE

    def save_state(self, epoch: int) -> None:
        if self.output_dir is None or not self.config.save_state or not self.is_main:
            return
        state = {
            "epoch": epoch,
            "model": self.model.state_dict(),
            "optimizer": self.optimizer.state_dict(),
            "scheduler": self.scheduler.state_dict(),
            "history": self.history,
            "monitor": self.monitor.state_dict() if self.monitor else None,
            "config": asdict(self.config),
        }
        write_atomically(self.state_path(), partial(torch.save, state))

    def load_state(self) -> None:
        path = self.state_path()
        if not path.is_file():
            log.warning("resume: no training state at %s, starting from scratch", path)
            return
        state = torch.load(path, map_location=self.device, weights_only=True)
        changed = changed_identity(state["config"], self.config)
        if changed:
            raise ValueError(f"resume: {path} was written with a different configuration ({changed})")
        self.model.load_state_dict(state["model"])
        self.optimizer.load_state_dict(state["optimizer"])
        self.scheduler.load_state_dict(state["scheduler"])
        self.history = list(state["history"])
        if self.monitor and state["monitor"]:
            self.monitor.load_state_dict(state["monitor"])
        self.start_epoch = int(state["epoch"]) + 1
        log.info("resumed from %s after epoch %d", path, state["epoch"])

    # ------------------------------------------------------------------ training
    def train_epoch(self, epoch: int) -> dict[str, float]:
        config = self.config
        losses = []
        batches = [self.local_indices(b) for b in
                   epoch_batches(len(self.train_set), self.global_batch_size, config.seed, epoch)]
        self.hooks.start_epoch(epoch)
        loader = torch.utils.data.DataLoader(
            self.train_items, batch_sampler=[b.tolist() for b in batches], num_workers=config.num_workers
        )
        bar = tqdm(zip(batches, loader, strict=True), total=len(batches), desc=f"epoch {epoch}/{config.epochs}",
                   disable=not self.progress, leave=False)
        for batch_indices, (images, tokens, *extras) in bar:
            step = (epoch - 1) * self.steps_per_epoch + len(losses)
            micro_batches = self.micro_batches(images, tokens, batch_indices, extras[0] if extras else None)
            self.hooks.start_step(epoch, step, self.steps_per_epoch)
            if self.monitor is not None and self.monitor.due(step):
                self.monitor.measure(self.model, micro_batches, step, epoch, config.accumulation, self.margin_features)
            self.optimizer.zero_grad(set_to_none=True)
            total = 0.0
            stream = self.step_losses(micro_batches)
            for i in range(len(micro_batches)):
                # Gradients are all-reduced once, in the backward of the step's last micro-batch.
                last = i == len(micro_batches) - 1
                with self._sync(last), torch.autocast(self.device.type, dtype=torch.bfloat16, enabled=self.autocast):
                    loss = next(stream)
                    if not torch.isfinite(loss):
                        raise TrainingDiverged(
                            f"loss is {loss.item()} at epoch {epoch}, optimizer step {step}; "
                            f"the last good state is {self.state_path() or 'not saved (no output_dir)'}"
                        )
                    loss.backward()
                total += loss.item()
            self.optimizer.step()
            self.hooks.after_optimizer_step(self.model)
            self.scheduler.step()
            losses.append(total if config.accumulation == "naive" else total / len(micro_batches))
            bar.set_postfix(loss=f"{losses[-1]:.4g}")
        return {
            "train_loss": float(np.mean(losses)),
            "lr": self.optimizer.param_groups[0]["lr"],
            "logit_scale": self.model.logit_scale.exp().item(),
        }

    def _sync(self, last: bool):
        """``no_sync`` for every micro-step but the last of an optimizer step under DDP."""
        if isinstance(self.encoder, DistributedDataParallel) and not last:
            return self.encoder.no_sync()
        return contextlib.nullcontext()

    def write_results(self) -> dict:
        results = summarise(self.history, self.config)
        if self.monitor is not None:
            results["diagnostics"] = self.monitor.summary()
        if self.output_dir is not None and self.is_main:
            self.output_dir.mkdir(parents=True, exist_ok=True)
            write_text_atomically(self.output_dir / "history.json", json.dumps(results, indent=2))
            write_history_csv(self.history, self.output_dir / "history.csv")
            if self.monitor is not None:
                self.monitor.write_csv(self.output_dir / "gradient_measurements.csv")
        return results

    def run(self) -> dict:
        if self.output_dir is not None:
            self.output_dir.mkdir(parents=True, exist_ok=True)
        if self.config.resume:
            self.load_state()
        if not self.history:
            started = time.perf_counter()
            initial = self.evaluate() if self.zero_shot is None else self.zero_shot
            self.history.append({"epoch": 0, **initial, "seconds": time.perf_counter() - started})
        for epoch in range(self.start_epoch, self.config.epochs + 1):
            started = time.perf_counter()
            stats = self.train_epoch(epoch)
            self.history.append({"epoch": epoch, **stats, **self.evaluate(), "seconds": time.perf_counter() - started})
            log.info("epoch %d: loss %.4g, mean R@1 %.2f", epoch, stats["train_loss"], self.history[-1]["mean_r1"])
            self.save_state(epoch)
            self.write_results()
        return self.write_results()


def summarise(history: list[dict], config: TrainConfig) -> dict:
    """Zero-shot (epoch 0), best-epoch (by mean R@1 over epochs ≥ 1) and last-epoch results."""
    trained = [h for h in history if h["epoch"] >= 1] or history
    best = max(trained, key=lambda h: h["mean_r1"])
    return {
        "config": asdict(config),
        "zero_shot": history[0],
        "best": best,
        "last": history[-1],
        "history": history,
    }


def write_history_csv(history: list[dict], path: Path) -> None:
    columns = list(dict.fromkeys(key for row in history for key in row))

    def write(tmp: Path) -> None:
        with open(tmp, "w", newline="") as handle:
            writer = csv.DictWriter(handle, fieldnames=columns)
            writer.writeheader()
            writer.writerows(history)

    write_atomically(path, write)


def train(config: TrainConfig | None = None, *, zero_shot: dict | None = None, hooks: TrainingHooks | None = None,
          **overrides) -> dict:
    """Fine-tune and evaluate; returns ``{"config", "zero_shot", "best", "last", "history"[, "diagnostics"]}``.

    ``train(checkpoint=path, gamma=0, token_weight=0)`` is shorthand for ``train(TrainConfig(...))`` (here
    InfoNCE). ``zero_shot`` is the epoch-0 evaluation when it is already known (the same initial model on the
    same evaluation split); it is then not computed again, which changes nothing else of the run (all of its
    randomness comes from seeded generators). ``hooks`` is a fine-tuning framework (:class:`TrainingHooks`).
    """
    if config is None:
        config = TrainConfig.from_dict(overrides)
    elif overrides:
        config = TrainConfig.from_dict({**asdict(config), **overrides})
    return _Run(config, zero_shot, hooks).run()
