"""How long OTLP exports make the driving loop wait (issue 35): the overshoot of a 1 ms
sleep on an asyncio loop, with the drive's GIL switch interval and GC settings, while
exports post to the receiver, against the same loop with no exports, in one run.

    .venv/bin/python benchmarks/bench_receiver_stall.py [MiB per post] [posts]
        [--rounds 3] [--receiver process|thread|both]

``process`` is the plugin's receiver (serving and parsing in its own process),
``thread`` its engine in a thread of this process (as the receiver was before the
split); ``both`` measures one after the other. Quiet and flood windows alternate
``--rounds`` times (the machine's noise drifts: compare within one run). Loopback only.
Prints the overshoot's p50, p99 and max in ms for each condition, and flood - quiet.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import sys
import threading
import time

from pytest_latency.driver.drive_gc import quiet_gc
from pytest_latency.driver.loop import DRIVE_SWITCH_INTERVAL_S
from pytest_latency.telemetry.receiver import OtlpReceiver
from pytest_latency.telemetry.receiver_thread import ThreadReceiver
from tests.helpers.otlp_helpers import VLLM_ATTRS, make_request, make_span, new_trace_id, post

QUIET_S = 1.0


def export_body(mib: float) -> bytes:
    one = make_span(new_trace_id(), "llm_request", VLLM_ATTRS)
    count = int(mib * 1024 * 1024 / one.ByteSize())
    spans = [make_span(new_trace_id(), "llm_request", VLLM_ATTRS) for _ in range(count)]
    return gzip.compress(make_request(spans).SerializeToString(), 1)


async def overshoots(seconds: float) -> list[float]:
    found: list[float] = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        before = time.perf_counter()
        await asyncio.sleep(0.001)
        found.append((time.perf_counter() - before - 0.001) * 1000)
    return found


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def summary(name: str, values: list[float]) -> str:
    p50, p99 = percentile(values, 0.5), percentile(values, 0.99)
    return f"{name}: p50 {p50:.3f} ms, p99 {p99:.3f} ms, max {max(values):.3f} ms"


def flood(url: str, body: bytes, posts: int) -> tuple[list[float], list[int]]:
    """Overshoots while ``posts`` exports of ``body`` are sent at once, until all are answered."""
    statuses: list[int] = []

    def send() -> None:
        status, _, _ = post(url, body, headers={"Content-Encoding": "gzip"})
        statuses.append(status)

    senders = [threading.Thread(target=send) for _ in range(posts)]
    for sender in senders:
        sender.start()
    busy = asyncio.run(overshoots(0.5))
    while any(s.is_alive() for s in senders):
        busy += asyncio.run(overshoots(0.2))
    return busy, statuses


def measure(kind: str, body: bytes, posts: int, rounds: int) -> None:
    receiver = OtlpReceiver() if kind == "process" else ThreadReceiver()
    quiet: list[float] = []
    busy: list[float] = []
    statuses: list[int] = []
    with receiver:
        if isinstance(receiver, OtlpReceiver):
            receiver.wait_ready()  # its start-up is not the quiet window's
        started = time.perf_counter()
        for _ in range(rounds):
            quiet += asyncio.run(overshoots(QUIET_S))
            found, answered = flood(receiver.traces_url, body, posts)
            busy += found
            statuses += answered
        took = time.perf_counter() - started - rounds * QUIET_S
        stored = receiver.spans_received
    print(f"receiver in {kind}: {rounds} x {posts} posts answered {sorted(set(statuses))}"
          f" in {took:.1f} s of flood; spans received {stored}")  # fmt: skip
    print("  " + summary("quiet       ", quiet))
    print("  " + summary("during posts", busy))
    p99 = percentile(busy, 0.99) - percentile(quiet, 0.99)
    print(f"  flood - quiet: p99 {p99:+.3f} ms, max {max(busy) - max(quiet):+.3f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("mib", nargs="?", type=float, default=15.0, help="MiB per post")
    parser.add_argument("posts", nargs="?", type=int, default=2, help="posts at once")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--receiver", choices=("process", "thread", "both"), default="both")
    args = parser.parse_args()
    body = export_body(args.mib)
    print(f"each post {len(body) / 1024:.0f} KiB gzip ({args.mib:g} MiB of spans)")
    sys.setswitchinterval(DRIVE_SWITCH_INTERVAL_S)
    quiet_gc()  # as during a drive
    kinds = ("process", "thread") if args.receiver == "both" else (args.receiver,)
    for kind in kinds:
        measure(kind, body, args.posts, args.rounds)


def longest_holds(mib: float) -> None:
    """The receiver's longest single C calls and GC pauses while ingesting one export (no
    other thread): what bounds the GIL's hand-over to the driving loop, free of the
    machine's scheduling noise. ``python bench_receiver_stall.py holds [MiB]``."""
    import gc

    from pytest_latency.telemetry import _http

    body = export_body(mib)
    quiet_gc()
    calls: list[tuple[float, str]] = []
    started: dict[int, float] = {}

    def profile(frame: object, event: str, arg: object) -> None:
        if event == "c_call":
            started[id(arg)] = time.perf_counter()
        elif event in ("c_return", "c_exception") and id(arg) in started:
            took = (time.perf_counter() - started.pop(id(arg))) * 1000
            if took > 0.5:  # only the long ones: a list of every call would feed the GC
                calls.append((took, repr(arg)[:60]))

    pauses: list[float] = []
    gc_started = [0.0]

    def on_gc(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            gc_started[0] = time.perf_counter()
        else:
            pauses.append((time.perf_counter() - gc_started[0]) * 1000)

    gc.callbacks.append(on_gc)
    receiver = ThreadReceiver()  # the engine, in this process
    sys.setprofile(profile)
    began = time.perf_counter()
    receiver.ingest_body(_http._decompress(body, "gzip", receiver.max_body_bytes))
    took = time.perf_counter() - began
    sys.setprofile(None)
    gc.callbacks.remove(on_gc)
    print(f"ingested {mib:g} MiB ({receiver.spans_received} spans) in {took:.2f} s")
    print("longest C calls (ms):", [(round(ms, 2), name) for ms, name in sorted(calls)[-5:]])
    print("GC pauses (ms):", sorted(round(p, 2) for p in pauses)[-5:])


if __name__ == "__main__":
    if sys.argv[1:2] == ["holds"]:
        longest_holds(float(sys.argv[2]) if len(sys.argv) > 2 else 15.0)
    else:
        main()
