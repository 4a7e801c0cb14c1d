"""L_HN inside open_clip's own trainer (``open_clip_train``, in the open_clip_torch wheel), with no fork of it.

The paper's plug-and-play claim (§2.2 "Cost", §3.3) is that L_HN replaces InfoNCE in any CLIP fine-tuning
code. This module makes that true of open_clip_train, which runs on one device, under ``torchrun`` on several
and on SLURM clusters. Three steps::

    python -m hnclip_core export-model --checkpoint longclip-L.pt --output models/longclip-L
    python -m hnclip_core export-csv --dataset docci --data-root /data/docci --split train --output docci-train.csv
    python -m hnclip_core.open_clip_train --gamma 0.5 --model local-dir:models/longclip-L \\
        --train-data docci-train.csv --csv-img-key filepath --csv-caption-key title --lr 2e-6 ...

``export-model`` writes a Long-CLIP-format checkpoint (:func:`~hnclip_core.longclip.load_longclip`) as an
open_clip ``local-dir:`` model: ``open_clip_config.json`` (the architecture, QuickGELU, context 248, and the
preprocessing) and ``open_clip_pytorch_model.bin`` (fp32 weights). ``export-csv`` writes a benchmark split in
open_clip's tab-separated CSV format. The third command is open_clip_train's own command line plus ``--gamma``:
its ``create_loss`` returns :class:`~hnclip_core.losses.HNClipLoss` with open_clip_train's distributed options
(``--local-loss``, ``--gather-with-grad``), so Ḡ's captions and the negatives are gathered by open_clip's
``gather_features``; the run stops before its first step if the loss open_clip_train trains with is not that one
(:func:`hook_hn_clip_loss`). Under ``torchrun``, whose parser refuses open_clip_train's ``--logs``, pass the log
folder as ``--training-logs``. ``--gamma 0`` is open_clip_train's stock ``ClipLoss`` run, bit for bit
(``tests/test_open_clip_train.py``).

What is left out there, and why: L_tok (Eq. 3) needs per-token text and per-patch image outputs that
open_clip_train's model call does not return, so this is L_HN alone (the paper's plug-and-play setting,
Table 2); Long-CLIP's frozen first 20 positions and its parameter groups are hnclip's trainer's, not
open_clip_train's. ``--distill``, ``--siglip`` and CoCa models keep their own losses: asking for L_HN with them
is an error. open_clip_train needs open_clip's training extra (``pip install 'open_clip_torch[training]'``,
included in this package's ``[open-clip-train]`` extra).
"""

from __future__ import annotations

import argparse
import atexit
import csv
import json
import logging
import os
import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path

import open_clip
import torch

from .data import ImageCaptionPair
from .files import write_atomically, write_text_atomically
from .longclip import ClipArchitecture, infer_architecture, load_longclip, open_clip_config
from .losses import PAPER_GAMMA, HNClipLoss

__all__ = ["CONFIG_NAME", "WEIGHTS_NAME", "CSV_COLUMNS", "export_model", "export_csv", "create_hn_clip_loss",
           "hook_hn_clip_loss", "main"]

#: File names open_clip's ``local-dir:`` schema looks for (``open_clip.factory``).
CONFIG_NAME = "open_clip_config.json"
WEIGHTS_NAME = "open_clip_pytorch_model.bin"
#: Column names of :func:`export_csv`: open_clip_train's ``--csv-img-key`` / ``--csv-caption-key``.
CSV_COLUMNS = ("filepath", "title")


def local_dir_config(arch: ClipArchitecture) -> dict:
    """The ``open_clip_config.json`` of a model of ``arch``: the model config and its eval preprocessing
    (open_clip's defaults are Long-CLIP's: OpenAI mean/std, bicubic resize of the shortest side)."""
    return {"model_cfg": open_clip_config(arch), "preprocess_cfg": {"size": arch.image_size}}


