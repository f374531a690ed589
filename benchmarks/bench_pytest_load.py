"""Streaming load through pytest itself: a ``*.slo.yaml`` run, pinned to one core.

``bench_load.py`` drives the driver directly; this runs what a user runs: ``pytest
X.slo.yaml --latency-json`` in a child process pinned to ``--client-cpu``, against
``fast_server.py`` pinned to ``--server-cpu`` (or the spec file you give, with the
server it names or the embedded one). Per run it reports, from the JSON: the schedule
lag p50/p99, the driving thread's loop lag p99, CPU and spin (``generator.client``);
and from the pytest process itself (a small plugin, :mod:`bench_pytest_cpu`, reads its
``getrusage`` from the first collected item to the session's end): the whole process's
CPU and chunks per CPU second, and the same for the drive alone (time zero to the last
response, from the driving thread). ``--profile`` writes a cProfile of the whole pytest
process and prints its top functions by own time.

Only 127.0.0.1; every run is bounded by its plan and the per-request timeout.

    python benchmarks/bench_pytest_load.py --rates 300,600 --duration 5
    python benchmarks/bench_pytest_load.py --spec trace_10rps.slo.yaml --server sim --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import pstats
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench_load import start_server

HERE = Path(__file__).resolve().parent
RUN_TIMEOUT_S = 600

SPEC = """\
server: {{url: "{url}", model: bench, api: chat}}
workload:
  seed: 1
  timeout: 30s
  input_tokens: 8
  output_tokens: {tokens}
  phases:
    - {{name: load, rate: {rate}, duration: {duration}s}}
objectives:
  - {{metric: ttft, p: 50, max: 10s, phase: load}}
