"""The server's own telemetry over real loopback HTTP: vLLM-style spans sent to the real
OTLP receiver, and the ``Server-Timing`` header measuring the same instants."""

from __future__ import annotations

import re
import socket
import threading
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from typing import Any

import httpx
import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Span, Status

from pytest_latency.sim import SimConfig, SimServer
from pytest_latency.sim.tracing import EXPORT_TIMEOUT_S
from pytest_latency.telemetry.receiver_thread import ThreadReceiver

# One slot, 10 ms steps and no prefill cost: a 4-token request holds the replica ~40 ms.
QUEUEING = SimConfig(replicas=1, max_batch=1, decode_base_s=0.01, decode_per_seq_s=0.0,
                     prefill_base_s=0.0, prefill_per_token_s=0.0)  # fmt: skip
TIMING = re.compile(r"^(\w+);dur=(\d+\.\d{3})$")
HEADER_ROUNDING_S = 0.6e-6  # the header prints milliseconds with three decimals


class CapturingReceiver(ThreadReceiver):
    """The real receiver, also keeping the raw spans (name, kind, parent, status)."""

    def __init__(self) -> None:
        super().__init__()
        self.spans: dict[str, tuple[Span, dict[str, AnyValue]]] = {}
        self.services: set[str] = set()
        self._raw_lock = threading.Lock()

    def ingest(self, request: ExportTraceServiceRequest) -> None:
        self.capture(request)
        super().ingest(request)

    def capture(self, request: ExportTraceServiceRequest) -> None:
        with self._raw_lock:
            for resource_spans in request.resource_spans:
                for kv in resource_spans.resource.attributes:
                    if kv.key == "service.name":
                        self.services.add(kv.value.string_value)
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        attrs = {kv.key: kv.value for kv in span.attributes}
                        self.spans[span.trace_id.hex()] = (span, attrs)

    def ingest_body(self, body: bytes | bytearray) -> None:  # protobuf exports arrive as bytes
        self.capture(ExportTraceServiceRequest.FromString(bytes(body)))
        super().ingest_body(body)


@pytest.fixture(scope="module")
def receiver() -> Iterator[CapturingReceiver]:
    with CapturingReceiver() as running:
        yield running


def body(max_tokens: int, stream: bool) -> dict[str, Any]:
    return {"messages": [{"role": "user", "content": "one two three"}],
            "max_tokens": max_tokens, "stream": stream}  # fmt: skip


def server_timing(response: httpx.Response) -> dict[str, float]:
    """``Server-Timing`` as seconds by name; strict about the format."""
    parsed: dict[str, float] = {}
    for part in response.headers["server-timing"].split(", "):
        match = TIMING.match(part)
        assert match is not None, part
        parsed[match.group(1)] = float(match.group(2)) / 1e3
    return parsed


def traceparent(index: int) -> tuple[str, str, str]:
    trace_id, span_id = f"{index + 1:032x}", f"{0xABC0 + index:016x}"
    return trace_id, span_id, f"00-{trace_id}-{span_id}-01"


def stream_one(url: str, index: int, start: threading.Barrier) -> tuple[str, httpx.Response]:
    """A streaming request with its own traceparent, sent with the others; body read."""
    trace_id, _, header = traceparent(index)
    headers = {"traceparent": header, "X-Request-Id": f"req-{index}"}
    with httpx.Client(base_url=url, trust_env=False, timeout=10) as client:
        start.wait(timeout=10)
        response = client.post("/v1/chat/completions", json=body(4, True), headers=headers)
    assert response.status_code == 200 and response.text.endswith("data: [DONE]\n\n")
    return trace_id, response