def export_model(checkpoint: str | os.PathLike, output: str | os.PathLike) -> Path:
    """Write a Long-CLIP-format checkpoint as an open_clip ``local-dir:`` model folder; returns the folder.

    The weights are those :func:`~hnclip_core.longclip.load_longclip` loads (strictly, fp32), so that
    ``open_clip.create_model_and_transforms("local-dir:" + folder)`` gives the same model as hnclip's trainer.
    """
    output = Path(output)
    model, _, _ = load_longclip(checkpoint)
    arch = infer_architecture(model.state_dict())
    write_atomically(output / WEIGHTS_NAME, partial(torch.save, model.state_dict()))
    config = json.dumps(local_dir_config(arch), indent=2) + "\n"
    write_text_atomically(output / CONFIG_NAME, config)
    return output


def export_csv(pairs: Sequence[ImageCaptionPair], output: str | os.PathLike) -> Path:
    """Write image–caption pairs as open_clip_train's CSV (tab-separated, header ``filepath title``, absolute
    image paths). Tabs and line breaks inside a caption become spaces: the reader splits on both."""
    def write(path: Path) -> None:
        with path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.writer(handle, delimiter="\t", lineterminator="\n")
            writer.writerow(CSV_COLUMNS)
            for pair in pairs:
                writer.writerow([str(Path(pair.image_path).resolve()), " ".join(pair.caption.split())])

    return write_atomically(output, write)


#: open_clip_train options under which it trains with a loss other than ``ClipLoss``.
OWN_LOSS_OPTIONS = {"distill": "--distill", "siglip": "--siglip"}


def create_hn_clip_loss(args: argparse.Namespace, gamma: float) -> HNClipLoss:
    """open_clip_train's ``create_loss`` for runs that would use ``ClipLoss``: L_HN (Eq. 2) with the same
    distributed options. Runs with a loss of their own (distillation, SigLIP, CoCa) are refused."""
    own = [option for name, option in OWN_LOSS_OPTIONS.items() if getattr(args, name, False)]
    if "coca" in args.model.lower():
        own.append(f"--model {args.model} (CoCa)")
    if own:
        raise SystemExit(f"hnclip_core.open_clip_train: L_HN replaces ClipLoss; {', '.join(own)} trains with a "
                         "loss of its own. Leave out --gamma and use open_clip_train directly.")
    return HNClipLoss(
        gamma=gamma, local_loss=args.local_loss, gather_with_grad=args.gather_with_grad, cache_labels=True,
        rank=args.rank, world_size=args.world_size, use_horovod=args.horovod,
    )


class CpuDistributedDataParallel(torch.nn.parallel.DistributedDataParallel):
    """``DistributedDataParallel`` that accepts open_clip_train's ``device_ids=[device]`` for a CPU module.

    open_clip_train always passes ``device_ids``; DDP refuses them for CPU modules (it wants ``None``), so a CPU run
    under ``torchrun`` (gloo) would stop before its first step. Installed only for ``--device cpu``; on GPUs
    open_clip_train's DDP call is untouched.
    """

    def __init__(self, module, device_ids=None, **kwargs):
        if device_ids is not None and all(torch.device(d).type == "cpu" for d in device_ids):
            device_ids = None
        super().__init__(module, device_ids=device_ids, **kwargs)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m hnclip_core.open_clip_train", add_help=False,
        description="open_clip_train with L_HN (Eq. 2) in place of ClipLoss; every other option is open_clip_train's "
                    "(python -m open_clip_train.main --help).",
    )
    parser.add_argument("--gamma", type=float, default=PAPER_GAMMA, help="the margin weight γ of Eq. 2 (0: InfoNCE, "
                        "open_clip_train's ClipLoss) (default: 0.5, the paper's)")
    parser.add_argument("--training-logs", metavar="DIR", default=None,
                        help="open_clip_train's --logs under another name, which torchrun's own parser does not "
                             "mistake for its --logs-specs (pytorch issue 120601)")
    return parser


