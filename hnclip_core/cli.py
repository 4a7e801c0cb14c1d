"""The core's command line: ``python -m hnclip_core {train,pretrain-toy,export-model,export-csv}`` (also ``hnclip``).

``train`` maps every :class:`~hnclip_core.train.TrainConfig` field onto an option, so the paper's main
experiment on real files is one command (HN-CLIP by default; ``--gamma 0 --token-weight 0`` is InfoNCE)::

    python -m hnclip_core train --checkpoint longclip-L.pt --dataset docci --data-root /data/docci \\
        --output-dir runs/docci-hnclip

``--checkpoint toy`` fine-tunes the embedded toy on the synthetic benchmark with the toy's preset
(:data:`hnclip_core.toy.TOY_FINETUNE`) unless the options say otherwise; ``pretrain-toy`` rebuilds that toy.

``export-model`` and ``export-csv`` prepare a run of open_clip's own trainer with L_HN
(:mod:`hnclip_core.open_clip_train`).

Every command here needs only the core's dependencies (``pip install hnclip-core``; tests/test_light_install.py runs
``train`` in such an install). Loading this module imports nothing but the core; the embedded benchmark is registered
by :func:`main`, not on import. The harness adds its own command, ``calibrate``, on top of this parser
(:mod:`hnclip_core.replication.cli`).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import logging
import os
import sys
import typing
from collections.abc import Callable

from .train import FIELD_ROLES, TrainConfig

__all__ = ["COMMANDS", "add_config_options", "build_parser", "config_values", "main", "parse", "run", "toy_recipe"]

#: The commands :func:`run` carries out.
COMMANDS = ("train", "pretrain-toy", "export-model", "export-csv")


def add_config_options(parser: argparse.ArgumentParser, leave_out: frozenset[str] = frozenset()) -> None:
    """An option per TrainConfig field (but ``leave_out``), grouped by the field's role, with its help and default."""
    hints = typing.get_type_hints(TrainConfig)
    groups = {role: parser.add_argument_group(f"{role} options", f"options that {meaning}")
              for role, meaning in FIELD_ROLES.items()}
    for field in dataclasses.fields(TrainConfig):
        if field.name in leave_out:
            continue
        group = groups[field.metadata["role"]]
        option = "--" + field.name.replace("_", "-")
        hint = hints[field.name]
        default = field.default if field.default is not dataclasses.MISSING else field.default_factory()
        help_text = field.metadata.get("help", "") + f" (default: {default})"
        # Options left out stay None here, so that the toy's preset can fill them (see run).
        if hint in (bool, bool | None):
            group.add_argument(option, action=argparse.BooleanOptionalAction, help=help_text)
        elif field.name == "eval_ks":
            group.add_argument(option, type=int, nargs="+", metavar="K", help=help_text)
        else:
            kinds = [t for t in typing.get_args(hint) if t is not type(None)] or [hint]
            group.add_argument(option, type=kinds[0], metavar=kinds[0].__name__.upper(), help=help_text)


def config_values(args: argparse.Namespace, leave_out: frozenset[str] = frozenset()) -> dict:
    """The TrainConfig fields given on the command line."""
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(TrainConfig)
            if f.name not in leave_out and getattr(args, f.name) is not None}


