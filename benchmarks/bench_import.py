"""What the installed plugin adds to a pytest run that has no latency tests at all.

    python benchmarks/bench_import.py [--repeat 5] [--target 0.15]

Runs ``pytest --collect-only -q`` on a one-test file in a temporary directory, with the
plugin (as installed, entry point ``latency``) and with ``-p no:latency``, ``--repeat``
times each, and prints the best wall time of each and their difference. Exits 1 when
the plugin adds more than ``--target`` seconds, 2 when the plugin is not installed.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from importlib.metadata import entry_points
from pathlib import Path

PLAIN_TEST = "def test_plain():\n    assert 1 + 1 == 2\n"
COLLECT = [sys.executable, "-m", "pytest", "--collect-only", "-q", "-p", "no:cacheprovider"]


def best_wall_s(args: list[str], cwd: Path, repeat: int) -> float:
    """The fastest of ``repeat`` runs (the others include noise from the machine)."""
    best = float("inf")
    for _ in range(repeat):
        started = time.perf_counter()
        done = subprocess.run(args, cwd=cwd, capture_output=True, text=True, check=False)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"{' '.join(args)} failed:\n{done.stdout}{done.stderr}")
        best = min(best, elapsed)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--target", type=float, default=0.15, help="seconds the plugin may add")
    args = parser.parse_args()
    if not any(ep.name == "latency" for ep in entry_points(group="pytest11")):
        print("the latency plugin is not installed (pip install -e .)", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory() as folder:
        cwd = Path(folder)
        (cwd / "test_plain.py").write_text(PLAIN_TEST)
        # A flag only the plugin knows: proves the "with" runs really load it.
        best_wall_s([*COLLECT, "--latency-seed", "1"], cwd, repeat=1)
        with_plugin = best_wall_s(COLLECT, cwd, args.repeat)
        without = best_wall_s([*COLLECT, "-p", "no:latency"], cwd, args.repeat)
    added = with_plugin - without
    print(f"pytest --collect-only -q, one plain test, best of {args.repeat}:")
    print(f"  with the plugin     {with_plugin:.3f} s")
    print(f"  with -p no:latency  {without:.3f} s")
    print(f"  plugin adds         {added:.3f} s (target <= {args.target:.2f} s)")
    return 0 if added <= args.target else 1


if __name__ == "__main__":
    sys.exit(main())