"""


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * (len(ordered) - 1))))]


def run_pytest(spec: Path, args: argparse.Namespace, work: Path) -> dict[str, Any]:
    """One pytest run of ``spec``; the JSON's numbers and the process's CPU."""
    out, cpu_file, profile = work / "latency.json", work / "cpu.json", work / "pytest.prof"
    command = ["taskset", "-c", args.client_cpu] if args.client_cpu else []
    command += [sys.executable, "-m", "pytest", str(spec), "-q", "-p", "no:cacheprovider"]
    command += ["-p", "bench_pytest_cpu", "--latency-json", str(out)]
    if args.server:
        command += ["--latency-server", args.server]
    environment = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HERE), *sys.path]))
    environment["BENCH_PYTEST_CPU"] = str(cpu_file)
    if args.profile:
        environment["BENCH_PYTEST_PROFILE"] = str(profile)
    if args.spin_us is not None:
        environment["BENCH_PYTEST_SPIN_US"] = str(args.spin_us)
    done = subprocess.run(
        command, cwd=spec.parent, env=environment, capture_output=True, text=True,
        timeout=RUN_TIMEOUT_S, check=False,
    )  # fmt: skip
    if not out.exists():
        raise RuntimeError(f"pytest wrote no JSON:\n{done.stdout[-2000:]}\n{done.stderr[-2000:]}")
    (run,) = json.loads(out.read_text())["runs"]
    generator, requests = run["generator"], run["requests"]
    client = generator.get("client") or {}
    chunks = sum(r.get("output_tokens") or 0 for r in requests)
    lags = [r["sent_s"] - r["intended_s"] for r in requests if r.get("sent_s") is not None]
    process = json.loads(cpu_file.read_text())
    row = {
        "requests": len(requests),
        "ok": sum(r["status"] == "ok" for r in requests),
        "chunks": chunks,
        "lag_p50_ms": percentile(lags, 50) * 1e3,
        "lag_p99_ms": generator["schedule_lag_p99_s"] * 1e3,
        "loop_lag_p99_ms": (client.get("loop_lag_p99_s") or 0.0) * 1e3,
        "drive_cpu_s": client.get("cpu_s"),
        "drive_wall_s": client.get("wall_s"),
        "spin_s": client.get("spin_s"),
        "process_cpu_s": process["cpu_s"],
        "process_wall_s": process["wall_s"],
        # While driving: the whole process's CPU, and the driving thread's own.
        "during_drive_process_cpu_s": process["process_cpu_s"],
        "during_drive_thread_cpu_s": process["thread_cpu_s"],
        "valid": generator.get("valid"),
    }
    row["chunks_per_process_cpu_s"] = chunks / process["cpu_s"] if process["cpu_s"] else None
    drive_cpu = row["drive_cpu_s"]
    row["chunks_per_drive_cpu_s"] = chunks / drive_cpu if drive_cpu else None
    if args.profile:
        stats = pstats.Stats(str(profile))
        stats.sort_stats("tottime").print_stats(args.top)
    return row


def show(label: str, row: dict[str, Any]) -> None:
    print(
        f"{label}  lag p50 {row['lag_p50_ms']:6.2f} p99 {row['lag_p99_ms']:6.2f} ms"
        f"  loop-lag p99 {row['loop_lag_p99_ms']:6.2f} ms"
        f"  drive: cpu {row['drive_cpu_s'] or 0:5.2f} s (spin {row['spin_s'] or 0:4.2f})"
        f" {row['chunks_per_drive_cpu_s'] or 0:7.0f} chunks/cpu-s"
        f"  process: cpu {row['process_cpu_s']:5.2f} s"
        f" {row['chunks_per_process_cpu_s'] or 0:7.0f} chunks/cpu-s"
        f"  other threads while driving: cpu"
        f" {row['during_drive_process_cpu_s'] - row['during_drive_thread_cpu_s']:5.2f} s"
        f"  ok {row['ok']}/{row['requests']}{'' if row['valid'] else '  INVALID'}",
        flush=True,
    )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rates", default="300,600", help="req/s, one run each (no --spec)")
    parser.add_argument("--duration", type=float, default=5.0)
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--gap-ms", type=float, default=5.0)
    parser.add_argument("--ttft-ms", type=float, default=5.0)
    parser.add_argument("--spec", type=Path, default=None, help="run this spec file instead")
    parser.add_argument("--server", default=None, help="--latency-server for --spec")
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--client-cpu", default="0", help="'' = no pinning")
    parser.add_argument("--server-cpu", default="1", help="'' = no pinning")
    parser.add_argument("--port", type=int, default=8998)
    parser.add_argument("--profile", action="store_true", help="cProfile the pytest process")
    parser.add_argument("--top", type=int, default=25)
    parser.add_argument("--spin-us", type=float, default=None, help="override pacing.SPIN_NS")
    parser.add_argument("--json", type=Path, default=None, help="write the rows here")
    return parser.parse_args()


def main() -> None:
    args = parse_args()
    rows: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="bench-pytest-") as folder:
        work = Path(folder)
        if args.spec is not None:
            for round_ in range(args.rounds):
                rows.append(run_pytest(args.spec.resolve(), args, work))
                show(f"{args.spec.name} round {round_ + 1}", rows[-1])
        else:
            cpu = int(args.server_cpu) if args.server_cpu else None
            server = start_server(args.port, cpu, args.ttft_ms, args.gap_ms)
            try:
                for _ in range(args.rounds):
                    for rate in (float(r) for r in args.rates.split(",")):
                        spec = work / "load.slo.yaml"
                        url = f"http://127.0.0.1:{args.port}"
                        text = SPEC.format(
                            url=url, tokens=args.tokens, rate=rate, duration=args.duration
                        )
                        spec.write_text(text)
                        rows.append({"rate": rate, **run_pytest(spec, args, work)})
                        show(f"rate {rate:6.0f}", rows[-1])
            finally:
                server.terminate()
                server.wait(timeout=10)
    if args.json:
        args.json.write_text(
            json.dumps(
                {"args": vars(args) | {"json": str(args.json)}, "rows": rows}, indent=2, default=str
            )
        )


if __name__ == "__main__":
    main()
