"""The long version of tests/unit/analysis/test_correlated_verdicts.py: every rate, more replicates.

    python benchmarks/sim_verdicts.py [REPLICATES]   # default 2000; ~10 min on one core

Prints the false-fail, false-pass and power rates that docs/statistics.md quotes.
"""

from __future__ import annotations

import importlib.util
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SIMULATIONS = ROOT / "tests" / "unit" / "analysis" / "test_correlated_verdicts.py"


def print_measured_rates(simulations: Path, name: str, replicates: int) -> None:
    """Load a simulation test module by path and print its ``measured_rates`` table."""
    spec = importlib.util.spec_from_file_location(name, simulations)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    started = time.perf_counter()
    for label, rate in module.measured_rates(replicates).items():
        print(f"{rate:7.1%}  {label}")
    print(f"({replicates} replicates each, {time.perf_counter() - started:.0f} s)")


def main() -> None:
    replicates = int(sys.argv[1]) if len(sys.argv) > 1 else 2000
    print_measured_rates(SIMULATIONS, "correlated_verdicts", replicates)


if __name__ == "__main__":
    main()
