"""Side by side with NVIDIA AIPerf: same fast server, same core budget, same rates.

AIPerf is never a dependency: install it in its own venv and point ``--aiperf`` at it::

    python3 -m venv .bench-venv && .bench-venv/bin/pip install aiperf
    .venv/bin/python benchmarks/compare_aiperf.py --aiperf .bench-venv/bin/aiperf

For each rate, starts ``fast_server.py`` pinned to ``--server-cpu`` (true TTFT =
``--ttft-ms`` after arrival, one chunk every ``--gap-ms``), runs AIPerf pinned to
``--client-cpus`` with ``taskset`` (streaming chat, ``--request-rate``, a local
tokenizer folder so nothing is downloaded), and reads TTFT/ITL p50/p99 and the achieved
request throughput from its JSON export. Run ``bench_load.py`` with the same settings
for our side. Only 127.0.0.1; every AIPerf run is bounded by ``--request-count`` and a
wall-clock timeout.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from bench_load import start_server

# The peer tools live in folders beside the checkout (see docs/performance.md).
ROOT = Path(__file__).resolve().parent.parent

RUN_TIMEOUT_S = 600


def find_export(folder: Path) -> dict[str, Any]:
    for path in sorted(folder.rglob("*aiperf*.json")):
        data = json.loads(path.read_text())
        if isinstance(data, dict) and ("time_to_first_token" in data or "records" in data):
            return data
    raise FileNotFoundError(f"no AIPerf JSON export under {folder}")


def metric(data: dict[str, Any], name: str, stat: str) -> float | None:
    block = data.get(name) or data.get("records", {}).get(name)
    if not isinstance(block, dict):
        return None
    value = block.get(stat)
    return float(value) if value is not None else None


def one_rate(args: argparse.Namespace, rate: float) -> dict[str, Any]:
    count = int(rate * args.duration)
    with tempfile.TemporaryDirectory() as folder:
        command = ["taskset", "-c", args.client_cpus, args.aiperf, "profile"]
        command += ["--model", "bench", "--url", f"http://127.0.0.1:{args.port}"]
        command += ["--endpoint-type", "chat", "--streaming", "--tokenizer", args.tokenizer]
        command += ["--request-rate", str(rate), "--request-count", str(count)]
        command += ["--synthetic-input-tokens-mean", "8", "--output-tokens-mean", str(args.tokens)]
        command += ["--ui-type", "none", "--artifact-dir", folder, "--random-seed", "1"]
        command += args.extra
        done = subprocess.run(command, capture_output=True, text=True, timeout=RUN_TIMEOUT_S)
        if done.returncode != 0:
            return {"rate": rate, "error": (done.stderr or done.stdout)[-2000:]}
        data = find_export(Path(folder))
    return {
        "rate": rate,
        "throughput_rps": metric(data, "request_throughput", "avg"),
        "ttft_p50_ms": metric(data, "time_to_first_token", "p50"),
        "ttft_p99_ms": metric(data, "time_to_first_token", "p99"),
        "itl_p50_ms": metric(data, "inter_token_latency", "p50"),
        "itl_p99_ms": metric(data, "inter_token_latency", "p99"),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--aiperf", default=str(ROOT / ".bench-venv" / "bin" / "aiperf"))
    parser.add_argument("--rates", default="25,50,100,200")
    parser.add_argument("--duration", type=float, default=10.0, help="requests = rate * this")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--ttft-ms", type=float, default=5.0)
    parser.add_argument("--gap-ms", type=float, default=5.0)
    parser.add_argument("--client-cpus", default="0")
    parser.add_argument("--server-cpu", type=int, default=1)
    parser.add_argument("--port", type=int, default=8998)
    parser.add_argument(
        "--tokenizer",
        default=str(ROOT / ".bench-tokenizer"),
        help="a local HF tokenizer folder (AIPerf's 'builtin' downloads tiktoken files)",
    )
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("extra", nargs="*", help="more AIPerf arguments (after --)")
    args = parser.parse_args()
    server = start_server(args.port, args.server_cpu, args.ttft_ms, args.gap_ms)
    rows = []
    try:
        for rate in (float(r) for r in args.rates.split(",")):
            rows.append(one_rate(args, rate))
            print(json.dumps(rows[-1]), flush=True)
    finally:
        server.terminate()
        server.wait(timeout=10)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
