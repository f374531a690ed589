"""How large a saved baseline and a ``--latency-json`` file are for one 10,000-request run.

Builds one run of ``--requests`` requests (default 10,000, Poisson at 20/s, outputs of
``--output-tokens`` tokens) by playing the plan through the embedded server's engine in
virtual time (no sockets, a few seconds), then writes it the way the plugin does:
``--latency-save-baseline`` (:func:`save_baseline`) and ``--latency-json``
(:func:`write_json`), and prints their sizes (and a gzipped baseline's).

    .venv/bin/python benchmarks/bench_baseline_size.py
    .venv/bin/python benchmarks/bench_baseline_size.py --requests 2000 --output-tokens 64
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from pytest_latency.analysis.result import LatencyResult
from pytest_latency.records import RequestRecord, Status
from pytest_latency.report.json_report import save_baseline, write_json
from pytest_latency.servers.base import ServerInfo
from pytest_latency.sim import Arrival, SimConfig, simulate
from pytest_latency.spec.model import Phase, Workload
from pytest_latency.workload import build_plan

RATE = 20.0


def simulated_run(requests: int, output_tokens: int) -> LatencyResult:
    workload = Workload(
        phases=(Phase("steady", rate=RATE, duration_s=requests / RATE),),
        output_tokens=output_tokens,
        seed=7,
    )
    plan = build_plan(workload)
    arrivals = [Arrival(r.intended_s, r.input_tokens, r.output_tokens) for r in plan.requests]
    # A server with room for the load: the file size, not the queue, is measured here.
    config = SimConfig(replicas=4)
    records = []
    for request, result in zip(plan.requests, simulate(config, arrivals), strict=True):
        record = RequestRecord(request.id, request.phase, request.intended_s, request.input_tokens)
        record.max_tokens = request.output_tokens
        if result.ttft_s is not None and result.e2e_s is not None:
            record.status = Status.OK
            record.sent_s = request.intended_s
            record.first_token_s = request.intended_s + result.ttft_s
            record.end_s = request.intended_s + result.e2e_s
            record.itl_s = list(result.itl_s)
            record.output_tokens = request.output_tokens
            record.queue_wait_s = result.queue_wait_s
        records.append(record)
    return LatencyResult(
        test="tests/test_chat.py::test_steady",
        server=ServerInfo("sim", "http://127.0.0.1:1", "sim-tiny"),
        workload=workload,
        records=records,
        started_at_unix=0.0,
        elapsed_s=requests / RATE,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--output-tokens", type=int, default=200)
    arguments = parser.parse_args()
    started = time.perf_counter()
    run = simulated_run(arguments.requests, arguments.output_tokens)
    gaps = sum(len(record.itl_s) for record in run.records)
    print(
        f"simulated {len(run.records)} requests, {gaps} inter-token gaps"
        f" in {time.perf_counter() - started:.1f} s"
    )
    with tempfile.TemporaryDirectory() as folder:
        for name, file_name, write in (
            ("--latency-save-baseline", "base.json", lambda path: save_baseline(path, [run])),
            ("  ... named .json.gz", "base.json.gz", lambda path: save_baseline(path, [run])),
            ("--latency-json", "run.json", lambda path: write_json(path, [run])),
        ):
            path = Path(folder) / file_name
            started = time.perf_counter()
            write(path)
            took = time.perf_counter() - started
            size = path.stat().st_size
            print(
                f"{name:24} {size / 2**20:8.2f} MiB  ({size / len(run.records):.0f} B/request,"
                f" written in {took:.1f} s)"
            )


if __name__ == "__main__":
    main()
