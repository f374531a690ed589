"""Where the client's CPU goes while it drives streaming load: cProfile of one run.

Starts ``fast_server.py`` (as ``bench_load.py`` does), drives ``--rate`` req/s of
``--tokens`` chunks for ``--duration`` seconds through the real driver under cProfile,
and prints the functions with the most own time, plus the client CPU per chunk. Only
127.0.0.1; bounded by the plan and its timeout.

    python benchmarks/profile_load.py --rate 300 --duration 4
"""

from __future__ import annotations

import argparse
import cProfile
import io
import os
import pstats
import resource
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_load import start_server

from pytest_latency.driver import DriveResult, Run, Target, run_plan
from pytest_latency.spec.model import Phase, Workload
from pytest_latency.workload import Plan, build_plan


def drive(plan: Plan, target: Target, loop: str) -> DriveResult:
    from pytest_latency.driver.loop import drive_to_end  # not in older checkouts

    run = Run(plan, target)
    drive_to_end(run, use_uvloop=loop == "uvloop")
    return run.result()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=300.0)
    parser.add_argument("--duration", type=float, default=4.0)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--port", type=int, default=8998)
    parser.add_argument("--top", type=int, default=30)
    parser.add_argument("--sort", default="tottime")
    parser.add_argument(
        "--loop",
        default="default",
        choices=("default", "asyncio", "uvloop"),
        help="default: run_plan's",
    )
    args = parser.parse_args()
    server = start_server(args.port, 1, 5.0, 5.0)
    os.sched_setaffinity(0, {0})
    workload = Workload(
        phases=(Phase("load", rate=args.rate, duration_s=args.duration, arrival="constant"),),
        input_tokens=(8, 8),
        output_tokens=args.tokens,
        timeout_s=30.0,
        seed=1,
    )
    plan = build_plan(workload)
    target = Target(f"http://127.0.0.1:{args.port}", model="bench")
    profile = cProfile.Profile()
    before = resource.getrusage(resource.RUSAGE_SELF)
    try:
        profile.enable()
        outcome = (
            run_plan(plan, target) if args.loop == "default" else drive(plan, target, args.loop)
        )
        profile.disable()
    finally:
        server.terminate()
        server.wait(timeout=10)
    after = resource.getrusage(resource.RUSAGE_SELF)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    chunks = sum(record.output_tokens or 0 for record in outcome.records)
    out = io.StringIO()
    pstats.Stats(profile, stream=out).sort_stats(args.sort).print_stats(args.top)
    print(out.getvalue())
    print(f"{chunks} chunks, {cpu:.2f} CPU-s under the profiler ({chunks / cpu:.0f} chunks/CPU-s)")


if __name__ == "__main__":
    main()
