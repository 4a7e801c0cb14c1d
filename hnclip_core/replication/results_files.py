"""The committed results files (the repository's ``results/``), read in one place: each file by one property of
:class:`Results`, with an error that names the command writing it when it is missing (:data:`PRODUCERS`), and the
tidy table of them all (:meth:`Results.table`). Chapters 4 and 5, the docs' renderers and the tests read them here.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path

from .scorecard import Verdict
from .tidy import Table, read_results

__all__ = ["PRODUCERS", "Results"]

#: The command that writes each results file this module reads.
PRODUCERS = {"calibration.json": "python -m hnclip_core calibrate", "scorecard.json": "make notebooks",
             "ablations.json": "make ablations",
             "framework_throughput.json": "python benchmarks/framework_throughput.py --json "
                                          "results/framework_throughput.json",
             "timings.json": "python benchmarks/time_commands.py test tutorial",
             "recall_speed.json": "python benchmarks/recall_speed.py --repeats 3 --json results/recall_speed.json",
             "train_throughput.json": "python benchmarks/train_throughput.py --rounds 3 --json "
                                      "results/train_throughput.json",
             "token_loss_memory.json": "python benchmarks/token_loss_memory.py --json results/token_loss_memory.json"
                                       " and, for glibc's default, the same with --glibc-dynamic-threshold "
                                       "--settings 2**23",
             "install_size.json": "python benchmarks/install_size.py --json results/install_size.json"}


@dataclass(frozen=True)
class Results:
    """The committed results files (``results_dir``: the repository's ``results/``), each read once, when first used."""

    results_dir: Path

    def path(self, name: str) -> Path:
        """The file ``name`` of ``results_dir``, which must exist."""
        path = self.results_dir / name
        if not path.is_file():
            raise FileNotFoundError(f"{path} is missing: `{PRODUCERS[name]}` writes it")
        return path

    def _json(self, name: str):
        return json.loads(self.path(name).read_text())

    def table(self, output_dir: str | Path | None = None) -> Table:
        """The tidy table (:func:`~hnclip_core.replication.tidy.read_results`) of the calibration, the full ablation
        grids and the framework throughput, with what chapters 1–4 wrote to ``output_dir`` (None: none of it)."""
        return read_results(output_dir, calibration=self.path("calibration.json"),
                            ablations=self.path("ablations.json"), throughput=self.path("framework_throughput.json"))

    @cached_property
    def calibration(self) -> dict:
        return self._json("calibration.json")

    @cached_property
    def grids(self) -> dict:
        return self._json("ablations.json")

    @cached_property
    def throughput(self) -> dict:
        return self._json("framework_throughput.json")

    @cached_property
    def recall_speed(self) -> dict:
        return self._json("recall_speed.json")

    @cached_property
    def train_throughput(self) -> dict:
        return self._json("train_throughput.json")

    @cached_property
    def token_loss_memory(self) -> dict:
        return self._json("token_loss_memory.json")

    @cached_property
    def install_size(self) -> dict:
        return self._json("install_size.json")

    @cached_property
    def timings(self) -> dict[str, dict]:
        """The commands ``benchmarks/time_commands.py`` measured (none before its first run)."""
        path = self.results_dir / "timings.json"
        return json.loads(path.read_text())["commands"] if path.is_file() else {}

    def verdict(self, claim_id: str) -> Verdict:
        return next(v for v in self.scorecard if v.claim_id == claim_id)

    @cached_property
    def scorecard(self) -> list[Verdict]:
        return [Verdict(**entry) for entry in self._json("scorecard.json")]
