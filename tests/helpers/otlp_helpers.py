"""Builders for OTLP spans and a tiny HTTP client for the receiver tests (loopback only)."""

from __future__ import annotations

import http.client
import os
from collections.abc import Mapping, Sequence
from urllib.parse import urlsplit

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from pytest_latency.telemetry.receiver import OtlpReceiver
from pytest_latency.telemetry.receiver_thread import ThreadReceiver

#: The two receivers, which share one API: in its own process, and its engine in a thread.
ReceiverKind = type[OtlpReceiver] | type[ThreadReceiver]

AttrValue = str | bool | int | float

VLLM_ATTRS: dict[str, AttrValue] = {
    "gen_ai.latency.time_in_queue": 0.125,
    "gen_ai.latency.time_to_first_token": 0.5,
    "gen_ai.latency.e2e": 2.5,
    "gen_ai.latency.time_in_model_prefill": 0.25,
    "gen_ai.latency.time_in_model_decode": 1.75,
    "gen_ai.latency.time_in_model_inference": 2.0,
    "gen_ai.usage.prompt_tokens": 200,
    "gen_ai.usage.completion_tokens": 64,
    "gen_ai.request.id": "req-1",
}


def new_trace_id() -> str:
    while True:
        tid = os.urandom(16).hex()
        if int(tid, 16):
            return tid


def any_value(value: AttrValue) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    return AnyValue(string_value=value)


def make_span(
    trace_id: str,
    name: str,
    attrs: Mapping[str, AttrValue] | None = None,
    *,
    start_ns: int = 1_700_000_000_000_000_000,
    duration_ns: int = 1_000_000,
) -> Span:
    return Span(
        trace_id=bytes.fromhex(trace_id),
        span_id=os.urandom(8),
        name=name,
        kind=Span.SPAN_KIND_SERVER,
        start_time_unix_nano=start_ns,
        end_time_unix_nano=start_ns + duration_ns,
        attributes=[KeyValue(key=k, value=any_value(v)) for k, v in (attrs or {}).items()],
    )


def make_request(spans: Sequence[Span], scope_name: str = "") -> ExportTraceServiceRequest:
    scope_spans = ScopeSpans(spans=list(spans))
    scope_spans.scope.name = scope_name
    return ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[scope_spans])])


def post(
    url: str,
    body: bytes,
    content_type: str = "application/x-protobuf",
    *,
    method: str = "POST",
    headers: Mapping[str, str] | None = None,
) -> tuple[int, str, bytes]:
    """One request on a fresh connection: ``(status, content type, body)``."""
    parts = urlsplit(url)
    assert parts.hostname in ("127.0.0.1", "localhost", "::1"), "loopback only"
    conn = http.client.HTTPConnection(parts.hostname, parts.port, timeout=10)
    try:
        all_headers = {"Content-Type": content_type, **(headers or {})}
        conn.request(method, parts.path, body=body, headers=all_headers)
        response = conn.getresponse()
        return response.status, response.getheader("Content-Type") or "", response.read()
    finally:
        conn.close()
