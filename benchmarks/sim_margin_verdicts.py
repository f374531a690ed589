"""The long version of tests/unit/analysis/test_margin_verdicts.py: the CI-size table.

    python benchmarks/sim_margin_verdicts.py [REPLICATES]   # default 600; about 30 s idle

Prints the PASS and FAIL shares that docs/statistics.md quotes for percentile verdicts at
CI size (240 requests), at the truth and with clear margins, and for longer runs of loaded queues.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIMULATIONS = ROOT / "tests" / "unit" / "analysis" / "test_margin_verdicts.py"


def main() -> None:
    replicates = int(sys.argv[1]) if len(sys.argv) > 1 else 600
    sys.path.insert(0, str(ROOT))
    spec = importlib.util.spec_from_file_location("margin_verdicts", SIMULATIONS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    started = time.perf_counter()
    for name, rate in module.measured_rates(replicates).items():
        print(f"{rate:7.1%}  {name}")
    print(f"({replicates} replicates each, {time.perf_counter() - started:.0f} s)")


if __name__ == "__main__":
    main()
