"""Where hnclip keeps files it can rebuild: generated benchmarks, downloaded weights, computed statistics.

The cache lives in ``$HNCLIP_CACHE`` when that environment variable is set (and not empty), otherwise in
``~/.cache/hnclip``. Everything under it can be deleted at any time; it is regenerated on demand.
"""

from __future__ import annotations

import os
from pathlib import Path

CACHE_ENV_VAR = "HNCLIP_CACHE"
DEFAULT_CACHE_DIR = Path("~/.cache/hnclip")


def cache_dir() -> Path:
    """The hnclip cache directory (``$HNCLIP_CACHE`` or ``~/.cache/hnclip``), created if missing."""
    configured = os.environ.get(CACHE_ENV_VAR)
    path = Path(configured) if configured else DEFAULT_CACHE_DIR
    path = path.expanduser()
    path.mkdir(parents=True, exist_ok=True)
    return path
