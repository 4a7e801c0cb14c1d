"""What a benchmark's ``--json`` record says about the conditions it was measured under, and how it is written: every
script beside it (``python benchmarks/NAME.py`` puts this folder on ``sys.path``) describes the machine with
:func:`machine` and writes its record with :func:`write_json`.
"""

from __future__ import annotations

import datetime
import json
import os
import platform
import subprocess
from pathlib import Path

from hnclip_core.files import write_text_atomically

REPOSITORY = Path(__file__).resolve().parents[1]


def _git(*arguments: str) -> str | None:
    try:
        done = subprocess.run(["git", *arguments], cwd=REPOSITORY, capture_output=True, text=True, check=True)
    except (OSError, subprocess.CalledProcessError):
        return None
    return done.stdout.strip()


def machine() -> dict:
    """The machine a measurement ran on: platform, processor, cores, Python, torch and its threads, open_clip."""
    import torch  # only for its version and the thread count it uses

    try:
        import open_clip
    except ImportError:  # a core-only environment of benchmarks/install_size.py's survey
        open_clip = None
    return {"platform": platform.platform(), "processor": platform.machine(), "cores": os.cpu_count(),
            "python": platform.python_version(), "torch": torch.__version__, "torch_threads": torch.get_num_threads(),
            "open_clip": getattr(open_clip, "__version__", None)}


def conditions(note: str | None = None) -> dict:
    """The machine, torch and its threads, the date, the commit (and whether the work tree differed from it), the
    load average when called (what else was running) and an optional free-text ``note``."""
    status = _git("status", "--porcelain", "--untracked-files=no")
    record = {
        "date": datetime.date.today().isoformat(),
        "commit": _git("rev-parse", "HEAD"),
        "work_tree_modified": bool(status) if status is not None else None,
        "machine": machine(),
        "load_average_at_start": [round(x, 2) for x in os.getloadavg()] if hasattr(os, "getloadavg") else None,
    }
    if note:
        record["note"] = note
    return record


def write_json(path: str | os.PathLike, record: dict) -> Path:
    """Write ``record`` as indented JSON to ``path``, whole or not at all."""
    return write_text_atomically(path, json.dumps(record, indent=1) + "\n")
