"""How long ``pytest-latency judge`` takes on a large ``--latency-json`` file.

Generates ``--runs`` runs of ``--requests`` requests each (seeded: Poisson send times,
lognormal TTFT and inter-token gaps, ``--gaps`` gaps per request, 0.5% http errors,
server-reported queue wait and prefill, full-precision floats as the plugin writes them)
through :func:`pytest_latency.records.record_to_dict` into a temporary folder, then
times one ``python -m pytest_latency judge`` subprocess on it with three objectives
(ttft p95, itl p50, error_rate). ``--breakdown`` also times, in this process, the JSON
parse alone, the whole :func:`read_runs` and the decisions, to show where time goes.

    .venv/bin/python benchmarks/bench_judge.py              # 150 runs x 2,000 requests
    .venv/bin/python benchmarks/bench_judge.py --breakdown
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import numpy as np

from pytest_latency.records import RequestRecord, Status, read_runs, record_to_dict, write_runs

OBJECTIVES = """\
objectives:
  - {metric: ttft, p: 95, max: 700ms, phase: steady}
  - {metric: itl, p: 50, max: 40ms}
  - {metric: error_rate, max: 2%}
"""
SERVER = {"kind": "url", "url": "http://127.0.0.1:8000", "model": "tiny", "api": "chat"}
STEADY_SHARE = 0.75  # of a run's requests; the rest are the burst


def workload(requests: int) -> dict[str, Any]:
    steady = round(requests * STEADY_SHARE)
    return {
        "seed": 7, "input_tokens": [200, 400], "output_tokens": 200, "timeout_s": 30.0,
        "warmup": 0, "ignore_eos": True, "repeat": 1, "cooldown_s": 0.0,
        "phases": [
            {"name": "steady", "arrival": "poisson", "rate": 20.0,
             "duration_s": steady / 20.0, "burstiness": 1.0},
            {"name": "burst", "arrival": "poisson", "rate": 100.0,
             "duration_s": (requests - steady) / 100.0, "burstiness": 1.0},
        ],
    }  # fmt: skip


def make_records(rng: np.random.Generator, requests: int, gaps: int) -> list[RequestRecord]:
    steady = round(requests * STEADY_SHARE)
    intended = np.concatenate(
        [
            np.cumsum(rng.exponential(1 / 20.0, steady)),
            steady / 20.0 + np.cumsum(rng.exponential(1 / 100.0, requests - steady)),
        ]
    )
    ttft = rng.lognormal(np.log(0.25), 0.5, requests)
    itl = rng.lognormal(np.log(0.02), 0.3, (requests, gaps))
    lag = rng.exponential(0.0005, requests)
    failed = rng.random(requests) < 0.005
    records = []
    for index in range(requests):
        record = RequestRecord(
            id=index,
            phase="steady" if index < steady else "burst",
            intended_s=float(intended[index]),
            input_tokens=int(rng.integers(200, 401)),
            max_tokens=200,
            trace_id=f"{rng.integers(1 << 62):032x}",
            sent_s=float(intended[index] + lag[index]),
        )
        if failed[index]:
            record.status, record.http_status = Status.HTTP_ERROR, 500
            record.error = "HTTP 500: internal error"
            record.end_s = float(intended[index] + lag[index] + 0.01)
        else:
            record.status, record.http_status = Status.OK, 200
            record.first_token_s = float(intended[index] + ttft[index])
            record.itl_s = itl[index]
            record.end_s = record.first_token_s + float(itl[index].sum())
            record.output_tokens, record.output_tokens_source = gaps + 1, "usage"
            record.queue_wait_s = float(ttft[index] * 0.4)
            record.prefill_s = float(ttft[index] * 0.3)
            record.server_source = "server-timing"
        records.append(record)
    return records


def make_run_file(path: Path, runs: int, requests: int, gaps: int) -> None:
    rng = np.random.default_rng(20261201)
    documents = []
    for number in range(runs):
        records = make_records(rng, requests, gaps)
        documents.append(
            {
                "test": f"tests/test_serving.py::test_load[{number}]",
                "server": SERVER,
                "workload": workload(requests),
                "interrupted": False,
                "generator": {"valid": True, "reasons": []},
                "phases": [],
                "objectives": [],
                "requests": [record_to_dict(record) for record in records],
            }
        )
    write_runs(path, documents)


def time_judge(run_file: Path, objectives: Path) -> tuple[float, float, float, int]:
    """Wall and CPU seconds and peak RSS (MiB) of one judge subprocess, and its exit code.

    CPU seconds (user + system, from the children's rusage) are the number to read on a
    shared machine: the judge is single-threaded, so they are what one core spends.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    completed = subprocess.run(
        [sys.executable, "-m", "pytest_latency", "judge", str(run_file),
         "--objectives", str(objectives), "--json", str(run_file.with_name("out.json"))],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    elapsed = time.perf_counter() - started
    if completed.returncode not in (0, 1):
        raise SystemExit(f"judge failed ({completed.returncode}): {completed.stderr}")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return elapsed, cpu_s, after.ru_maxrss / 1024, completed.returncode


def breakdown(run_file: Path, objectives: Path) -> None:
    from pytest_latency.cli.judge import judge_runs
    from pytest_latency.spec.slo_yaml import load_objectives

    # CPU seconds of this single-threaded process: the machine may be shared.
    started = time.process_time()
    json.loads(run_file.read_text(encoding="utf-8"))
    parsed = time.process_time()
    runs = read_runs(run_file)
    read = time.process_time()
    judge_runs(runs, load_objectives(objectives))
    decided = time.process_time()
    print(f"  json.loads alone        {parsed - started:6.1f} CPU-s")
    print(f"  read_runs (parse+check) {read - parsed:6.1f} CPU-s")
    print(f"  decide 3 objectives     {decided - read:6.1f} CPU-s")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=150)
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--gaps", type=int, default=64)
    parser.add_argument("--breakdown", action="store_true")
    arguments = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        run_file, objectives = Path(folder) / "runs.json", Path(folder) / "objectives.yaml"
        objectives.write_text(OBJECTIVES)
        started = time.perf_counter()
        make_run_file(run_file, arguments.runs, arguments.requests, arguments.gaps)
        size_mib = run_file.stat().st_size / 2**20
        print(
            f"generated {arguments.runs} runs x {arguments.requests} requests"
            f" x {arguments.gaps} gaps: {size_mib:.0f} MiB in {time.perf_counter() - started:.0f} s"
        )
        elapsed, cpu_s, peak_mib, code = time_judge(run_file, objectives)
        print(
            f"judge: {cpu_s:.1f} CPU-s, {elapsed:.1f} s wall,"
            f" peak RSS {peak_mib:.0f} MiB, exit {code}"
        )
        if arguments.breakdown:
            breakdown(run_file, objectives)


if __name__ == "__main__":
    main()
