"""The README's Python example passes on a busy machine: beside CPU-heavy neighbours.

The example is read from the README itself, so the test follows the text users copy.
Two neighbour processes spin on the CPU for the whole run (each stops by itself after
at most ``NEIGHBOUR_S``), the two busy cores of a shared CI runner. The same run checks
the per-request CSV and the chosen percentiles against the run's JSON.
"""

from __future__ import annotations

import csv
import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[2] / "README.md"
NEIGHBOUR_S = 150.0  # longer than the run (~45 s on a quiet machine), bounded if it hangs
SPIN = f"import time\nend = time.monotonic() + {NEIGHBOUR_S}\nwhile time.monotonic() < end: pass"


def _readme_python_example() -> str:
    text = README.read_text()
    start = text.index("or in Python, with the `latency` fixture:")
    found = re.search(r"```python\n(.*?)```", text[start:], re.S)
    assert found is not None
    return found.group(1)


@pytest.mark.slow
@pytest.mark.serial
def test_the_readme_python_example_passes_beside_cpu_heavy_neighbours(pytester):
    pytester.makepyfile(test_readme=_readme_python_example())
    neighbours = [subprocess.Popen([sys.executable, "-c", SPIN]) for _ in range(2)]
    try:
        result = pytester.runpytest(
            "--latency-json=run.json",
            "--latency-csv=requests.csv",
            "--latency-percentiles=50,90,99,99.9",
            "-p",
            "no:randomly",
        )
        still_spinning = [neighbour.poll() is None for neighbour in neighbours]
    finally:
        for neighbour in neighbours:
            neighbour.kill()
            neighbour.wait()
    assert still_spinning == [True, True]  # they were busy for the whole run
    result.assert_outcomes(passed=1)
    (run,) = json.loads((pytester.path / "run.json").read_text())["runs"]
    with (pytester.path / "requests.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    # Every offered request is one row, once, with the JSON's TTFT.
    assert sorted(int(row["id"]) for row in rows) == sorted(r["id"] for r in run["requests"])
    assert len(rows) == sum(phase["offered"] for phase in run["phases"])
    ttft = {r["id"]: r["ttft_s"] for r in run["requests"]}
    for row in rows:
        expected = ttft[int(row["id"])]
        assert (
            row["ttft_s"] == ""
            if expected is None
            else float(row["ttft_s"]) == pytest.approx(expected)
        )
    steady = run["phases"][0]["percentiles_s"]["ttft"]
    assert set(steady) == {"p50", "p90", "p95", "p99", "p99.9"}  # p95: the objective's own
