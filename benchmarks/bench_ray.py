"""Schedule lag and clock offsets of the Ray generator on a two-node cluster on this host.

Runs the seed lesson's spike (Poisson 5 req/s, then 25 req/s) against the embedded
server from two Ray actors, one per node of a ``ray.cluster_utils.Cluster`` (one CPU
each), and, with ``--local``, the same plan from this process for comparison. Prints per
run: statuses, schedule lag p50/p99/max and each worker's node, clock offset and
uncertainty; the pass line of issue 15 is p99 lag <= 5 ms.

Ray registers nodes on the machine's non-loopback address, so this refuses to run
outside a network namespace that has only loopback:

    unshare -n sh -c 'ip link set lo up && exec python benchmarks/bench_ray.py --repeat 3'

Only 127.0.0.1; every run is bounded by its plan and the per-request timeout.
"""

from __future__ import annotations

import argparse
import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

from pytest_latency.driver import DriveResult, Target, ray_workers, run_plan
from pytest_latency.driver.ray_workers import run_ray_workers
from pytest_latency.sim.config import DEFAULT_MODEL
from pytest_latency.spec.model import Phase, Workload
from pytest_latency.workload import build_plan

LAG_LIMIT_S = 0.005


def only_loopback() -> bool:
    return [name for _, name in socket.if_nameindex()] == ["lo"]


def start_server() -> tuple[subprocess.Popen[str], str]:
    command = [sys.executable, "-m", "pytest_latency.sim", "--host", "127.0.0.1", "--port", "0"]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None
    found = re.search(r"listening on (\S+)", server.stdout.readline())
    if not found:
        server.kill()
        raise RuntimeError("the embedded server did not start")
    return server, found.group(1)


def spike(steady_s: float, burst_s: float, seed: int) -> Workload:
    return Workload(
        phases=(
            Phase(name="steady", arrival="poisson", rate=5, duration_s=steady_s),
            Phase(name="burst", arrival="poisson", rate=25, duration_s=burst_s),
        ),
        seed=seed,
        input_tokens=(200, 400),
        output_tokens=32,
        timeout_s=30.0,
    )


def row(kind: str, result: DriveResult, wall_s: float) -> dict[str, Any]:
    lags = np.array([r.schedule_lag_s for r in result.records if r.schedule_lag_s is not None])
    statuses: dict[str, int] = {}
    for record in result.records:
        statuses[record.status.value] = statuses.get(record.status.value, 0) + 1
    return {
        "kind": kind,
        "records": len(result.records),
        "statuses": statuses,
        "lag_p50_ms": float(np.percentile(lags, 50)) * 1e3,
        "lag_p99_ms": float(np.percentile(lags, 99)) * 1e3,
        "lag_max_ms": float(lags.max()) * 1e3,
        "wall_s": wall_s,
        "workers": [worker.to_json() for worker in result.workers],
    }


def show(entry: dict[str, Any]) -> None:
    held = "HELD" if entry["lag_p99_ms"] <= LAG_LIMIT_S * 1e3 else "over 5 ms"
    print(
        f"{entry['kind']:9}  {entry['records']} records {entry['statuses']}  lag p50"
        f" {entry['lag_p50_ms']:.2f} p99 {entry['lag_p99_ms']:.2f} max"
        f" {entry['lag_max_ms']:.2f} ms  ({held})  wall {entry['wall_s']:.1f}s",
        flush=True,
    )
    for worker in entry["workers"]:
        print(
            f"       {worker['worker']} node {worker['node'][:12]}  offset"
            f" {worker['clock_offset_s'] * 1e6:+.1f} us"
            f" +- {worker['clock_uncertainty_s'] * 1e6:.1f} us"
            f"  {worker['requests']} requests, {worker['lost']} lost",
            flush=True,
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steady-s", type=float, default=20.0)
    parser.add_argument("--burst-s", type=float, default=10.0)
    parser.add_argument("--repeat", type=int, default=1, help="runs (seeds 7, 8, ...)")
    parser.add_argument("--local", action="store_true", help="also drive each plan in-process")
    parser.add_argument(
        "--collect-intervals",
        default="1",
        help="comma list of seconds between record collections; one Ray run per value",
    )
    parser.add_argument("--json", type=Path, default=None, help="write the rows here")
    args = parser.parse_args()
    if not only_loopback():
        parser.error("run inside a loopback-only namespace: unshare -n, ip link set lo up")
    import ray
    from ray.cluster_utils import Cluster

    cluster = Cluster(
        initialize_head=True, head_node_args={"num_cpus": 1, "include_dashboard": False}
    )
    server = None
    rows = []
    try:
        cluster.add_node(num_cpus=1)
        cluster.wait_for_nodes()
        ray.init(address=cluster.address, log_to_driver=False)
        server, url = start_server()
        target = Target(url, model=DEFAULT_MODEL)
        for index in range(args.repeat):
            plan = build_plan(spike(args.steady_s, args.burst_s, seed=7 + index))
            intervals = [float(value) for value in args.collect_intervals.split(",")]
            kinds = [f"ray@{value:g}s" for value in intervals] + (["local"] if args.local else [])
            for kind in kinds:
                started = time.monotonic()
                if kind.startswith("ray"):
                    ray_workers.COLLECT_INTERVAL_S = float(kind[4:-1])
                    result = run_ray_workers(plan, target, "auto", workers=2)
                else:
                    result = run_plan(plan, target)
                rows.append(row(kind, result, time.monotonic() - started))
                show(rows[-1])
    finally:
        if server is not None:
            server.terminate()
            server.wait(timeout=10)
        ray.shutdown()
        cluster.shutdown()
    if args.json:
        args.json.write_text(
            json.dumps({"args": vars(args) | {"json": str(args.json)}, "rows": rows}, indent=2)
        )


if __name__ == "__main__":
    main()
