"""Side by side with guidellm: same fast server, same core budget, same rates, one table.

guidellm is never a dependency and never imported: it runs as a subprocess from its own
venv (``--guidellm``). guidellm >= 0.4 requires torch, and PyPI's Linux torch pulls the
CUDA stack (~6 GB), so this uses 0.3.1, the last release without torch::

    python3 -m venv .bench-venv-guidellm
    .bench-venv-guidellm/bin/pip install guidellm==0.3.1
    .venv/bin/python benchmarks/compare_guidellm.py --processor .bench-tokenizer-bpe

``--processor`` is a local Hugging Face tokenizer folder (no hub access is needed or
made: HF_HUB_OFFLINE=1). Per rate, our side runs ``bench_load.py`` (its own server and
pinning) and guidellm runs against a ``fast_server.py`` pinned to ``--server-cpu``,
itself pinned to ``--client-cpus`` with ``taskset``, streaming chat completions
(``GUIDELLM__PREFERRED_ROUTE=chat_completions``; the server speaks chat chunks only).
True TTFT is ``--ttft-ms`` after the request arrives; true ITL is ``--gap-ms``.

From guidellm's per-request JSON records: offered rate = requests it started /
duration, schedule lag = ``request_start - targeted_start_time`` (its own timestamps),
TTFT p50/p99 over its successful requests, and ITL p50/p99 over its per-request ITL
(guidellm's ITL is one mean per request; ours is every gap). What guidellm itself prints
is kept in ``--json`` (``*_reported_*``). Row "guidellm steady" drops its initial burst
(see ``guidellm_rate``). Only 127.0.0.1; every run is bounded by ``--duration`` and a
wall-clock timeout.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import numpy as np
from bench_load import start_server

# The peer tools live in folders beside the checkout (see docs/performance.md).
ROOT = Path(__file__).resolve().parent.parent

HERE = Path(__file__).resolve().parent
RUN_TIMEOUT_S = 300
OFFLINE = {"HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1", "HF_DATASETS_OFFLINE": "1"}


def percentile_ms(values: list[float], q: float) -> float | None:
    return float(np.percentile(values, q)) * 1e3 if values else None


def guidellm_rate(args: argparse.Namespace, rate: float) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "benchmarks.json"
        command = ["taskset", "-c", args.client_cpus, args.guidellm, "benchmark"]
        command += ["--target", f"http://127.0.0.1:{args.port}", "--model", "bench"]
        command += ["--processor", args.processor, "--random-seed", "1"]
        command += ["--data", f"prompt_tokens=8,output_tokens={args.tokens}"]
        command += ["--rate-type", args.arrival, "--rate", str(rate)]
        command += ["--max-seconds", str(args.duration), "--output-path", str(output)]
        command += ["--disable-progress", "--disable-console-outputs", *args.extra]
        env = os.environ | OFFLINE | {"GUIDELLM__PREFERRED_ROUTE": "chat_completions"}
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=env, cwd=folder
        )
        if done.returncode != 0 or not output.exists():
            return [
                {"tool": "guidellm", "rate": rate, "error": (done.stderr or done.stdout)[-2000:]}
            ]
        benchmark = json.loads(output.read_text())["benchmarks"][0]
    requests = benchmark["requests"]
    every = [(kind, r) for kind in ("successful", "incomplete", "errored") for r in requests[kind]]
    first = min(r["scheduler_info"]["targeted_start_time"] for _, r in every)
    metrics = benchmark["metrics"]

    def reported(name: str, q: str) -> float | None:
        value = metrics[name]["successful"]["percentiles"].get(q)
        return float(value) if value is not None else None

    # guidellm 0.3.1 always starts with a burst of floor(rate) requests at its time zero
    # (AsyncConstantStrategy/AsyncPoissonStrategy test `initial_burst is not None`, so
    # even False bursts): "steady" recomputes its per-request numbers without them.
    steady = [(k, r) for k, r in every if r["scheduler_info"]["targeted_start_time"] > first]
    rows = []
    for label, chosen in (("guidellm", every), ("guidellm steady", steady)):
        info = [r["scheduler_info"] for _, r in chosen]
        lags = [
            i["request_start"] - i["targeted_start_time"] for i in info if i.get("request_start")
        ]
        ok = [r for k, r in chosen if k == "successful"]
        ttft = [r["time_to_first_token_ms"] / 1e3 for r in ok if r.get("time_to_first_token_ms")]
        itl = [r["inter_token_latency_ms"] / 1e3 for r in ok if r.get("inter_token_latency_ms")]
        row = {
            "tool": label,
            "rate": rate,
            "offered_rate": len(lags) / args.duration,
            "ok": len(ok),
            "incomplete": sum(1 for k, _ in chosen if k == "incomplete"),
            "errored": sum(1 for k, _ in chosen if k == "errored"),
            "lag_p50_ms": percentile_ms(lags, 50),
            "lag_p99_ms": percentile_ms(lags, 99),
            "ttft_p50_ms": percentile_ms(ttft, 50),
            "ttft_p99_ms": percentile_ms(ttft, 99),
            "itl_p50_ms": percentile_ms(itl, 50),
            "itl_p99_ms": percentile_ms(itl, 99),
        }
        if label == "guidellm":  # what guidellm itself prints, for the record
            for key, name in (
                ("ttft", "time_to_first_token_ms"),
                ("itl", "inter_token_latency_ms"),
            ):
                row[f"{key}_reported_p50_ms"] = reported(name, "p50")
                row[f"{key}_reported_p99_ms"] = reported(name, "p99")
        rows.append(row)
    return rows


def ours(args: argparse.Namespace) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "ours.json"
        command = [sys.executable, str(HERE / "bench_load.py"), "--rates", args.rates]
        command += ["--duration", str(args.duration), "--tokens", str(args.tokens)]
        command += ["--ttft-ms", str(args.ttft_ms), "--gap-ms", str(args.gap_ms)]
        command += ["--arrival", args.arrival, "--client-cpus", args.client_cpus]
        command += ["--server-cpu", str(args.server_cpu), "--port", str(args.port + 1)]
        command += ["--json", str(output)]
        done = subprocess.run(command, timeout=RUN_TIMEOUT_S * 4, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"bench_load.py failed: {done.stderr[-2000:]}")
        rows = json.loads(output.read_text())["rows"]
    return [
        {
            "tool": "pytest-latency",
            "rate": row["target_rate"],
            "offered_rate": row["offered_rate"],
            "ok": row["statuses"].get("ok", 0),
            "incomplete": 0,
            "errored": row["requests"] - row["statuses"].get("ok", 0),
            **{key: row[key] for key in ("lag_p50_ms", "lag_p99_ms", "ttft_p50_ms")},
            **{key: row[key] for key in ("ttft_p99_ms", "itl_p50_ms", "itl_p99_ms")},
        }
        for row in rows
    ]


def show(rows: list[dict[str, Any]], args: argparse.Namespace) -> None:
    def fmt(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    print(
        f"truth: TTFT {args.ttft_ms} ms after arrival, ITL {args.gap_ms} ms; "
        f"{args.arrival} arrivals, {args.duration:g} s per rate"
    )
    print(
        "| tool | target req/s | offered req/s | ok / incomplete / err | lag p50 / p99 ms"
        " | TTFT p50 / p99 ms | ITL p50 / p99 ms |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|")
    for row in sorted(rows, key=lambda r: (r["rate"], r["tool"] != "pytest-latency", r["tool"])):
        if "error" in row:
            print(f"| {row['tool']} | {row['rate']:g} | error: {row['error'][-300:]!r} |")
            continue
        print(
            f"| {row['tool']} | {row['rate']:g} | {row['offered_rate']:.1f}"
            f" | {row['ok']} / {row['incomplete']} / {row['errored']}"
            f" | {fmt(row['lag_p50_ms'])} / {fmt(row['lag_p99_ms'])}"
            f" | {fmt(row['ttft_p50_ms'])} / {fmt(row['ttft_p99_ms'])}"
            f" | {fmt(row['itl_p50_ms'])} / {fmt(row['itl_p99_ms'])} |"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--guidellm", default=str(ROOT / ".bench-venv-guidellm" / "bin" / "guidellm")
    )
    parser.add_argument(
        "--processor", default=str(ROOT / ".bench-tokenizer-bpe"), help="local folder"
    )
    parser.add_argument("--rates", default="50,100,200")
    parser.add_argument("--duration", type=float, default=10.0, help="seconds per rate")
    parser.add_argument("--arrival", default="constant", choices=("constant", "poisson"))
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--ttft-ms", type=float, default=5.0)
    parser.add_argument("--gap-ms", type=float, default=5.0)
    parser.add_argument("--client-cpus", default="0")
    parser.add_argument("--server-cpu", type=int, default=1)
    parser.add_argument("--port", type=int, default=8996, help="ours uses port + 1")
    parser.add_argument("--skip-ours", action="store_true")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("extra", nargs="*", help="more guidellm arguments (after --)")
    args = parser.parse_args()
    rows = [] if args.skip_ours else ours(args)
    server = start_server(args.port, args.server_cpu, args.ttft_ms, args.gap_ms)
    try:
        for rate in (float(r) for r in args.rates.split(",")):
            for row in guidellm_rate(args, rate):
                rows.append(row)
                print(json.dumps(row), flush=True)
    finally:
        server.terminate()
        server.wait(timeout=10)
    show(rows, args)
    if args.json:
        args.json.write_text(
            json.dumps({"args": vars(args) | {"json": str(args.json)}, "rows": rows}, indent=2)
        )


if __name__ == "__main__":
    main()
