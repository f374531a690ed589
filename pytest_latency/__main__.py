"""``python -m pytest_latency``: the ``pytest-latency`` command (see :mod:`.cli`)."""

import sys

from pytest_latency.cli.main import main

if __name__ == "__main__":
    sys.exit(main())
