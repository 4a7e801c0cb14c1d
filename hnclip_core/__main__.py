"""``python -m hnclip_core``: the core's commands (:mod:`hnclip_core.cli`) and the harness's
(:mod:`hnclip_core.replication.cli`)."""

import sys

from .replication.cli import main

if __name__ == "__main__":
    sys.exit(main())
