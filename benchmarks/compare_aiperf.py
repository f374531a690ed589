"""Side by side with NVIDIA AIPerf: same fast server, same core budget, same rates, one table.

AIPerf is never a dependency and never imported: it runs as a subprocess from its own
venv (``--aiperf``)::

    python3 -m venv .bench-venv && .bench-venv/bin/pip install aiperf
    .venv/bin/python benchmarks/compare_aiperf.py --aiperf .bench-venv/bin/aiperf

Tokenizer, made here and loaded offline: AIPerf needs a Hugging Face tokenizer to size
prompts (its ``builtin`` one downloads tiktoken files). Unless ``--tokenizer DIR`` is
given, the script builds a small WordLevel tokenizer with the AIPerf venv's own
``transformers`` (``PreTrainedTokenizerFast(...).save_pretrained``) into a Hugging Face
cache folder (``--hf-cache``) as the snapshot of a local repo id, and runs AIPerf with
``HF_HUB_OFFLINE=1`` and ``--tokenizer pytest-latency/bench-tokenizer``. A plain folder
path does not load offline in AIPerf 0.13.0 (it hands the path to the hub as a repo id:
``HFValidationError``), so ``--tokenizer DIR`` runs without ``HF_HUB_OFFLINE`` (AIPerf
then loads the folder from disk; nothing here has network access to use).

Per rate, our side runs ``bench_load.py`` (its own server and pinning) and AIPerf runs
against a ``fast_server.py`` pinned to ``--server-cpu``, itself pinned to
``--client-cpus`` with ``taskset``: streaming chat, constant arrivals at
``--request-rate``, ``rate * --duration`` requests. True TTFT is ``--ttft-ms`` after the
request arrives; true ITL is ``--gap-ms``. From AIPerf's JSON export: its achieved
request throughput (requests / benchmark duration, first send to last response) and
TTFT/ITL percentiles; from its per-request records (``profile_export.jsonl``): the rate
it actually sent at. Our achieved rate is defined alike: ok requests / (time zero to
the last response). Only 127.0.0.1; every run is
bounded by its request count and a wall-clock timeout.
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

from bench_load import start_server

ROOT = Path(__file__).resolve().parent.parent  # the peer tools live beside the checkout
HERE = Path(__file__).resolve().parent
RUN_TIMEOUT_S = 600
REPO_ID = "pytest-latency/bench-tokenizer"
SNAPSHOT = "0" * 39 + "1"  # a fixed local "commit": the cache needs one, nothing checks it

MAKE_TOKENIZER = """
import sys
from tokenizers import Tokenizer, models, pre_tokenizers
from transformers import PreTrainedTokenizerFast

words = sys.argv[2].split()
vocab = {"[UNK]": 0, "[PAD]": 1, "<s>": 2, "</s>": 3}
for word in words:
    vocab.setdefault(word, len(vocab))
core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
core.pre_tokenizer = pre_tokenizers.Whitespace()
PreTrainedTokenizerFast(
    tokenizer_object=core, unk_token="[UNK]", pad_token="[PAD]", bos_token="<s>",
    eos_token="</s>",
).save_pretrained(sys.argv[1])
"""
# Prompt words: AIPerf draws prompts from its own corpus and counts them with this
# vocabulary; the server ignores the text, so a small vocabulary is enough.
WORDS = (
    "the a of and to in is it that was he for on are as with his they at be this from "
    "have or by one had not but what all were when we there can an your which their said "
    "if do will each about how up out them then she many some so these would other into"
)


def prepare_tokenizer(aiperf: Path, cache: Path) -> Path:
    """The tokenizer as a snapshot in a HF cache folder; built once by AIPerf's venv."""
    repo = cache / f"models--{REPO_ID.replace('/', '--')}"
    snapshot = repo / "snapshots" / SNAPSHOT
    if not (snapshot / "tokenizer.json").exists():
        python = aiperf.parent / "python"  # the venv AIPerf lives in has transformers
        command = [str(python), "-c", MAKE_TOKENIZER, str(snapshot), WORDS]
        subprocess.run(command, check=True, timeout=300, capture_output=True, text=True)
        (repo / "refs").mkdir(parents=True, exist_ok=True)
        (repo / "refs" / "main").write_text(SNAPSHOT)
    return cache


def sent_rate(records: list[dict[str, Any]]) -> float | None:
    """Requests AIPerf started per second, from its per-request start instants."""
    starts = sorted(r["metadata"]["request_start_ns"] for r in records if "metadata" in r)
    if len(starts) < 2:
        return None
    return (len(starts) - 1) / ((starts[-1] - starts[0]) / 1e9)


def aiperf_command(args: argparse.Namespace, rate: float, folder: str) -> list[str]:
    command = ["taskset", "-c", args.client_cpus, args.aiperf, "profile"]
    command += ["--model", "bench", "--url", f"http://127.0.0.1:{args.port}"]
    command += ["--endpoint-type", "chat", "--streaming", "--tokenizer", args.tokenizer_name]
    command += ["--request-rate", str(rate), "--arrival-pattern", "constant"]
    command += ["--request-count", str(int(rate * args.duration))]
    command += ["--synthetic-input-tokens-mean", "8", "--output-tokens-mean", str(args.tokens)]
    command += ["--ui-type", "none", "--artifact-dir", folder, "--random-seed", "1"]
    command += ["--no-server-metrics", *args.extra]
    return command


