"""A capacity search and a saturation run on the real vLLM engine on CPU (outside CI).

    python benchmarks/vllm_cpu_capacity.py [BUDGET_MINUTES]

Needs a Docker engine and ``pytest-latency/vllm:local`` (``pytest-latency images build
vllm``). Runs two spec files through pytest, one vLLM container (``max_num_seqs: 2``,
the bundled tiny model, 32-token answers) for both:

- ``saturation``: 25/s for 20 s, far over what two sequences on two cores serve; the
  completed rate over the phase's window is the capacity a saturation run measures;
- ``capacity``: a search between 1/s and 25/s for TTFT p90 within 1 s (budget default
  8 minutes); its bracket is the highest rate that passed and the lowest that failed.

Prints both, with the machine's load average before and after: the numbers are a
shared two-core machine's, not vLLM's on a GPU.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

SATURATION = """\
server: {kind: vllm, options: {max_num_seqs: 2}}
workload:
  seed: 21
  input_tokens: [20, 40]
  output_tokens: 32
  timeout: 60s
  phases:
    - {name: saturation, arrival: poisson, rate: 25, duration: 20s}
objectives:
  - {metric: error_rate, max: 50%}
"""

CAPACITY = """\
server: {{kind: vllm, options: {{max_num_seqs: 2}}}}
workload: {{seed: 22, input_tokens: [20, 40], output_tokens: 32, timeout: 30s}}
capacity:
  rates: [1, 25]
  probe: 15s
  budget: {budget}
objectives:
  - {{metric: ttft, p: 90, max: 1s}}
  - {{metric: capacity, min: 1}}
"""


def main() -> None:
    budget_min = float(sys.argv[1]) if len(sys.argv) > 1 else 8.0
    with tempfile.TemporaryDirectory(prefix="vllm-capacity.") as folder:
        work = Path(folder)
        (work / "a_saturation.slo.yaml").write_text(SATURATION)
        (work / "b_capacity.slo.yaml").write_text(CAPACITY.format(budget=f"{budget_min:g}m"))
        print(f"load average before: {os.getloadavg()}")
        subprocess.run(
            [sys.executable, "-m", "pytest", str(work), "-p", "no:cacheprovider", "-q",
             "--latency-json", str(work / "run.json"), "--latency-max-lag", "5s",
             "--latency-inconclusive", "warn", "--rootdir", str(work)],
            check=False, cwd=work,
        )  # fmt: skip
        print(f"load average after: {os.getloadavg()}")
        runs = {run["test"]: run for run in json.loads((work / "run.json").read_text())["runs"]}
    for name, run in sorted(runs.items()):
        if run.get("capacity"):
            found = run["capacity"]
            print(f"{name}: bracket passed {found['passed_rps']}/s, failed {found['failed_rps']}/s")
            for probe in found["probes"]:
                print(f"  probe {json.dumps(probe)[:200]}")
        for phase in run["phases"]:
            throughput = phase.get("throughput") or {}
            print(
                f"{name} {phase['name']}: offered {phase['offered']}, completed "
                f"{phase['completed']}, {throughput.get('requests_per_s', 0):.2f} req/s served"
            )


if __name__ == "__main__":
    main()