#: The open_clip_train functions the launcher hooks: ``main`` builds the loss by calling ``create_loss`` (replaced)
#: and hands it to ``train_one_epoch`` (wrapped, to check that the loss it trains with is the one asked for).
HOOKS = ("create_loss", "train_one_epoch")


def hook_hn_clip_loss(trainer, gamma: float) -> None:
    """Make ``trainer`` (the ``open_clip_train.main`` module) build L_HN at ``gamma``, and stop the run before its
    first step if the loss that reaches ``train_one_epoch`` is anything else, so that an open_clip_train which builds
    its loss another way cannot silently train InfoNCE under ``--gamma``."""
    missing = [name for name in HOOKS if not callable(getattr(trainer, name, None))]
    if missing:
        raise SystemExit(f"hnclip_core.open_clip_train: open_clip {open_clip.__version__}'s open_clip_train.main has "
                         f"no {' or '.join(missing)}, where L_HN is put in place of ClipLoss; this launcher is tested "
                         "with open_clip_torch 3.3 (pip install 'open_clip_torch>=3.3,<3.4')")
    trainer.create_loss = partial(create_hn_clip_loss, gamma=gamma)
    train_one_epoch = trainer.train_one_epoch

    def checked_train_one_epoch(model, data, loss, *args, **kwargs):
        if not (isinstance(loss, HNClipLoss) and loss.gamma == gamma):
            raise SystemExit(f"hnclip_core.open_clip_train: open_clip {open_clip.__version__}'s open_clip_train "
                             f"trains with {type(loss).__name__}, not HNClipLoss(gamma={gamma}): it no longer builds "
                             "its loss through create_loss. This launcher is tested with open_clip_torch "
                             "3.3 (pip install 'open_clip_torch>=3.3,<3.4').")
        return train_one_epoch(model, data, loss, *args, **kwargs)

    trainer.train_one_epoch = checked_train_one_epoch


#: torch loggers that report compiler statistics when the process exits; open_clip_train sets every logger to INFO,
#: so a run that compiled nothing would end with their empty tables.
EXIT_REPORTS = ("torch._dynamo", "torch._subclasses.fake_tensor")


def _quiet_exit_reports() -> None:
    for name in list(logging.root.manager.loggerDict):  # open_clip_train set each one's level, children included
        if name.startswith(EXIT_REPORTS):
            logging.getLogger(name).setLevel(logging.WARNING)


def _device(argv: Sequence[str]) -> str:
    """The value of open_clip_train's ``--device`` in ``argv`` (its default: cuda)."""
    device = argparse.ArgumentParser(add_help=False)
    device.add_argument("--device", default="cuda")
    return device.parse_known_args(argv)[0].device


def main(argv: Sequence[str] | None = None) -> int | None:
    """Run open_clip_train's ``main`` on ``argv`` (minus ``--gamma``) with :func:`create_hn_clip_loss`."""
    parser = build_parser()
    ours, theirs = parser.parse_known_args(sys.argv[1:] if argv is None else list(argv))
    if ours.gamma < 0:
        raise SystemExit(f"--gamma must be ≥ 0, got {ours.gamma}")
    if "-h" in theirs or "--help" in theirs:
        parser.print_help()
        print()
    try:
        import open_clip_train.main as open_clip_trainer
    except ModuleNotFoundError as error:
        raise SystemExit(f"open_clip_train needs open_clip's training extra ({error.name} is missing): "
                         "pip install 'open_clip_torch[training]'") from error
    hook_hn_clip_loss(open_clip_trainer, ours.gamma)
    atexit.register(_quiet_exit_reports)  # runs before torch's own exit handlers, registered at its import
    if ours.training_logs is not None:
        theirs = [*theirs, "--logs", ours.training_logs]
    if torch.device(_device(theirs)).type == "cpu":
        torch.nn.parallel.DistributedDataParallel = CpuDistributedDataParallel
    return open_clip_trainer.main(theirs)


if __name__ == "__main__":
    sys.exit(main())
