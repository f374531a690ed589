"""Size and Chromium render time of the HTML report for a 10,000-request run.

Plays a steady-then-burst workload (``--requests`` in total, 1% failures) through the
reference server's engine in virtual time (no sockets: its queue waits and token times
are the engine's own), decides three objectives, writes the run with ``--latency-json``'s
code, and renders the report both ways: from the session's result and from the saved
file (``pytest-latency report``). Then opens the file in headless Chromium (Debian's
``chromium`` through Playwright) ``--repeats`` times in a fresh page and measures the
time from navigation start until the load event has fired and two animation frames have
been painted, and the console errors.

The targets (issue 11): at most 3 MB and at most 2 s for 10,000 requests.

    python benchmarks/bench_html.py
    python benchmarks/bench_html.py --requests 50000 --keep big.html
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from pytest_latency.analysis.percentiles import DEFAULT_CONFIDENCE
from pytest_latency.analysis.result import LatencyResult
from pytest_latency.records import RequestRecord, Status, read_runs
from pytest_latency.report.html import write_html, write_html_from_file
from pytest_latency.report.json_report import write_json
from pytest_latency.servers.base import ServerInfo
from pytest_latency.sim.config import SimConfig
from pytest_latency.sim.engine import State
from pytest_latency.sim.virtual import Arrival, simulate
from pytest_latency.spec.model import Phase, Workload, objective
from pytest_latency.telemetry.prometheus import MetricsSeries

MAX_BYTES = 3 * 1024 * 1024
MAX_RENDER_S = 2.0
STEADY_RATE, BURST_RATE, BURST_SHARE = 12.0, 40.0, 0.25


def phases_for(requests: int) -> tuple[Phase, Phase]:
    burst = requests * BURST_SHARE
    return (
        Phase("steady", rate=STEADY_RATE, duration_s=(requests - burst) / STEADY_RATE),
        Phase("burst", rate=BURST_RATE, duration_s=burst / BURST_RATE),
    )


def simulated_records(phases: tuple[Phase, ...], seed: int) -> list[RequestRecord]:
    """The engine's timings for Poisson arrivals, plus 2 ms of client overhead, 1% failed."""
    rng = np.random.default_rng(seed)
    named: list[tuple[str, Arrival]] = []
    start = 0.0
    for phase in phases:
        times = start + np.cumsum(
            rng.exponential(1.0 / phase.rate, int(phase.rate * phase.duration_s))
        )
        named += [(phase.name, Arrival(float(t), int(rng.integers(200, 401)), 64)) for t in times]
        start += phase.duration_s
    results = simulate(SimConfig(), [arrival for _, arrival in named])
    records = []
    for index, ((name, arrival), result) in enumerate(zip(named, results, strict=True)):
        sent = arrival.at_s + float(rng.exponential(0.0004))
        record = RequestRecord(
            id=index,
            phase=name,
            intended_s=arrival.at_s,
            input_tokens=arrival.prompt_tokens,
            max_tokens=64,
            trace_id=f"{rng.integers(1, 2**63):032x}",
            sent_s=sent,
        )
        if result.outcome is State.OK and result.ttft_s is not None and rng.random() > 0.01:
            record.status, record.http_status, record.output_tokens = Status.OK, 200, 64
            record.first_token_s = sent + result.ttft_s + 0.002
            record.end_s = sent + (result.e2e_s or result.ttft_s) + 0.002
            record.itl_s = np.asarray(result.itl_s)
            record.queue_wait_s = result.queue_wait_s
            record.prefill_s = max(result.ttft_s - (result.queue_wait_s or 0.0) - 0.001, 0.0)
            record.server_source = "otlp:vllm"
        else:
            record.status, record.http_status = Status.HTTP_ERROR, 503
            record.error, record.end_s = "HTTP 503: queue timeout", sent + 0.5
        records.append(record)
    return records


