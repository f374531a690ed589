"""The long version of tests/unit/analysis/test_margin_verdicts.py: the CI-size table.

    python benchmarks/sim_margin_verdicts.py [REPLICATES]   # default 600; about 30 s idle

Prints the PASS and FAIL shares that docs/statistics.md quotes for percentile verdicts at
CI size (240 requests), at the truth and with clear margins, and for longer runs of loaded queues.
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIMULATIONS = ROOT / "tests" / "unit" / "analysis" / "test_margin_verdicts.py"


def main() -> None:
    replicates = int(sys.argv[1]) if len(sys.argv) > 1 else 600
    sys.path.insert(0, str(ROOT))
    from benchmarks.sim_verdicts import print_measured_rates  # one loader for both tables

    print_measured_rates(SIMULATIONS, "margin_verdicts", replicates)


if __name__ == "__main__":
    main()
