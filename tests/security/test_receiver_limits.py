"""The OTLP receiver against a hostile sender (issue 35, item 2 and 10): concurrent posts
past the cap get 503 with Retry-After, oversized and bombed bodies 413, a wrong or
missing token 401, JSON nested thousands deep 400 (answered and counted), and spans from
outside the run cannot take the room of the run's own trace ids.

The HTTP tests run against the receiver in its own process (what the plugin uses; slow
tier) and against its engine in a thread of this process (fast tier).
"""

from __future__ import annotations

import gc
import gzip
import http.client
import socket
import time

import pytest

from pytest_latency.driver.drive_gc import quiet_gc, restore_gc
from pytest_latency.driver.tracecontext import PrefixedIds
from pytest_latency.secret import Secret
from pytest_latency.telemetry.receiver import OtlpReceiver
from pytest_latency.telemetry.receiver_thread import ThreadReceiver
from pytest_latency.telemetry.store import TimingStore
from pytest_latency.telemetry.timings import ServerTimings
from tests.helpers.otlp_helpers import (
    VLLM_ATTRS,
    ReceiverKind,
    make_request,
    make_span,
    new_trace_id,
    post,
)

pytestmark = pytest.mark.security

PREFIX = "0123456789abcdef"


def export(trace_ids: list[str]) -> bytes:
    spans = [make_span(tid, "llm_request", VLLM_ATTRS) for tid in trace_ids]
    return make_request(spans).SerializeToString()


def test_posts_past_the_concurrency_cap_get_503_with_retry_after(
    receiver_kind: ReceiverKind,
) -> None:
    with receiver_kind(max_concurrent_posts=2) as receiver:
        held = []
        for _ in range(2):  # two posts that announce a body and send half of it
            sock = socket.create_connection((receiver.host, receiver.port))
            sock.sendall(
                b"POST /v1/traces HTTP/1.1\r\nHost: x\r\nContent-Type: application/x-protobuf"
                b"\r\nContent-Length: 1000\r\n\r\n" + b"\0" * 10
            )
            held.append(sock)
        deadline = time.monotonic() + 10
        status = 0
        while status != 503 and time.monotonic() < deadline:  # until both hold a slot
            conn = http.client.HTTPConnection(receiver.host, receiver.port, timeout=10)
            conn.request("POST", "/v1/traces", body=export([new_trace_id()]),
                         headers={"Content-Type": "application/x-protobuf"})  # fmt: skip
            response = conn.getresponse()
            status, retry = response.status, response.getheader("Retry-After")
            conn.close()
        for sock in held:
            sock.close()
        assert status == 503 and retry == "1"
        assert receiver.rejections.get(503, 0) >= 1


def test_an_oversized_or_bombed_body_is_413_and_a_wrong_token_401(
    receiver_kind: ReceiverKind,
) -> None:
    token = Secret("receiver-token-1234")
    with receiver_kind(max_body_bytes=1 << 20, token=token) as receiver:
        auth = {"Authorization": "Bearer receiver-token-1234"}
        bomb = gzip.compress(b"\0" * (64 << 20))
        status, _, _ = post(receiver.traces_url, bomb, headers={**auth, "Content-Encoding": "gzip"})
        assert status == 413
        assert post(receiver.traces_url, export([new_trace_id()]))[0] == 401
        wrong = {"Authorization": "Bearer receiver-token-12345"}
        assert post(receiver.traces_url, export([new_trace_id()]), headers=wrong)[0] == 401
        assert post(receiver.traces_url, export([new_trace_id()]), headers=auth)[0] == 200
        assert receiver.rejections == {413: 1, 401: 2} and receiver.spans_received == 1


def test_json_nested_thousands_deep_is_answered_400_and_counted(
    receiver_kind: ReceiverKind,
) -> None:
    with receiver_kind() as receiver:
        body = b'{"resourceSpans":' + b"[" * 100_000 + b"]" * 100_000 + b"}"
        status, _, text = post(receiver.traces_url, body, "application/json")
        assert status == 400 and b"nested too deep" in text
        assert receiver.bad_requests == 1


def test_outside_trace_ids_cannot_evict_or_block_the_runs_own() -> None:
    store = TimingStore(max_traces=100, own_prefix=PREFIX, max_foreign=10)
    store.add(ServerTimings(new_trace_id(), "otlp:vllm", queue_wait_s=1.0) for _ in range(1000))
    ids = PrefixedIds(PREFIX)
    own = [format(ids.generate_trace_id(), "032x") for _ in range(100)]
    store.add(ServerTimings(tid, "otlp:vllm", queue_wait_s=0.5) for tid in own)
    assert all(store.get(tid) is not None for tid in own)
    assert len(store) == 110 and store.traces_dropped == 990


@pytest.mark.slow
def test_a_flood_of_junk_spans_leaves_a_genuine_span_joined() -> None:
    ids = PrefixedIds(PREFIX)
    with OtlpReceiver(trace_prefix=PREFIX) as receiver:
        for _ in range(11):  # 11 x 2,000 outside ids: past the outside budget
            assert (
                post(receiver.traces_url, export([new_trace_id() for _ in range(2000)]))[0] == 200
            )
        genuine = format(ids.generate_trace_id(), "032x")
        assert post(receiver.traces_url, export([genuine]))[0] == 200
        joined = receiver.timings([genuine], grace_s=5)
        assert joined[genuine].queue_wait_s == VLLM_ATTRS["gen_ai.latency.time_in_queue"]
        assert receiver.traces_dropped == 11 * 2000 - 20_000


@pytest.mark.slow
def test_ingesting_a_large_export_costs_the_garbage_collector_nothing() -> None:
    """A collection walks every tracked object while holding the GIL: the store, which
    can hold a million traces, is invisible to the collector (packed bytes), and with
    the drive's GC settings 20,000 stored spans start none. (It now lives in the
    receiving process, where it stalls only the receiver; it stays cheap there.)"""
    body = gzip.compress(export([new_trace_id() for _ in range(20_000)]))
    receiver = ThreadReceiver()  # the engine, in this process: what the receiving one runs
    collections: list[str] = []

    def count(phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            collections.append(phase)

    previous = quiet_gc()
    gc.callbacks.append(count)
    try:
        receiver.ingest_body(gzip.decompress(body))
    finally:
        gc.callbacks.remove(count)
        restore_gc(previous)
    assert receiver.spans_received == 20_000 and collections == []
    assert not gc.is_tracked(receiver._store._items)
