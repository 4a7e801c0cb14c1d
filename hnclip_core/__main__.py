"""``python -m hnclip_core``: the command line of :mod:`hnclip_core.replication.cli`."""

import sys

from .replication.cli import main

if __name__ == "__main__":
    sys.exit(main())
