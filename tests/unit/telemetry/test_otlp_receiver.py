"""The OTLP/HTTP receiver over real loopback HTTP: statuses, counters, waiting, stopping.

Each test runs against the receiver in its own process (what the plugin uses; slow tier:
it starts a process) and against its engine in a thread of this process (the same HTTP
handler and store; fast tier).

Timing tolerances: the lower bounds are what the code guarantees (it cannot return
before the spans were posted); the upper bounds sit well below the grace period, so a
pass proves the wait ended early, while leaving seconds of slack for a loaded 2-core
CI machine.
"""

from __future__ import annotations

import gzip
import http.client
import socket
import threading
import time
import zlib
from collections.abc import Iterator

import pytest

from pytest_latency.telemetry.otlp_json import dumps_request
from pytest_latency.telemetry.receiver import OtlpReceiver, parse_listen_address
from pytest_latency.telemetry.receiver_thread import ThreadReceiver
from tests.helpers.otlp_helpers import (
    VLLM_ATTRS,
    ReceiverKind,
    make_request,
    make_span,
    new_trace_id,
    post,
)

Receiver = OtlpReceiver | ThreadReceiver


@pytest.fixture
def receiver(receiver_kind: ReceiverKind) -> Iterator[Receiver]:
    with receiver_kind() as running:
        yield running


def _vllm_body(*trace_ids: str) -> bytes:
    spans = [make_span(tid, "llm_request", VLLM_ATTRS) for tid in trace_ids]
    return make_request(spans, "vllm.llm_engine").SerializeToString()


def test_binds_loopback_ephemeral_port(receiver: Receiver) -> None:
    assert receiver.port > 0
    assert receiver.endpoint == f"http://127.0.0.1:{receiver.port}"
    assert receiver.traces_url == f"http://127.0.0.1:{receiver.port}/v1/traces"


def test_protobuf_export_is_parsed_and_answered_in_kind(receiver: Receiver) -> None:
    tid = new_trace_id()
    status, ctype, body = post(receiver.traces_url, _vllm_body(tid))
    assert (status, ctype, body) == (200, "application/x-protobuf", b"")
    timings = receiver.timings([tid], grace_s=2)[tid]
    assert timings.queue_wait_s == 0.125
    assert timings.source == "otlp:vllm"
    assert (receiver.spans_received, receiver.spans_ignored, receiver.exports) == (1, 0, 1)


def test_json_gzip_deflate_and_chunked(receiver: Receiver) -> None:
    ids = [new_trace_id() for _ in range(4)]
    json_body = dumps_request(make_request([make_span(ids[0], "llm_request", VLLM_ATTRS)]))
    assert post(receiver.traces_url, json_body, "application/json; charset=utf-8")[:3] == (
        200,
        "application/json",
        b"{}",
    )
    gz = {"Content-Encoding": "gzip"}
    assert post(receiver.traces_url, gzip.compress(_vllm_body(ids[1])), headers=gz)[0] == 200
    deflate = {"Content-Encoding": "deflate"}
    assert post(receiver.traces_url, zlib.compress(_vllm_body(ids[2])), headers=deflate)[0] == 200
    body = _vllm_body(ids[3])
    conn = http.client.HTTPConnection("127.0.0.1", receiver.port, timeout=10)
    try:
        chunks = iter([body[:10], body[10:]])
        headers = {"Content-Type": "application/x-protobuf"}
        conn.request("POST", "/v1/traces", body=chunks, headers=headers, encode_chunked=True)
        assert conn.getresponse().status == 200
    finally:
        conn.close()
    assert set(receiver.timings(ids, grace_s=2)) == set(ids)


@pytest.mark.parametrize(
    ("body", "ctype", "headers"),
    [
        (b"\xff\xff\xff\xff", "application/x-protobuf", {}),
        (b"{not json", "application/json", {}),
        (
            b'{"resourceSpans":[{"scopeSpans":[{"spans":[{"traceId":"xyz"}]}]}]}',
            "application/json",
            {},
        ),
        (b"plainly not gzip", "application/x-protobuf", {"Content-Encoding": "gzip"}),
        # mtime=0: the same bytes (and test id) in every process, as pytest-xdist requires
        (
            gzip.compress(b"x" * 100, mtime=0)[:-8],
            "application/x-protobuf",
            {"Content-Encoding": "gzip"},
        ),
    ],
)
def test_undecodable_bodies_get_400_and_are_counted(
    receiver: Receiver, body: bytes, ctype: str, headers: dict[str, str]
) -> None:
    status, _, _ = post(receiver.traces_url, body, ctype, headers=headers)
    assert status == 400
    assert receiver.bad_requests == 1
    assert receiver.exports == 0


def test_other_paths_methods_and_types(receiver: Receiver) -> None:
    base = receiver.endpoint
    assert post(base + "/v1/metrics", _vllm_body(new_trace_id()))[0] == 404
    assert post(base + "/", b"")[0] == 404
    assert post(receiver.traces_url, b"", method="GET")[0] == 405
    assert post(receiver.traces_url, b"x", "text/plain")[0] == 415
    assert post(receiver.traces_url, b"x", headers={"Content-Encoding": "br"})[0] == 415
    assert receiver.rejections == {404: 2, 405: 1, 415: 2}
    assert receiver.bad_requests == 0
    # a query string does not change the path
    assert post(receiver.traces_url + "?x=1", _vllm_body(new_trace_id()))[0] == 200


