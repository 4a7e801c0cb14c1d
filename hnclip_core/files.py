"""Files written whole or not at all: checkpoints, training state, run-cache JSON."""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable
from pathlib import Path


def write_atomically(path: str | os.PathLike, write: Callable[[Path], object]) -> Path:
    """Call ``write`` on a temporary sibling of ``path``, then rename it to ``path`` (creating the folder).

    A killed process, or another one reading ``path`` meanwhile (``make test`` runs chapters side by side over one
    run cache), sees the old file or the new one, never part of one; the temporary file never stays behind.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.NamedTemporaryFile(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp", delete=False) as tmp:
        tmp_path = Path(tmp.name)
    try:
        write(tmp_path)
        os.replace(tmp_path, path)
    finally:
        tmp_path.unlink(missing_ok=True)
    return path
