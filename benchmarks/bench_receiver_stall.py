"""How long OTLP exports make the driving loop wait (issue 35): the worst overshoot of a
1 ms sleep on an asyncio loop, with the drive's GIL switch interval, while exports post
to the receiver in another thread, against the same loop with no exports.

    .venv/bin/python benchmarks/bench_receiver_stall.py [MiB per post] [posts]

Loopback only. Prints the overshoot's p50, p99 and max in ms for each condition.
"""

from __future__ import annotations

import asyncio
import gzip
import sys
import threading
import time

from pytest_latency.driver.drive_gc import quiet_gc
from pytest_latency.driver.loop import DRIVE_SWITCH_INTERVAL_S
from pytest_latency.telemetry.receiver import OtlpReceiver
from tests.helpers.otlp_helpers import VLLM_ATTRS, make_request, make_span, new_trace_id, post


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


def summary(name: str, values: list[float]) -> str:
    ordered = sorted(values)
    p = lambda q: ordered[min(len(ordered) - 1, int(q * len(ordered)))]  # noqa: E731
    return f"{name}: p50 {p(0.5):.3f} ms, p99 {p(0.99):.3f} ms, max {ordered[-1]:.3f} ms"


def main() -> None:
    mib = float(sys.argv[1]) if len(sys.argv) > 1 else 15.0
    posts = int(sys.argv[2]) if len(sys.argv) > 2 else 2
    body = export_body(mib)
    sys.setswitchinterval(DRIVE_SWITCH_INTERVAL_S)
    quiet_gc()  # as during a drive
    with OtlpReceiver() as receiver:
        quiet = asyncio.run(overshoots(2.0))
        statuses: list[int] = []

        def send() -> None:
            status, _, _ = post(receiver.traces_url, body, headers={"Content-Encoding": "gzip"})
            statuses.append(status)

        senders = [threading.Thread(target=send) for _ in range(posts)]
        started = time.perf_counter()
        for sender in senders:
            sender.start()
        busy = asyncio.run(overshoots(0.5))
        while any(s.is_alive() for s in senders):
            busy += asyncio.run(overshoots(0.2))
        took = time.perf_counter() - started
    print(
        f"{posts} posts of {len(body) / 1024:.0f} KiB gzip ({mib:g} MiB), answered {statuses}"
        f" in {took:.1f} s; spans stored {receiver.spans_received}"
    )
    print(summary("quiet", quiet))
    print(summary("during posts", busy))


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
    receiver = OtlpReceiver()
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
