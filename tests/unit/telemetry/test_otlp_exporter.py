"""The receiver accepts the real OpenTelemetry OTLP/HTTP exporter (protobuf, gzip, JSON).

A private TracerProvider per test (the global one can be set once per process); the
span's trace id is chosen through a remote parent context, as a server honouring the
client's ``traceparent`` would produce it.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from opentelemetry import trace
from opentelemetry.exporter.otlp.proto.http import Compression
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor, SpanExportResult
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import NonRecordingSpan, SpanContext, SpanKind, TraceFlags

from pytest_latency.telemetry.receiver_thread import ThreadReceiver
from tests.helpers.otlp_helpers import VLLM_ATTRS, new_trace_id, post


@pytest.fixture
def receiver() -> Iterator[ThreadReceiver]:
    with ThreadReceiver() as running:
        yield running


def _emit_llm_request(provider: TracerProvider, trace_id: str) -> None:
    parent = SpanContext(
        trace_id=int(trace_id, 16),
        span_id=0x00F067AA0BA902B7,
        is_remote=True,
        trace_flags=TraceFlags(TraceFlags.SAMPLED),
    )
    context = trace.set_span_in_context(NonRecordingSpan(parent))
    tracer = provider.get_tracer("vllm.llm_engine")
    with tracer.start_as_current_span(
        "llm_request", context=context, kind=SpanKind.SERVER, attributes=VLLM_ATTRS
    ):
        pass


@pytest.mark.parametrize("compression", [Compression.NoCompression, Compression.Gzip])
def test_real_exporter_spans_join_by_trace_id(
    receiver: ThreadReceiver, compression: Compression
) -> None:
    trace_id = new_trace_id()
    exporter = OTLPSpanExporter(endpoint=receiver.traces_url, timeout=5, compression=compression)
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    try:
        _emit_llm_request(provider, trace_id)
    finally:
        provider.shutdown()
    timings = receiver.timings([trace_id], grace_s=5)[trace_id]
    assert timings.source == "otlp:vllm"
    assert timings.queue_wait_s == pytest.approx(0.125)
    assert timings.server_ttft_s == pytest.approx(0.5)
    assert timings.prefill_s == pytest.approx(0.25)
    assert timings.decode_s == pytest.approx(1.75)
    assert timings.server_e2e_s == pytest.approx(2.5)
    assert (timings.prompt_tokens, timings.completion_tokens) == (200, 64)
    assert receiver.bad_requests == 0


def _recorded_spans(trace_id: str) -> tuple[ReadableSpan, ...]:
    memory = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(memory))
    _emit_llm_request(provider, trace_id)
    provider.shutdown()
    return memory.get_finished_spans()


def test_exporter_gets_success_and_sends_once(receiver: ThreadReceiver) -> None:
    trace_id = new_trace_id()
    exporter = OTLPSpanExporter(endpoint=receiver.traces_url, timeout=5)
    try:
        assert exporter.export(_recorded_spans(trace_id)) == SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()
    assert receiver.exports == 1  # one POST: the 200 answer did not provoke a retry
    assert receiver.spans_received == 1
    assert trace_id in receiver.timings([trace_id], grace_s=2)


def test_hand_built_otlp_json(receiver: ThreadReceiver) -> None:
    """A body written by hand after the OTLP/JSON spec: hex ids, camelCase, int64 strings."""
    trace_id = new_trace_id()
    body = (
        '{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name",'
        '"value":{"stringValue":"vllm"}}]},"scopeSpans":[{"scope":{"name":"vllm.llm_engine"},'
        '"spans":[{"traceId":"TRACE_ID","spanId":"00f067aa0ba902b7","name":"llm_request","kind":2,'
        '"startTimeUnixNano":"1700000000000000000","endTimeUnixNano":"1700000002500000000",'
        '"attributes":['
        '{"key":"gen_ai.latency.time_in_queue","value":{"doubleValue":0.125}},'
        '{"key":"gen_ai.latency.time_to_first_token","value":{"doubleValue":0.5}},'
        '{"key":"gen_ai.usage.completion_tokens","value":{"intValue":"64"}}]}]}]}]}'
    ).replace("TRACE_ID", trace_id)
    status, ctype, answer = post(receiver.traces_url, body.encode(), "application/json")
    assert (status, ctype, answer) == (200, "application/json", b"{}")
    timings = receiver.timings([trace_id], grace_s=2)[trace_id]
    assert timings.queue_wait_s == 0.125
    assert timings.server_ttft_s == 0.5
    assert timings.completion_tokens == 64
