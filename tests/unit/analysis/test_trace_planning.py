"""Plan-time power for trace phases: counted like any phase, with advice that fits a trace."""

from __future__ import annotations

import json
from pathlib import Path

from pytest_latency.analysis.planning import plan_power
from pytest_latency.spec.model import Workload, objective
from pytest_latency.spec.trace import trace_phase
from pytest_latency.workload import build_plan


def test_a_short_trace_asks_for_more_of_the_trace(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    lines = [{"timestamp": 100 * i, "input_length": 8, "output_length": 4} for i in range(50)]
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    plan = build_plan(Workload(phases=(trace_phase(path),)))
    (power,) = plan_power(plan, [objective("ttft", p=95, max="1s", phase="replay")], [0.99])
    assert (power.planned, power.needed, power.decidable) == (50, 104, False)
    assert power.suggestion == (
        "replay more of the trace in replay: about 54 more requests (a longer window or"
        " trace file), or add a rate phase"
    )
