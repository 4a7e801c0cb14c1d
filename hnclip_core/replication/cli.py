"""Command line: ``python -m hnclip_core {train,pretrain-toy,export-model,export-csv,calibrate}`` (also ``hnclip``).

``train`` maps every :class:`~hnclip_core.train.TrainConfig` field onto an option, so the paper's main
experiment on real files is one command (HN-CLIP by default; ``--gamma 0 --token-weight 0`` is InfoNCE)::

    python -m hnclip_core train --checkpoint longclip-L.pt --dataset docci --data-root /data/docci \\
        --output-dir runs/docci-hnclip

``--checkpoint toy`` fine-tunes the embedded toy on the synthetic benchmark with the toy's preset
(:data:`hnclip_core.toy.TOY_FINETUNE`) unless the options say otherwise.

``export-model`` and ``export-csv`` prepare a run of open_clip's own trainer with L_HN
(:mod:`hnclip_core.open_clip_train`).

``train``, ``pretrain-toy`` and the exports need only the core's dependencies (``pip install hnclip-core``): this
module imports, when loaded, nothing but the core and :mod:`hnclip_core.toy`, whose code needs no more
(tests/test_light_install.py runs ``train`` in such an install). ``calibrate`` is the harness's (the scorecard, the
paper's tables, the plots): without the ``[lab]`` extra it stops with a message that says how to install it.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import json
import logging
import os
import sys
import typing

from ..toy import register_datasets
from ..train import FIELD_ROLES, TrainConfig

#: TrainConfig fields that ``calibrate`` sets itself (each run's seed and monitor, nothing written per run).
CALIBRATION_SETS = frozenset({"seed", "monitor_every", "output_dir", "resume", "save_state", "progress"})

#: How to install what the harness's commands need beyond the core.
LAB_INSTALL = "pip install 'hnclip-core[lab]'"


def _add_config_options(parser: argparse.ArgumentParser, leave_out: frozenset[str] = frozenset()) -> None:
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
        # Options left out stay None here, so that the toy's preset can fill them (see main).
        if hint in (bool, bool | None):
            group.add_argument(option, action=argparse.BooleanOptionalAction, help=help_text)
        elif field.name == "eval_ks":
            group.add_argument(option, type=int, nargs="+", metavar="K", help=help_text)
        else:
            kinds = [t for t in typing.get_args(hint) if t is not type(None)] or [hint]
            group.add_argument(option, type=kinds[0], metavar=kinds[0].__name__.upper(), help=help_text)


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m hnclip_core", description=__doc__.splitlines()[0])
    parser.add_argument("-v", "--verbose", action="store_true", help="log progress messages")
    commands = parser.add_subparsers(dest="command", required=True)

    train_parser = commands.add_parser("train", help="fine-tune and evaluate (defaults: the paper's recipe)")
    _add_config_options(train_parser)

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
                              "(0: no cone; the shipped recipe: 0.75)")
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
    calibrate = commands.add_parser(
        "calibrate", help="measure whether the embedded toy shows the paper's phenomenon (its eight design "
                          "targets, judged by the scorecard; needs the [lab] extra); the train options change the "
                          "toy's preset, e.g. --checkpoint of a pretraining probe"
    )
    _add_config_options(calibrate, CALIBRATION_SETS)
    calibrate.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    calibrate.add_argument("--objectives", nargs="+", default=["clip", "hn", "hn+tok"])
    calibrate.add_argument("--monitor-every", type=int, default=3, help="gradient measurement interval (steps)")
    calibrate.add_argument("--output", default="results/calibration.json")
    calibrate.add_argument(
        "--recheck", action="store_true", help="only judge the checks on the runs recorded in --output (no training)"
    )
    return parser


def _config_values(args: argparse.Namespace, leave_out: frozenset[str] = frozenset()) -> dict:
    """The TrainConfig fields given on the command line."""
    return {f.name: getattr(args, f.name) for f in dataclasses.fields(TrainConfig)
            if f.name not in leave_out and getattr(args, f.name) is not None}


def toy_recipe(args: argparse.Namespace):
    """The pretraining recipe ``pretrain-toy`` runs: the shipped toy's, with the variant options applied."""
    from ..toy.model import TOY_RECIPE

    changes = {"detail_rate": args.detail_rate, "long_detail_rate": args.long_detail_rate,
               "dense_alt_share": args.dense_alt_share,
               "learn_logit_scale": False if args.fixed_logit_scale else None,
               "token_steps": args.token_steps, "token_weight": args.token_weight,
               "caption_cone": args.caption_cone, "target_probe_every": args.target_probe_every}
    return dataclasses.replace(TOY_RECIPE, **{k: v for k, v in changes.items() if v is not None})


@contextlib.contextmanager
def needs_lab(command: str):
    """Turn an import of a package missing from a core-only install into an exit that names the ``[lab]`` extra."""
    try:
        yield
    except ModuleNotFoundError as error:
        if (error.name or "hnclip_core").partition(".")[0] == "hnclip_core":
            raise  # a module of this package itself: a broken install, not a missing extra
        raise SystemExit(
            f"python -m hnclip_core {command}: {error.name} is not installed. This command belongs to the notebooks' "
            f"harness, which needs the package's [lab] extra: {LAB_INSTALL}"
        ) from error


def main(argv: list[str] | None = None) -> int:
    register_datasets()  # every command accepts the embedded benchmark by name
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING, format="%(message)s")
    if args.command == "train":
        from ..train import train

        values = _config_values(args)
        if values.get("checkpoint") == "toy":
            from ..toy.model import toy_train_config

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
        from ..toy.model import pretrain_toy, ship_toy

        path = pretrain_toy(args.output, resume=not args.restart, probe_every=args.probe_every,
                            recipe=toy_recipe(args), continue_from=args.continue_from)
        print(ship_toy(path, toy_recipe(args)) if args.ship else path)
        return 0
    if args.command == "export-model":
        from ..open_clip_train import export_model
        from ..toy.model import ensure_toy_model

        checkpoint = ensure_toy_model() if args.checkpoint == "toy" else args.checkpoint
        print(f"local-dir:{export_model(checkpoint, args.output)}")
        return 0
    if args.command == "export-csv":
        from ..data import load_pairs
        from ..open_clip_train import export_csv

        print(export_csv(load_pairs(args.dataset, args.data_root, args.split), args.output))
        return 0
    if args.command == "calibrate":
        from ..toy.model import toy_train_config

        with needs_lab(args.command):
            from .calibration import recheck, run_calibration

        if not args.recheck:
            values = _config_values(args, CALIBRATION_SETS)
            if values.get("checkpoint") == "toy":
                del values["checkpoint"]
            run_calibration(toy_train_config(**values), tuple(args.seeds), args.output, tuple(args.objectives),
                            args.monitor_every, progress=sys.stderr.isatty())
        verdicts = [{"check": v.text, "verdict": v.status, "ours": v.ours, "why": v.explanation}
                    for v in recheck(args.output)]
        json.dump(verdicts, sys.stdout, indent=2, ensure_ascii=False, default=float)
        print()
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())