def build_parser(more_commands: Callable[[argparse._SubParsersAction], None] | None = None,
                 description: str = "fine-tune, evaluate and export with the core of hnclip"
                 ) -> argparse.ArgumentParser:
    """The parser of :data:`COMMANDS`; ``more_commands(subparsers)`` adds others (the harness's ``calibrate``)."""
    parser = argparse.ArgumentParser(prog="python -m hnclip_core", description=description)
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress messages")
    commands = parser.add_subparsers(dest="command", required=True)

    train_parser = commands.add_parser("train", help="fine-tune and evaluate (defaults: the paper's recipe)")
    add_config_options(train_parser)

    toy_parser = commands.add_parser(
        "pretrain-toy", help="rebuild the embedded toy Long-CLIP from its recipe (the package ships it already)"
    )
    toy_parser.add_argument("--output", default=None, help="fp32 checkpoint path (default: the cache directory)")
    toy_parser.add_argument("--restart", action="store_true", help="start afresh instead of resuming a saved state")
    toy_parser.add_argument("--probe-every", type=int, default=300, metavar="STEPS",
                            help="measure the zero-shot regime every STEPS steps of the Long-CLIP and token stages, "
                                 "and at their ends (0: never)")
    toy_parser.add_argument("--ship", action="store_true", help="then replace the shipped fp16 file and its record")
    variant = toy_parser.add_argument_group("a variant of the recipe (default: the shipped toy's)")
    variant.add_argument("--detail-rate", type=float, default=None, metavar="P",
                         help="name sizes, places and relations in pretraining captions with probability P (the "
                              "detail gap; the shipped recipe: 1)")
    variant.add_argument("--long-detail-rate", type=float, default=None, metavar="P",
                         help="the same for the Long-CLIP stage's captions alone (default: --detail-rate)")
    variant.add_argument("--fixed-logit-scale", action="store_true",
                         help="hold s at 100 throughout instead of learning it from there")
    variant.add_argument("--dense-alt-share", type=float, default=None, metavar="X",
                         help="share of Long-CLIP-stage captions in the dense-alt voice")
    variant.add_argument("--token-steps", type=int, default=None, metavar="N",
                         help="a third stage of N steps with the token term L_tok added (0: none)")
    variant.add_argument("--token-weight", type=float, default=None, metavar="W", help="L_tok's weight in it")
    variant.add_argument("--caption-cone", type=float, default=None, metavar="ALPHA2",
                         help="hold this share of every caption embedding's squared norm on an axis no image uses "
                              "(0, the shipped recipe's: no cone)")
    variant.add_argument("--target-probe-every", type=int, default=None, metavar="STEPS",
                         help="end the Long-CLIP stage at the first validation probe, every STEPS steps, that meets "
                              "the regime targets (0: run the whole schedule)")
    toy_parser.add_argument("--continue-from", default=None, metavar="CHECKPOINT",
                            help="a toy of the recipe's first two stages (with its .json record), e.g. the one "
                                 "shipped before the token stage: run only the token stage from it")
    export_model = commands.add_parser(
        "export-model", help="write a Long-CLIP-format checkpoint as an open_clip local-dir: model (for "
                             "python -m hnclip_core.open_clip_train)")
    export_model.add_argument("--checkpoint", required=True, help="Long-CLIP-format file, or 'toy' (the embedded toy)")
    export_model.add_argument("--output", required=True, help="folder to write (open_clip_config.json and weights)")
    export_csv = commands.add_parser(
        "export-csv", help="write a benchmark split as open_clip_train's CSV (columns filepath, title)")
    export_csv.add_argument("--dataset", default="synthetic", help="a dataset name of hnclip_core.data.load_pairs")
    export_csv.add_argument("--data-root", default=None, help="the benchmark's folder (the synthetic one: optional)")
    export_csv.add_argument("--split", default="train")
    export_csv.add_argument("--output", required=True, help="the CSV file to write")
    if more_commands is not None:
        more_commands(commands)
    return parser


def toy_recipe(args: argparse.Namespace):
    """The pretraining recipe ``pretrain-toy`` runs: the shipped toy's, with the variant options applied."""
    from .toy.model import TOY_RECIPE

    changes = {"detail_rate": args.detail_rate, "long_detail_rate": args.long_detail_rate,
               "dense_alt_share": args.dense_alt_share,
               "learn_logit_scale": False if args.fixed_logit_scale else None,
               "token_steps": args.token_steps, "token_weight": args.token_weight,
               "caption_cone": args.caption_cone, "target_probe_every": args.target_probe_every}
    return dataclasses.replace(TOY_RECIPE, **{k: v for k, v in changes.items() if v is not None})


def run(args: argparse.Namespace) -> int:
    """Carry out one of :data:`COMMANDS`, parsed by :func:`build_parser` (or a parser built on it)."""
    if args.command == "train":
        from .train import train

        values = config_values(args)
        if values.get("checkpoint") == "toy":
            from .toy.model import toy_train_config

            config = toy_train_config(**{k: v for k, v in values.items() if k != "checkpoint"})
        else:
            config = TrainConfig.from_dict(values)
        results = train(config)
        if int(os.environ.get("RANK", "0")) == 0:  # under torchrun, one summary (rank 0's), not one per process
            summary = {key: results[key] for key in ("zero_shot", "best", "last")}
            json.dump(summary, sys.stdout, indent=2)
            print()
        return 0
    if args.command == "pretrain-toy":
        from .toy.model import pretrain_toy, ship_toy

        path = pretrain_toy(args.output, resume=not args.restart, probe_every=args.probe_every,
                            recipe=toy_recipe(args), continue_from=args.continue_from)
        print(ship_toy(path, toy_recipe(args)) if args.ship else path)
        return 0
    if args.command == "export-model":
        from .open_clip_train import export_model
        from .toy.model import ensure_toy_model

        checkpoint = ensure_toy_model() if args.checkpoint == "toy" else args.checkpoint
        print(f"local-dir:{export_model(checkpoint, args.output)}")
        return 0
    if args.command == "export-csv":
        from .data import load_pairs
        from .open_clip_train import export_csv

        print(export_csv(load_pairs(args.dataset, args.data_root, args.split), args.output))
        return 0
    raise ValueError(f"not a command of the core's command line: {args.command!r} (its commands: {COMMANDS})")


def parse(argv: list[str] | None = None, parser: argparse.ArgumentParser | None = None) -> argparse.Namespace:
    """Register the embedded benchmark (every command accepts it by name), parse ``argv`` with ``parser`` (default:
    :func:`build_parser`'s) and set the log level it asks for."""
    from .toy import register_datasets

    register_datasets()
    args = (parser or build_parser()).parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    return args


def main(argv: list[str] | None = None) -> int:
    return run(parse(argv))


if __name__ == "__main__":
    sys.exit(main())
