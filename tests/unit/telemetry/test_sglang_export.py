"""Our receiver takes what SGLang sends when pointed straight at it.

``python/sglang/srt/observability/trace.py``: with
``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL=http/protobuf`` SGLang builds the SDK's
``opentelemetry.exporter.otlp.proto.http.trace_exporter.OTLPSpanExporter(endpoint=URL)``
(POST of protobuf to the URL as given), its tracer is ``sglang server``, and its request
spans continue the caller's ``traceparent``; the stage slices are child spans.
"""

from __future__ import annotations

from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.trace import set_span_in_context
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from pytest_latency.telemetry.receiver_thread import ThreadReceiver

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
T0 = 1_760_000_000_000_000_000


def test_sglang_http_protobuf_spans_join_under_the_clients_trace_id() -> None:
    with ThreadReceiver() as receiver:
        exporter = OTLPSpanExporter(endpoint=receiver.traces_url)  # as SGLang builds it
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        tracer = provider.get_tracer("sglang server")
        parent = TraceContextTextMapPropagator().extract(
            {"traceparent": f"00-{TRACE_ID}-00f067aa0ba902b7-01"}
        )
        root = tracer.start_span("Req 1a2b", context=parent, start_time=T0)
        inside = set_span_in_context(root)
        for name, start_ms, end_ms in (("prefill_waiting", 0, 200), ("prefill_forward", 200, 260)):
            slice_span = tracer.start_span(name, context=inside, start_time=T0 + start_ms * 10**6)
            slice_span.end(end_time=T0 + end_ms * 10**6)
        root.end(end_time=T0 + 900 * 10**6)
        provider.shutdown()
        timings = receiver.timings([TRACE_ID], grace_s=5.0)
    got = timings[TRACE_ID]
    assert got.source == "otlp:sglang"
    assert got.queue_wait_s is not None and abs(got.queue_wait_s - 0.2) < 1e-9
    assert got.prefill_s is not None and abs(got.prefill_s - 0.06) < 1e-9
