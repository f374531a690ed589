"""Schedule lag, offered rate, TTFT error and client CPU at increasing streaming rates.

Starts ``fast_server.py`` in its own process pinned to ``--server-cpu``, pins this
(client) process to ``--client-cpus``, and for each rate offers ``--duration`` seconds
of streaming requests (``--tokens`` content chunks, ``--gap-ms`` apart) through the
real driver (:func:`pytest_latency.driver.run_plan`, ``workers=--workers``). Reports per
rate: schedule lag p50/p99, offered vs target rate, status counts, client CPU and
chunks parsed per client CPU second, and TTFT error = the client's first-token instant
minus the instant the server wrote it (both CLOCK_MONOTONIC, one machine). The highest
rate held (all ok, p99 lag <= 5 ms, offered >= 98% of target) is printed at the end.

``--loop uvloop`` drives on uvloop instead of asyncio's own loop (one worker only; needs
the ``uvloop`` extra; the plugin's ``PYTEST_LATENCY_LOOP=uvloop``).

Only 127.0.0.1; every run is bounded by its plan and the per-request timeout.

    python benchmarks/bench_load.py --rates 50,100,150,200 --duration 5
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import httpx
import numpy as np

from pytest_latency.driver import DriveResult, Run, Status, Target, pacing, run_plan
from pytest_latency.driver.loop import drive_to_end
from pytest_latency.spec.model import Phase, Workload
from pytest_latency.workload import build_plan

HERE = Path(__file__).resolve().parent
LAG_LIMIT_S = 0.005
READY_TIMEOUT_S = 10.0


def start_server(
    port: int, cpu: int | None, ttft_ms: float, gap_ms: float, script: Path | None = None
) -> subprocess.Popen[str]:
    script = script or HERE / "fast_server.py"
    command = [sys.executable, str(script), "--port", str(port)]
    command += ["--ttft-ms", str(ttft_ms), "--gap-ms", str(gap_ms), "--seconds", "3600"]
    if cpu is not None:
        command += ["--cpu", str(cpu)]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None
    deadline = time.monotonic() + READY_TIMEOUT_S
    while time.monotonic() < deadline:  # bounded wait for "listening"
        if "listening" in process.stdout.readline():
            return process
    process.kill()
    raise RuntimeError("benchmark server did not start")


def process_cpu_s(pid: int) -> float:
    """CPU seconds (user + system) of another process so far, from /proc (Linux)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_seconds() -> float:
    own = resource.getrusage(resource.RUSAGE_SELF)
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def percentile_ms(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) * 1e3 if values else None


def summarise(
    outcome: DriveResult, rate: float, duration: float, truth: dict[str, int], cpu: float
) -> dict[str, Any]:
    records = outcome.records
    lags = [r.schedule_lag_s for r in records if r.schedule_lag_s is not None]
    sent = sorted(r.sent_s for r in records if r.sent_s is not None)
    statuses: dict[str, int] = {}
    for record in records:
        statuses[record.status.value] = statuses.get(record.status.value, 0) + 1
    errors = [
        r.first_token_s - (truth[r.trace_id] - outcome.started_ns) / 1e9
        for r in records
        if r.first_token_s is not None and r.trace_id in truth
    ]
    ttfts = [r.ttft_s for r in records if r.ttft_s is not None]
    itls = [g for r in records if r.status is Status.OK for g in r.itl_s]
    chunks = sum(r.output_tokens or 0 for r in records)
    return {
        "target_rate": rate,
        "offered_rate": len(sent) / duration,
        "requests": len(records),
        "elapsed_s": outcome.elapsed_s,  # time zero to the last request's end
        "statuses": statuses,
        "lag_p50_ms": percentile_ms(lags, 50),
        "lag_p99_ms": percentile_ms(lags, 99),
        "lag_max_ms": max(lags) * 1e3 if lags else None,
        "ttft_p50_ms": percentile_ms(ttfts, 50),
        "ttft_p99_ms": percentile_ms(ttfts, 99),
        "itl_p50_ms": percentile_ms(itls, 50),
        "itl_p99_ms": percentile_ms(itls, 99),
        "ttft_error_p50_ms": percentile_ms(errors, 50),
        "ttft_error_p99_ms": percentile_ms(errors, 99),
        "client_cpu_s": cpu,
        "client_cpu_util": cpu / max(outcome.elapsed_s, 1e-9),
        "chunks_per_cpu_s": chunks / cpu if cpu > 0 else None,
    }


def held(row: dict[str, Any]) -> bool:
    lag = row["lag_p99_ms"]
    return (
        row["statuses"].get("ok", 0) == row["requests"]
        and lag is not None
        and lag <= LAG_LIMIT_S * 1e3
        and row["offered_rate"] >= 0.98 * row["target_rate"]
    )


