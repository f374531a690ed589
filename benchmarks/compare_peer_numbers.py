"""AIPerf's own numbers beside ``pytest-latency compare --as aiperf`` on the same server.

One ``fast_server.py`` (true TTFT ``--ttft-ms`` after arrival, a token every
``--gap-ms``), driven twice at the same constant rate: by AIPerf (its own venv, a
subprocess, as in ``compare_aiperf.py``, whose offline tokenizer it reuses) and by our
driver. AIPerf's statistics come from its JSON export; ours from our records through
:func:`pytest_latency.analysis.peers.aiperf_statistics`, AIPerf's definitions. Equal
definitions give equal numbers up to the two clients' own overheads::

    python3 -m venv .bench-venv && .bench-venv/bin/pip install aiperf
    cd benchmarks && ../.venv/bin/python compare_peer_numbers.py --aiperf ../.bench-venv/bin/aiperf

Only 127.0.0.1; each run is bounded by its request count and a timeout.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from bench_load import start_server
from compare_aiperf import REPO_ID, prepare_tokenizer

from pytest_latency.analysis.peers import aiperf_statistics
from pytest_latency.driver import Target, run_plan
from pytest_latency.spec.model import Phase, Workload
from pytest_latency.workload import build_plan

RUN_TIMEOUT_S = 600
# AIPerf export key -> its display name (also our statistic's name, in the same unit)
ROWS = {
    "time_to_first_token": "Time to First Token",
    "request_latency": "Request Latency",
    "inter_token_latency": "Inter Token Latency",
    "inter_chunk_latency": "Inter Chunk Latency",
    "output_token_throughput_per_user": "Output Token Throughput Per User",
}
STATISTICS = ("avg", "p50", "p90", "p99")


def run_aiperf(args: argparse.Namespace) -> dict[str, Any]:
    command = [args.aiperf, "profile", "--model", "bench"]
    command += ["--url", f"http://127.0.0.1:{args.port}", "--endpoint-type", "chat"]
    command += ["--streaming", "--tokenizer", REPO_ID, "--request-rate", str(args.rate)]
    command += ["--arrival-pattern", "constant", "--request-count", str(args.requests)]
    command += ["--synthetic-input-tokens-mean", "8", "--output-tokens-mean", str(args.tokens)]
    command += ["--ui-type", "none", "--random-seed", "1", "--no-server-metrics"]
    env = os.environ | {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(args.cache)}
    with tempfile.TemporaryDirectory() as folder:
        command += ["--artifact-dir", folder]
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=env
        )
        path = Path(folder) / "profile_export_aiperf.json"
        if done.returncode != 0 or not path.exists():
            raise RuntimeError(f"aiperf failed: {(done.stderr or done.stdout)[-2000:]}")
        summary: dict[str, Any] = json.loads(path.read_text())
    return summary


def run_ours(args: argparse.Namespace) -> dict[str, dict[str, float]]:
    workload = Workload(
        phases=(
            Phase("load", rate=args.rate, duration_s=args.requests / args.rate, arrival="constant"),
        ),
        input_tokens=(8, 8),
        output_tokens=args.tokens,
    )
    records = run_plan(
        build_plan(workload), Target(f"http://127.0.0.1:{args.port}", model="bench")
    ).records
    return {s.name: s.values for s in aiperf_statistics(records)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--aiperf", default="../.bench-venv/bin/aiperf")
    parser.add_argument("--rate", type=float, default=20.0)
    parser.add_argument("--requests", type=int, default=200)
    # 64: fast_server's own default, which it streams to AIPerf (whose chat requests
    # set max_completion_tokens, a key the server does not read).
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--ttft-ms", type=float, default=20.0)
    parser.add_argument("--gap-ms", type=float, default=10.0)
    parser.add_argument("--port", type=int, default=8993)
    parser.add_argument("--hf-cache", type=Path, default=Path("../.bench-hf-cache"))
    args = parser.parse_args()
    args.aiperf = str(Path(args.aiperf).absolute())
    args.cache = prepare_tokenizer(Path(args.aiperf), args.hf_cache.resolve())
    print(f"load before: {os.getloadavg()}", flush=True)
    server = start_server(args.port, None, args.ttft_ms, args.gap_ms)
    try:
        theirs = run_aiperf(args)
        ours = run_ours(args)
    finally:
        server.terminate()
        server.wait(timeout=10)
    print(f"load after: {os.getloadavg()}", flush=True)
    print("| metric (AIPerf's name) | statistic | AIPerf | pytest-latency --as aiperf |")
    print("|---|---|---:|---:|")
    for key, name in ROWS.items():
        for statistic in STATISTICS:
            value = (theirs.get(key) or {}).get(statistic)
            mine = ours.get(name, {}).get(statistic, math.nan)
            shown = "-" if value is None else f"{float(value):.2f}"
            print(f"| {name} | {statistic} | {shown} | {mine:.2f} |")
    for key, name in (("request_throughput", "Request Throughput"),):
        value = (theirs.get(key) or {}).get("avg")
        shown = "-" if value is None else f"{float(value):.2f}"
        print(f"| {name} | | {shown} | {ours.get(name, {}).get('', math.nan):.2f} |")


if __name__ == "__main__":
    main()
