"""Stalls at low load: schedule lag when another thread of the client process is busy.

The driving loop shares the GIL with the plugin's other threads (the OTLP receiver
decoding span batches, the Prometheus scraper parsing ``/metrics``, the progress
poller). A thread that is busy in Python keeps the GIL for up to
``sys.getswitchinterval()`` (5 ms by default) before the loop's thread gets it back, so
a send due meanwhile goes out late. This drives ``--rate`` req/s (low load) against
``fast_server.py`` while a background thread burns CPU in bursts (``--burst-ms`` every
``--every-ms``), with the driver's switch interval and with Python's default,
alternated, and prints schedule-lag and loop-lag percentiles for each.

    python benchmarks/bench_stalls.py --rate 20 --duration 5 --rounds 2
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import threading
import time
from pathlib import Path
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_load import start_server

from pytest_latency.driver import Run, Target
from pytest_latency.driver import loop as driver_loop
from pytest_latency.spec.model import Phase, Workload
from pytest_latency.workload import build_plan

PAYLOAD = json.dumps({"spans": [{"name": "x" * 20, "attributes": list(range(50))}] * 200})


def busy_thread(stop: threading.Event, burst_s: float, every_s: float) -> None:
    """Pure-Python work in bursts, as span decoding or a /metrics parse would be."""
    while not stop.wait(every_s):
        end = time.perf_counter() + burst_s
        while time.perf_counter() < end:
            json.loads(PAYLOAD)


def one(args: argparse.Namespace, url: str, switch_s: float) -> dict[str, float]:
    workload = Workload(
        phases=(Phase("low", rate=args.rate, duration_s=args.duration, arrival="constant"),),
        input_tokens=(8, 8),
        output_tokens=16,
        timeout_s=30.0,
        seed=1,
    )
    run = Run(build_plan(workload), Target(url, model="bench"))
    stop = threading.Event()
    worker = threading.Thread(
        target=busy_thread, args=(stop, args.burst_ms / 1e3, args.every_ms / 1e3), daemon=True
    )
    worker.start()
    try:
        with mock.patch.object(driver_loop, "DRIVE_SWITCH_INTERVAL_S", switch_s):
            driver_loop.drive_to_end(run)
    finally:
        stop.set()
        worker.join()
    lags = np.asarray([r.schedule_lag_s for r in run.records if r.schedule_lag_s is not None])
    load = run.result().client
    return {
        "lag_p99_ms": float(np.percentile(lags, 99)) * 1e3,
        "lag_max_ms": float(lags.max()) * 1e3,
        "loop_lag_p99_ms": (load.loop_lag_p99_s or 0.0) * 1e3 if load else float("nan"),
        "loop_lag_max_ms": (load.loop_lag_max_s or 0.0) * 1e3 if load else float("nan"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--burst-ms", type=float, default=20.0)
    parser.add_argument("--every-ms", type=float, default=50.0)
    parser.add_argument("--port", type=int, default=8996)
    args = parser.parse_args()
    server = start_server(args.port, 1, 5.0, 5.0)
    os.sched_setaffinity(0, {0})
    url = f"http://127.0.0.1:{args.port}"
    try:
        for round_ in range(args.rounds):
            for name, switch_s in (("default 5 ms", 0.005), ("driver's", None)):
                value = driver_loop.DRIVE_SWITCH_INTERVAL_S if switch_s is None else switch_s
                row = one(args, url, value)
                print(
                    f"round {round_ + 1} switch interval {name:>12} ({value * 1e3:.2f} ms): "
                    + "  ".join(f"{key} {val:7.2f}" for key, val in row.items()),
                    flush=True,
                )
    finally:
        server.terminate()
        server.wait(timeout=10)


if __name__ == "__main__":
    main()