def test_body_limit_gives_413(receiver_kind: ReceiverKind) -> None:
    with receiver_kind(max_body_bytes=1000) as small:
        big = _vllm_body(*[new_trace_id() for _ in range(20)])
        assert len(big) > 1000
        assert post(small.traces_url, big)[0] == 413
        bomb = gzip.compress(b"\x00" * 100_000)
        assert len(bomb) < 1000
        assert post(small.traces_url, bomb, headers={"Content-Encoding": "gzip"})[0] == 413
        assert small.bad_requests == 2


def test_late_spans_still_join(receiver: Receiver) -> None:
    tid = new_trace_id()
    timer = threading.Timer(1.0, post, args=(receiver.traces_url, _vllm_body(tid)))
    start = time.monotonic()
    timer.start()
    try:
        joined = receiver.timings([tid], grace_s=5, settle_s=0.1)
    finally:
        timer.join()
    elapsed = time.monotonic() - start
    assert tid in joined
    assert 0.9 <= elapsed < 4.0, elapsed  # waited for the span, not for the grace period


def test_returns_promptly_when_all_present(receiver: Receiver) -> None:
    ids = [new_trace_id() for _ in range(50)]
    assert post(receiver.traces_url, _vllm_body(*ids))[0] == 200
    start = time.monotonic()
    joined = receiver.timings(ids, grace_s=10, settle_s=0.1)
    assert time.monotonic() - start < 1.5  # at most settle_s plus scheduling slack
    assert set(joined) == set(ids)


def test_settle_lets_a_second_span_of_the_same_trace_merge(receiver: Receiver) -> None:
    tid = new_trace_id()
    first = make_request([make_span(tid, "generate", {"queue_time": "5ms"})])
    second = make_request([make_span(tid, "gw", {"gen_ai.latency.time_to_first_token": 0.2})])
    assert post(receiver.traces_url, first.SerializeToString())[0] == 200
    timer = threading.Timer(0.2, post, args=(receiver.traces_url, second.SerializeToString()))
    timer.start()
    try:
        joined = receiver.timings([tid], grace_s=5, settle_s=1.0)
    finally:
        timer.join()
    assert joined[tid].queue_wait_s == pytest.approx(0.005)
    assert joined[tid].server_ttft_s == pytest.approx(0.2)


def test_missing_traces_return_after_grace(receiver: Receiver) -> None:
    present, missing = new_trace_id(), new_trace_id()
    post(receiver.traces_url, _vllm_body(present))
    start = time.monotonic()
    joined = receiver.timings([present, missing], grace_s=0.5)
    elapsed = time.monotonic() - start
    assert set(joined) == {present}
    assert 0.45 <= elapsed < 3.0, elapsed
    assert receiver.timings([], grace_s=5) == {}


def test_unknown_trace_ids_and_bounded_store(receiver_kind: ReceiverKind) -> None:
    ours, theirs = new_trace_id(), new_trace_id()
    with receiver_kind(max_traces=2) as small:
        post(small.traces_url, _vllm_body(ours, theirs, new_trace_id()))
        assert small.traces_dropped == 1
        assert small.unknown_trace_ids([ours]) == 1
        assert small.unknown_trace_ids([ours, theirs]) == 0
        small.clear()
        assert small.unknown_trace_ids([]) == 0


def test_stop_is_prompt_closes_keepalive_and_releases_the_port(receiver_kind: ReceiverKind) -> None:
    receiver = receiver_kind().start()
    port = receiver.port
    idle = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    idle.request(
        "POST",
        "/v1/traces",
        body=_vllm_body(new_trace_id()),
        headers={"Content-Type": "application/x-protobuf"},
    )
    assert idle.getresponse().read() == b""  # keep-alive connection now idle on the server
    start = time.monotonic()
    receiver.stop()
    assert time.monotonic() - start < 1.0  # one poll interval (50 ms) plus slack
    assert not receiver.running
    receiver.stop()  # idempotent
    with pytest.raises(OSError):
        socket.create_connection(("127.0.0.1", port), timeout=2).close()
    idle.close()
    with receiver_kind(port=port) as again:  # the same port binds again
        assert again.port == port
        assert post(again.traces_url, _vllm_body(new_trace_id()))[0] == 200


def test_port_in_use_raises(receiver_kind: ReceiverKind) -> None:
    with receiver_kind() as first, pytest.raises(OSError):
        receiver_kind(port=first.port).start()


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("127.0.0.1:4318", ("127.0.0.1", 4318)),
        ("localhost:0", ("localhost", 0)),
        (":4318", ("127.0.0.1", 4318)),
        ("4318", ("127.0.0.1", 4318)),
        ("[::1]:4318", ("::1", 4318)),
    ],
)
def test_parse_listen_address(text: str, expected: tuple[str, int]) -> None:
    assert parse_listen_address(text) == expected


@pytest.mark.parametrize("text", ["", "host:", "host:port", "1.2.3.4:70000", "::1:4318", "[::1]"])
def test_parse_listen_address_rejects(text: str) -> None:
    with pytest.raises(ValueError):
        parse_listen_address(text)


def test_ipv6_loopback(receiver_kind: ReceiverKind) -> None:
    try:
        receiver = receiver_kind("::1").start()
    except OSError:
        pytest.skip("no IPv6 loopback here")
    with receiver:
        assert receiver.traces_url == f"http://[::1]:{receiver.port}/v1/traces"
        assert post(receiver.traces_url, _vllm_body(new_trace_id()))[0] == 200