def one_rate(args: argparse.Namespace, url: str, rate: float, server_pid: int) -> dict[str, Any]:
    workload = Workload(
        phases=(Phase("load", rate=rate, duration_s=args.duration, arrival=args.arrival),),
        input_tokens=(8, 8),
        output_tokens=args.tokens,
        timeout_s=30.0,
        seed=1,
    )
    plan = build_plan(workload)
    target = Target(url, model="bench")
    httpx.get(url + "/truth", timeout=5.0)  # clear the server's log
    before, server_before = cpu_seconds(), process_cpu_s(server_pid)
    if args.workers == 1:
        run = Run(plan, target)
        drive_to_end(run, use_uvloop=args.loop == "uvloop")
        outcome = run.result()
    else:
        outcome = run_plan(plan, target, workers=args.workers)
    cpu = cpu_seconds() - before
    server_cpu = process_cpu_s(server_pid) - server_before
    truth = httpx.get(url + "/truth", timeout=5.0).json()
    row = summarise(outcome, rate, args.duration, truth, cpu)
    # The server's core must not be the bottleneck: its CPU over the run's wall time.
    row["server_cpu_util"] = server_cpu / max(outcome.elapsed_s, 1e-9)
    chunks = sum(r.output_tokens or 0 for r in outcome.records)
    row["server_us_per_chunk"] = server_cpu / chunks * 1e6 if chunks else None
    load = outcome.client  # the driving thread's own measure (one worker)
    row["loop_lag_p99_ms"] = (
        None if load is None or load.loop_lag_p99_s is None else load.loop_lag_p99_s * 1e3
    )
    row["spin_share"] = None if load is None else load.spin_s / max(load.wall_s, 1e-9)
    return row


def show(row: dict[str, Any]) -> None:
    def fmt(value: float | None) -> str:
        return "   -" if value is None else f"{value:7.2f}"

    print(
        f"rate {row['target_rate']:6.0f}  offered {row['offered_rate']:7.1f}"
        f"  lag p50 {fmt(row['lag_p50_ms'])} p99 {fmt(row['lag_p99_ms'])} ms"
        f"  ttft-err p50 {fmt(row['ttft_error_p50_ms'])} p99 {fmt(row['ttft_error_p99_ms'])} ms"
        f"  cpu {row['client_cpu_util']:5.0%}  chunks/cpu-s {row['chunks_per_cpu_s'] or 0:8.0f}"
        f"  server cpu {row['server_cpu_util']:4.0%} {row['server_us_per_chunk'] or 0:.1f} us/chunk"
        f"  loop-lag p99 {fmt(row.get('loop_lag_p99_ms'))} ms"
        f" spin {row.get('spin_share') or 0:4.0%}"
        f"  {row['statuses']}{'  HELD' if held(row) else ''}",
        flush=True,
    )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="25,50,100,150,200,250,300")
    parser.add_argument("--duration", type=float, default=5.0, help="seconds per rate")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--gap-ms", type=float, default=5.0)
    parser.add_argument("--ttft-ms", type=float, default=5.0)
    parser.add_argument("--arrival", default="constant", choices=("constant", "poisson"))
    parser.add_argument("--workers", type=int, default=1)
    parser.add_argument(
        "--loop", default="asyncio", choices=("asyncio", "uvloop"), help="the loop (1 worker)"
    )
    parser.add_argument("--client-cpus", default="0", help="comma list; '' = no pinning")
    parser.add_argument("--server-cpu", default="1", help="'' = no pinning")
    parser.add_argument("--port", type=int, default=8999)
    parser.add_argument("--server-script", type=Path, default=None, help="another fast_server")
    parser.add_argument("--json", type=Path, default=None, help="write the rows here")
    parser.add_argument(
        "--spin-us",
        type=float,
        default=None,
        help="the launcher's last stretch before each send (driver/pacing.py SPIN_NS)",
    )
    args = parser.parse_args()
    if args.loop == "uvloop" and args.workers != 1:
        parser.error("--loop uvloop drives one worker")
    return args


def main() -> None:
    args = parse_args()
    if args.spin_us is not None:
        pacing.SPIN_NS = round(args.spin_us * 1e3)
    server_cpu = int(args.server_cpu) if args.server_cpu else None
    server = start_server(args.port, server_cpu, args.ttft_ms, args.gap_ms, args.server_script)
    if args.client_cpus:
        os.sched_setaffinity(0, {int(cpu) for cpu in args.client_cpus.split(",")})
    rows = []
    try:
        url = f"http://127.0.0.1:{args.port}"
        for rate in (float(r) for r in args.rates.split(",")):
            rows.append(one_rate(args, url, rate, server.pid))
            show(rows[-1])
    finally:
        server.terminate()
        server.wait(timeout=10)
    best = max((row["target_rate"] for row in rows if held(row)), default=None)
    setup = f"workers={args.workers}, {args.loop}"
    print(f"highest rate held at p99 lag <= 5 ms: {best} req/s ({setup})")
    if args.json:
        args.json.write_text(
            json.dumps(
                {"args": vars(args) | {"json": str(args.json)}, "rows": rows, "highest_held": best},
                indent=2,
            )
        )


if __name__ == "__main__":
    main()
