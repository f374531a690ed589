"""Trace replay: are requests sent at the trace's instants? Schedule lag vs a Poisson phase.

Writes a Mooncake trace (integer-millisecond timestamps of a bursty gamma process, shape
``--burstiness``, at ``--rate`` for ``--duration`` s), replays it through the real driver
against ``fast_server.py`` (own process, pinned to ``--server-cpu``; this process pinned
to ``--client-cpus``), and runs a Poisson phase of the same rate and duration on the same
harness, and a gamma phase of the trace's own burstiness (the same arrival process drawn
by the planner, so that what differs is only replay), alternating the three
``--rounds`` times after one discarded warm-up round of each (the first run opens its
connections cold). Reports per run: schedule lag
(``sent_s - intended_s``) p50/p99/max, the largest distance between a request's planned
instant and the trace's own (must be 0: the plan is the trace), and the statuses.
Target: trace replay p99 lag <= 2 ms.

Only 127.0.0.1; every run is bounded by its plan and the per-request timeout.

    python benchmarks/bench_trace_replay.py --rate 50 --duration 10 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from bench_load import start_server

from pytest_latency.driver import Target, run_plan
from pytest_latency.spec.model import Phase, Workload
from pytest_latency.spec.trace import trace_phase
from pytest_latency.workload import build_plan

LAG_TARGET_MS = 2.0


def write_trace(path: Path, rate: float, duration: float, burstiness: float, seed: int) -> None:
    rng = np.random.default_rng(seed)
    gaps = rng.gamma(burstiness, 1.0 / (rate * burstiness), size=int(rate * duration * 2) + 16)
    instants = np.cumsum(gaps)
    instants = instants[instants < duration]
    lines = [
        {"timestamp": round(float(t) * 1e3), "input_length": 8, "output_length": 8,
         "hash_ids": [int(i % 5)]}
        for i, t in enumerate(instants)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))


def lag_row(kind: str, workload: Workload, url: str, trace: Path | None) -> dict[str, Any]:
    plan = build_plan(workload)
    planned_error_ms = 0.0
    if trace is not None:  # the plan's instants are the trace's, shifted to the start
        stamps = [json.loads(line)["timestamp"] for line in trace.read_text().splitlines()]
        truth = (np.array(stamps) - stamps[0]) / 1e3
        planned = np.array([r.intended_s for r in plan.requests])
        planned_error_ms = float(np.max(np.abs(planned - truth))) * 1e3
    outcome = run_plan(plan, Target(url, model="bench"))
    lags = np.array([r.schedule_lag_s for r in outcome.records if r.schedule_lag_s is not None])
    statuses: dict[str, int] = {}
    for record in outcome.records:
        statuses[record.status.value] = statuses.get(record.status.value, 0) + 1
    return {
        "kind": kind,
        "requests": len(plan.requests),
        "lag_p50_ms": float(np.percentile(lags, 50)) * 1e3,
        "lag_p99_ms": float(np.percentile(lags, 99)) * 1e3,
        "lag_max_ms": float(lags.max()) * 1e3,
        "planned_vs_trace_max_ms": planned_error_ms,
        "statuses": statuses,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=50.0)
    parser.add_argument("--duration", type=float, default=10.0)
    parser.add_argument("--burstiness", type=float, default=0.5, help="gamma shape; 1 = Poisson")
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--client-cpus", default="0", help="comma list; '' = no pinning")
    parser.add_argument("--server-cpu", default="1", help="'' = no pinning")
    parser.add_argument("--port", type=int, default=8998)
    parser.add_argument("--json", type=Path, default=None, help="write the rows here")
    args = parser.parse_args()
    server = start_server(
        args.port, int(args.server_cpu) if args.server_cpu else None, ttft_ms=5.0, gap_ms=5.0
    )
    if args.client_cpus:
        os.sched_setaffinity(0, {int(cpu) for cpu in args.client_cpus.split(",")})
    url = f"http://127.0.0.1:{args.port}"
    rows = []
    try:
        with tempfile.TemporaryDirectory() as folder:
            trace = Path(folder) / "trace.jsonl"
            write_trace(trace, args.rate, args.duration, args.burstiness, seed=1)
            replay = Workload(phases=(trace_phase(trace),), output_tokens=8, timeout_s=30.0)
            shapes = {"poisson": 1.0, "gamma": args.burstiness}
            rate_phases = {
                kind: Workload(
                    phases=(
                        Phase(kind, args.rate, args.duration, arrival="gamma", burstiness=shape),
                    ),
                    input_tokens=(8, 8),
                    output_tokens=8,
                    timeout_s=30.0,
                    seed=1,
                )
                for kind, shape in shapes.items()
            }
            # A discarded round of each first: cold connections are not the schedule's doing.
            lag_row("trace", replay, url, trace)
            for kind, workload in rate_phases.items():
                lag_row(kind, workload, url, None)
            for _ in range(args.rounds):
                rows.append(lag_row("trace", replay, url, trace))
                rows.extend(lag_row(kind, w, url, None) for kind, w in rate_phases.items())
                for row in rows[-3:]:
                    print(
                        f"{row['kind']:8s} n={row['requests']:5d}  lag p50"
                        f" {row['lag_p50_ms']:6.3f} p99 {row['lag_p99_ms']:6.3f}"
                        f" max {row['lag_max_ms']:7.3f} ms  planned-vs-trace"
                        f" {row['planned_vs_trace_max_ms']:.6f} ms  {row['statuses']}",
                        flush=True,
                    )
    finally:
        server.terminate()
        server.wait(timeout=10)
    for kind in ("trace", "gamma", "poisson"):
        p99s = [row["lag_p99_ms"] for row in rows if row["kind"] == kind]
        print(f"{kind:8s} p99 lag median {np.median(p99s):.3f} ms, worst {max(p99s):.3f} ms")
    worst = max(row["lag_p99_ms"] for row in rows if row["kind"] == "trace")
    verdict = "met" if worst <= LAG_TARGET_MS else "NOT met"
    print(f"trace replay worst p99 lag {worst:.3f} ms: target {LAG_TARGET_MS} ms {verdict}")
    if args.json:
        args.json.write_text(json.dumps({"args": vars(args) | {"json": str(args.json)},
                                         "rows": rows}, indent=2))  # fmt: skip


if __name__ == "__main__":
    main()
