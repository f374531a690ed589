"""The client samples every request whatever the host's OTEL_* variables say.

vLLM and SGLang export a request's span only when its ``traceparent`` has the sampled
flag; a host that sets a ratio sampler of 0 (or disables the SDK) must not empty joins.
"""

from __future__ import annotations

from collections.abc import Sequence

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from pytest_latency.driver.tracecontext import ClientSpans


def sampled(flags: str) -> bool:
    """The W3C sampled bit (the SDK may also set the level-2 "random" bit, 0x02)."""
    return int(flags, 16) & 0x01 == 0x01


class Collected(SpanExporter):
    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans.extend(spans)
        return SpanExportResult.SUCCESS


def traceparents(spans: ClientSpans, count: int) -> list[tuple[str, str]]:
    """(traceparent, trace id) of ``count`` started and ended spans."""
    found = []
    for _ in range(count):
        headers: dict[str, str] = {}
        span, trace_id = spans.start(1_000_000_000, headers, "chat m")
        span.end(end_time=2_000_000_000)
        found.append((headers["traceparent"], trace_id))
    return found


@pytest.mark.parametrize(
    "environment",
    [
        {},
        {"OTEL_TRACES_SAMPLER": "traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"},
        {"OTEL_TRACES_SAMPLER": "always_off"},
        {"OTEL_TRACES_SAMPLER": "parentbased_traceidratio", "OTEL_TRACES_SAMPLER_ARG": "0"},
    ],
)
def test_every_request_is_sampled_whatever_the_sampler_variables_say(
    monkeypatch: pytest.MonkeyPatch, environment: dict[str, str]
) -> None:
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    exporter = Collected()
    spans = ClientSpans(exporter)
    sent = traceparents(spans, 20)
    spans.shutdown()
    for traceparent, trace_id in sent:
        version, header_trace, span_id, flags = traceparent.split("-")
        assert (version, header_trace) == ("00", trace_id) and sampled(flags)
        assert int(header_trace, 16) != 0 and int(span_id, 16) != 0
    # The client spans themselves are recorded and exported too.
    assert sorted(format(s.context.trace_id, "032x") for s in exporter.spans) == sorted(
        trace_id for _, trace_id in sent
    )


def test_a_disabled_sdk_still_sends_sampled_traceparents_of_our_own(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    exporter = Collected()
    spans = ClientSpans(exporter)
    sent = traceparents(spans, 50)
    spans.shutdown()
    trace_ids = [trace_id for _, trace_id in sent]
    assert len(set(trace_ids)) == 50  # fresh ids per request, never all zeros
    for traceparent, trace_id in sent:
        _, header_trace, span_id, flags = traceparent.split("-")
        assert header_trace == trace_id and sampled(flags)
        assert int(trace_id, 16) != 0 and int(span_id, 16) != 0
    assert exporter.spans == []  # the SDK is off: nothing recorded, only the ids exist


def test_without_an_exporter_spans_are_ids_only_and_every_traceparent_is_sampled() -> None:
    spans = ClientSpans()  # nothing would read a recorded span: none is made
    sent = []
    for _ in range(50):
        headers: dict[str, str] = {}
        span, trace_id = spans.start(1_000_000_000, headers, "chat m")
        assert not span.is_recording()
        version, header_trace, span_id, flags = headers["traceparent"].split("-")
        assert (version, header_trace, flags) == ("00", trace_id, "01")
        assert format(span.get_span_context().span_id, "016x") == span_id != "0" * 16
        sent.append(trace_id)
    assert len(set(sent)) == 50 and "0" * 32 not in sent