def test_queued_streams_export_vllm_spans_matching_server_timing(
    receiver: CapturingReceiver,
) -> None:
    config = replace(QUEUEING, otlp_traces_endpoint=receiver.traces_url)
    with SimServer(config) as server, ThreadPoolExecutor(max_workers=4) as pool:
        start = threading.Barrier(4)
        done = list(pool.map(lambda i: stream_one(server.url, i, start), range(4)))
        headers = {trace_id: server_timing(response) for trace_id, response in done}
        joined = receiver.timings(list(headers), grace_s=5)
    assert set(joined) == set(headers)  # every trace id arrived
    waits = []
    for trace_id, timing in headers.items():
        got = joined[trace_id]
        assert got.source == "otlp:vllm"
        assert set(timing) == {"queue"}  # a stream's headers leave when prefill starts
        assert got.queue_wait_s is not None and got.prefill_s is not None
        assert got.decode_s is not None and got.server_e2e_s is not None
        assert abs(got.queue_wait_s - timing["queue"]) <= HEADER_ROUNDING_S  # same measurement
        assert abs(got.queue_wait_s + got.prefill_s + got.decode_s - got.server_e2e_s) < 0.002
        assert got.server_ttft_s == pytest.approx(got.queue_wait_s + got.prefill_s, abs=1e-6)
        assert got.inference_s == pytest.approx(got.prefill_s + got.decode_s, abs=1e-6)
        assert (got.prompt_tokens, got.completion_tokens) == (3, 4)
        waits.append(got.queue_wait_s)
    # One slot, four at once: all but the first wait behind ~40 ms requests.
    assert sum(wait > 0.01 for wait in waits) >= 3, waits
    for index in range(4):
        _assert_vllm_span(receiver, index)


def _assert_vllm_span(receiver: CapturingReceiver, index: int) -> None:
    trace_id, span_id, _ = traceparent(index)
    span, attrs = receiver.spans[trace_id]
    assert span.name == "llm_request" and span.kind == Span.SpanKind.SPAN_KIND_SERVER
    assert span.parent_span_id.hex() == span_id  # a child of the client's span
    assert span.status.code != Status.StatusCode.STATUS_CODE_ERROR
    assert attrs["gen_ai.request.id"].string_value == f"req-{index}"  # X-Request-Id
    assert attrs["gen_ai.response.model"].string_value == "sim-tiny"
    e2e = attrs["gen_ai.latency.e2e"].double_value
    # Start = arrival, end = end, on the epoch clock through one offset.
    assert (span.end_time_unix_nano - span.start_time_unix_nano) / 1e9 == pytest.approx(
        e2e, abs=2e-6
    )
    assert abs(span.start_time_unix_nano / 1e9 - time.time()) < 60
    assert "pytest-latency-sim" in receiver.services


def test_non_streaming_server_timing_has_queue_prefill_decode(
    receiver: CapturingReceiver,
) -> None:
    config = replace(QUEUEING, otlp_traces_endpoint=receiver.traces_url)
    with SimServer(config) as server:
        with httpx.Client(base_url=server.url, trust_env=False, timeout=10) as client:
            response = client.post("/v1/completions", json={"prompt": "a b", "max_tokens": 3})
        assert response.status_code == 200
        (record,) = server.snapshot().recent  # no traceparent: the gateway made a trace id
    timing = server_timing(response)
    assert list(timing) == ["queue", "prefill", "decode"]
    joined = receiver.timings([record.trace_id], grace_s=5)[record.trace_id]
    assert joined.prefill_s is not None and joined.decode_s is not None
    assert abs(joined.prefill_s - timing["prefill"]) <= HEADER_ROUNDING_S
    assert abs(joined.decode_s - timing["decode"]) <= HEADER_ROUNDING_S
    assert timing["decode"] == pytest.approx(0.02, abs=0.015)  # two 10 ms steps
    span, attrs = receiver.spans[record.trace_id]
    assert span.parent_span_id == b""  # a fresh trace: the span is its root
    assert attrs["gen_ai.request.id"].string_value == response.json()["id"]