def queue_depth(records: list[RequestRecord], duration: float) -> MetricsSeries:
    """Once a second: how many requests were waiting (sent, not yet past their queue wait)."""
    times = np.arange(0.0, duration, 1.0)
    sent = np.array([r.sent_s or r.intended_s for r in records])
    left = sent + np.array([r.queue_wait_s or 0.0 for r in records])
    first = np.array([r.first_token_s or r.end_s or 0.0 for r in records])
    end = np.array([r.end_s or 0.0 for r in records])
    waiting = [float(((sent <= t) & (left > t)).sum()) for t in times]
    running = [float(((left <= t) & (end > t) & (first > 0)).sum()) for t in times]
    return MetricsSeries("sim", list(times), list(waiting), list(running), {}, len(times), 0, None)


def make_result(requests: int, seed: int) -> LatencyResult:
    phases = phases_for(requests)
    records = simulated_records(phases, seed)
    duration = sum(phase.duration_s for phase in phases)
    result = LatencyResult(
        test="tests/test_serving.py::test_spike",
        confidence=DEFAULT_CONFIDENCE,
        server=ServerInfo(kind="url", url="http://127.0.0.1:8000", model="tiny"),
        workload=Workload(phases=phases, output_tokens=64, seed=seed),
        records=records,
        started_at_unix=time.time(),
        elapsed_s=duration,
        trace_url_template="http://127.0.0.1:16686/trace/{trace_id}",
        server_metrics=queue_depth(records, duration),
    )
    result.evaluate(
        [
            objective("ttft", p=95, max="700ms", phase="steady"),
            objective("itl", p=50, max="40ms"),
            objective("error_rate", max="2%"),
        ]
    )
    return result


def render_times(path: Path, repeats: int) -> tuple[list[float], list[str]]:
    """Seconds from navigation start to load plus two painted frames, per fresh page."""
    from playwright.sync_api import sync_playwright

    executable = shutil.which("chromium")
    if executable is None:
        sys.exit("bench_html: Debian's chromium is needed (apt-get install chromium)")
    errors: list[str] = []
    times = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        for _ in range(repeats):
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(path.as_uri(), wait_until="load")
            painted = page.evaluate(
                "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame("
                "() => done(performance.now()))))"
            )
            times.append(painted / 1000.0)  # performance.now() counts from navigation start
            page.close()
        browser.close()
    return times, errors


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=10_000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--keep", type=Path, help="also copy the report here")
    arguments = parser.parse_args()
    started = time.perf_counter()
    result = make_result(arguments.requests, arguments.seed)
    print(f"simulated {len(result.records)} requests in {time.perf_counter() - started:.1f}s")
    with tempfile.TemporaryDirectory() as folder:
        session_html, saved_html = Path(folder) / "session.html", Path(folder) / "saved.html"
        # CPU seconds: single-threaded work, and the machine may be shared.
        began = time.process_time()
        write_html(session_html, [result])
        from_session = time.process_time() - began
        write_json(Path(folder) / "run.json", [result])
        began = time.process_time()
        write_html_from_file(saved_html, read_runs(Path(folder) / "run.json"))
        from_file = time.process_time() - began
        size = saved_html.stat().st_size
        times, errors = render_times(saved_html, arguments.repeats)
        if arguments.keep:
            shutil.copy(saved_html, arguments.keep)
    worst = max(times)
    print(
        f"render in Python: {from_session:.2f} CPU-s from the session,"
        f" {from_file:.2f} CPU-s from JSON"
    )
    print(f"report size: {size / 1e6:.2f} MB ({size:,} bytes; limit {MAX_BYTES:,})")
    print(
        f"Chromium load+paint over {len(times)} pages: median "
        f"{statistics.median(times):.2f}s, worst {worst:.2f}s (limit {MAX_RENDER_S}s)"
    )
    print(f"console errors: {len(errors)}" + (f" (first: {errors[0]})" if errors else ""))
    within = size <= MAX_BYTES and worst <= MAX_RENDER_S and not errors
    print("within the targets" if within else "OVER a target")
    sys.exit(0 if within else 1)


if __name__ == "__main__":
    main()
