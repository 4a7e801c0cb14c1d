"""The whole command line, ``python -m hnclip_core`` (also ``hnclip``): the core's commands (:mod:`hnclip_core.cli`:
``train``, ``pretrain-toy``, ``export-model``, ``export-csv``) and the harness's ``calibrate``.

``calibrate`` measures whether the embedded toy shows the paper's phenomenon: it runs the calibration's seeds and
judges the toy's design targets with the scorecard, the paper's tables and the plots, which need the ``[lab]`` extra.
Without it the command stops with a message that says how to install it; the core's commands need no more than the
core (this module imports nothing else when loaded).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys

from .. import cli as core

#: TrainConfig fields that ``calibrate`` sets itself (each run's seed and monitor, nothing written per run).
CALIBRATION_SETS = frozenset({"seed", "monitor_every", "output_dir", "resume", "save_state", "progress"})

#: How to install what the harness's commands need beyond the core.
LAB_INSTALL = "pip install 'hnclip-core[lab]'"


def build_parser() -> argparse.ArgumentParser:
    """The core's parser with ``calibrate`` added."""
    return core.build_parser(_add_calibrate, description="fine-tune, evaluate and export with the core of hnclip; "
                                                          "calibrate the embedded toy with its harness")


def _add_calibrate(commands) -> None:
    calibrate = commands.add_parser(
        "calibrate", help="measure whether the embedded toy shows the paper's phenomenon (its eight design "
                          "targets, judged by the scorecard; needs the [lab] extra); the train options change the "
                          "toy's preset, e.g. --checkpoint of a pretraining probe"
    )
    core.add_config_options(calibrate, CALIBRATION_SETS)
    calibrate.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    calibrate.add_argument("--objectives", nargs="+", default=["clip", "hn", "hn+tok"])
    calibrate.add_argument("--monitor-every", type=int, default=3, help="gradient measurement interval (steps)")
    calibrate.add_argument("--output", default="results/calibration.json")
    calibrate.add_argument(
        "--recheck", action="store_true", help="only judge the checks on the runs recorded in --output (no training)"
    )


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


def calibrate(args: argparse.Namespace) -> int:
    """Run the calibration (unless ``--recheck``) and print the design targets as the scorecard judges them."""
    from ..toy.model import toy_train_config

    with needs_lab(args.command):
        from .calibration import recheck, run_calibration

    if not args.recheck:
        values = core.config_values(args, CALIBRATION_SETS)
        if values.get("checkpoint") == "toy":
            del values["checkpoint"]
        run_calibration(toy_train_config(**values), tuple(args.seeds), args.output, tuple(args.objectives),
                        args.monitor_every, progress=sys.stderr.isatty())
    verdicts = [{"check": v.text, "verdict": v.status, "ours": v.ours, "why": v.explanation,
                 "margin": v.margin, "deciding": v.deciding}
                for v in recheck(args.output)]
    json.dump(verdicts, sys.stdout, indent=2, ensure_ascii=False, default=float)
    print()
    return 0


def main(argv: list[str] | None = None) -> int:
    args = core.parse(argv, build_parser())
    return calibrate(args) if args.command == "calibrate" else core.run(args)


if __name__ == "__main__":
    sys.exit(main())