def test_expired_request_gets_queue_timing_and_an_error_span(
    receiver: CapturingReceiver,
) -> None:
    config = replace(QUEUEING, queue_timeout_s=0.2, otlp_traces_endpoint=receiver.traces_url)
    trace_id, _, header = traceparent(99)
    with (
        SimServer(config) as server,
        httpx.Client(base_url=server.url, trust_env=False, timeout=10) as client,
        client.stream("POST", "/v1/chat/completions", json=body(100, True)) as holder,
    ):
        assert holder.status_code == 200  # holds the only slot for ~1 s
        expired = client.post(
            "/v1/chat/completions", json=body(2, False), headers={"traceparent": header}
        )
    assert expired.status_code == 503 and expired.json()["error"]["code"] == "queue_timeout"
    queued = server_timing(expired)["queue"]
    assert list(server_timing(expired)) == ["queue"] and 0.19 <= queued < 0.5
    joined = receiver.timings([trace_id], grace_s=5)[trace_id]
    assert joined.queue_wait_s is not None
    assert abs(joined.queue_wait_s - queued) <= HEADER_ROUNDING_S
    assert joined.prefill_s is None and joined.decode_s is None
    span, _ = receiver.spans[trace_id]
    assert span.status.code == Status.StatusCode.STATUS_CODE_ERROR


def test_no_export_without_an_endpoint(
    receiver: CapturingReceiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The standard variables do not switch export on: only the config field does.
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", receiver.traces_url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", receiver.endpoint)
    before = receiver.spans_received
    trace_id, _, header = traceparent(7)
    with (
        SimServer(QUEUEING) as server,
        httpx.Client(base_url=server.url, trust_env=False, timeout=10) as client,
    ):
        response = client.post(
            "/v1/chat/completions", json=body(2, False), headers={"traceparent": header}
        )
        assert set(server_timing(response)) == {"queue", "prefill", "decode"}
        time.sleep(0.5)  # more than the 200 ms batch delay an exporter would use
    assert receiver.timings([trace_id], grace_s=0.3) == {}
    assert receiver.spans_received == before


@pytest.mark.slow
def test_dead_collector_does_not_break_serving_and_stop_is_bounded() -> None:
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    endpoint = f"http://127.0.0.1:{port}/v1/traces"
    server = SimServer(replace(QUEUEING, otlp_traces_endpoint=endpoint))
    server.start()
    try:
        with httpx.Client(base_url=server.url, trust_env=False, timeout=10) as client:
            for round_ in range(3):
                streamed = client.post("/v1/chat/completions", json=body(3, True))
                assert streamed.status_code == 200 and streamed.text.endswith("[DONE]\n\n")
                plain = client.post("/v1/chat/completions", json=body(3, False))
                assert plain.json()["usage"]["completion_tokens"] == 3
                if round_ == 0:
                    time.sleep(0.4)  # the first export is now failing and retrying
        assert server.snapshot().counters.completed == 6
    finally:
        started = time.monotonic()
        server.stop()
        stopped_in = time.monotonic() - started
    # The flush gives up after the exporter timeout (+1 s at most).
    assert stopped_in < EXPORT_TIMEOUT_S + 3.0 < 12.0


def test_stop_flushes_the_last_spans(receiver: CapturingReceiver) -> None:
    trace_id, _, header = traceparent(42)
    with (
        SimServer(replace(QUEUEING, otlp_traces_endpoint=receiver.traces_url)) as server,
        httpx.Client(base_url=server.url, trust_env=False, timeout=10) as client,
    ):
        response = client.post(
            "/v1/chat/completions", json=body(1, False), headers={"traceparent": header}
        )
        assert response.status_code == 200
    # stop() ran before the 200 ms batch delay: the span was flushed by it, not later.
    assert trace_id in receiver.timings([trace_id], grace_s=0.0)


def test_endpoint_must_be_an_http_url() -> None:
    with pytest.raises(ValueError, match="otlp_traces_endpoint"):
        SimConfig(otlp_traces_endpoint="127.0.0.1:4318")