def aiperf_rate(args: argparse.Namespace, rate: float) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        command = aiperf_command(args, rate, folder)
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=RUN_TIMEOUT_S, env=args.env
        )
        summary_path = Path(folder) / "profile_export_aiperf.json"
        if done.returncode != 0 or not summary_path.exists():
            return {"tool": "aiperf", "rate": rate, "error": (done.stderr or done.stdout)[-2000:]}
        summary = json.loads(summary_path.read_text())
        records_path = Path(folder) / "profile_export.jsonl"
        lines = records_path.read_text().splitlines() if records_path.exists() else []
        records = [json.loads(line) for line in lines if line.strip()]

    def stat(name: str, key: str) -> float | None:
        value = (summary.get(name) or {}).get(key)
        return float(value) if value is not None else None

    return {
        "tool": "aiperf",
        "rate": rate,
        "offered_rate": sent_rate(records),
        "achieved_rps": stat("request_throughput", "avg"),
        "requests": stat("request_count", "avg"),
        "errors": len(summary.get("error_summary") or []),
        "ttft_p50_ms": stat("time_to_first_token", "p50"),
        "ttft_p99_ms": stat("time_to_first_token", "p99"),
        "itl_p50_ms": stat("inter_token_latency", "p50"),
        "itl_p99_ms": stat("inter_token_latency", "p99"),
        "command": " ".join(command[3:]),
    }


def ours(args: argparse.Namespace) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "ours.json"
        command = [sys.executable, str(HERE / "bench_load.py"), "--rates", args.rates]
        command += ["--duration", str(args.duration), "--tokens", str(args.tokens)]
        command += ["--ttft-ms", str(args.ttft_ms), "--gap-ms", str(args.gap_ms)]
        command += ["--client-cpus", args.client_cpus, "--server-cpu", str(args.server_cpu)]
        command += ["--port", str(args.port + 1), "--json", str(output)]
        done = subprocess.run(command, timeout=RUN_TIMEOUT_S * 4, capture_output=True, text=True)
        if done.returncode != 0:
            raise RuntimeError(f"bench_load.py failed: {done.stderr[-2000:]}")
        rows = json.loads(output.read_text())["rows"]
    return [
        {
            "tool": "pytest-latency",
            "rate": row["target_rate"],
            "offered_rate": row["offered_rate"],
            "achieved_rps": row["statuses"].get("ok", 0) / row["elapsed_s"],
            "requests": row["requests"],
            "errors": row["requests"] - row["statuses"].get("ok", 0),
            **{key: row[key] for key in ("ttft_p50_ms", "ttft_p99_ms", "itl_p50_ms", "itl_p99_ms")},
        }
        for row in rows
    ]


def show(rows: list[dict[str, Any]]) -> None:
    def fmt(value: float | None) -> str:
        return "-" if value is None else f"{value:.1f}"

    print("| tool | target req/s | sent req/s | achieved req/s | errors | TTFT p50 / p99 ms |"
          " ITL p50 / p99 ms |")  # fmt: skip
    print("|---|---:|---:|---:|---:|---:|---:|")
    for row in sorted(rows, key=lambda r: (r["rate"], r["tool"] != "pytest-latency")):
        if "error" in row:
            print(f"| {row['tool']} | {row['rate']:.0f} | failed: {row['error'][-200:]!r} |")
            continue
        print(
            f"| {row['tool']} | {row['rate']:.0f} | {fmt(row['offered_rate'])} |"
            f" {fmt(row['achieved_rps'])} | {row['errors']:.0f} |"
            f" {fmt(row['ttft_p50_ms'])} / {fmt(row['ttft_p99_ms'])} |"
            f" {fmt(row['itl_p50_ms'])} / {fmt(row['itl_p99_ms'])} |"
        )


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--aiperf", default=str(ROOT / ".bench-venv" / "bin" / "aiperf"))
    parser.add_argument("--rates", default="25,50,100,200")
    parser.add_argument("--duration", type=float, default=10.0, help="requests = rate * this")
    parser.add_argument("--tokens", type=int, default=64)
    parser.add_argument("--ttft-ms", type=float, default=5.0)
    parser.add_argument("--gap-ms", type=float, default=5.0)
    parser.add_argument("--client-cpus", default="0")
    parser.add_argument("--server-cpu", type=int, default=1)
    parser.add_argument("--port", type=int, default=8996)
    parser.add_argument("--tokenizer", default=None, help="a local HF tokenizer folder")
    parser.add_argument("--hf-cache", type=Path, default=ROOT / ".bench-hf-cache")
    parser.add_argument("--skip-ours", action="store_true", help="AIPerf rows only")
    parser.add_argument("--json", type=Path, default=None)
    parser.add_argument("extra", nargs="*", help="more AIPerf arguments (after --)")
    args = parser.parse_args()
    args.aiperf = str(Path(args.aiperf).absolute())  # its venv's python is found beside it
    if args.tokenizer:
        args.tokenizer_name, args.env = str(Path(args.tokenizer).resolve()), dict(os.environ)
    else:
        cache = prepare_tokenizer(Path(args.aiperf), args.hf_cache.resolve())
        args.tokenizer_name = REPO_ID
        args.env = os.environ | {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache)}
    return args


def main() -> None:
    args = parse_args()
    print(f"load before: {os.getloadavg()}", flush=True)
    rows = [] if args.skip_ours else ours(args)
    server = start_server(args.port, args.server_cpu, args.ttft_ms, args.gap_ms)
    try:
        for rate in (float(r) for r in args.rates.split(",")):
            rows.append(aiperf_rate(args, rate))
            print(json.dumps(rows[-1]), flush=True)
    finally:
        server.terminate()
        server.wait(timeout=10)
    print(f"load after: {os.getloadavg()}", flush=True)
    show(rows)
    if args.json:
        args.json.write_text(json.dumps(rows, indent=2))


if __name__ == "__main__":
    main()
