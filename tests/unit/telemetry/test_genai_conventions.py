"""Client spans and histograms follow OpenTelemetry's GenAI semantic conventions."""

from __future__ import annotations

import numpy as np
import pytest
from opentelemetry.proto.metrics.v1.metrics_pb2 import AggregationTemporality
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from pytest_latency.driver.genai_conventions import (
    TOKEN_ATTRIBUTE_ALIASES,
    GenAiTarget,
    error_type,
)
from pytest_latency.driver.tracecontext import ClientSpans, finish_span
from pytest_latency.records import RequestRecord, Status
from pytest_latency.telemetry.client_metrics import (
    ADVISED_BUCKETS,
    ClientMetrics,
    metrics_url,
    otlp_exporter,
)
from tests.helpers.otlp_collector import attributes, otlp_collector

TARGET = GenAiTarget.of("http://127.0.0.1:8000", "Qwen3-8B", chat=True)
DURATION = "gen_ai.client.operation.duration"
FIRST_CHUNK = "gen_ai.client.operation.time_to_first_chunk"


def completed(identifier: int, phase: str = "steady") -> RequestRecord:
    record = RequestRecord(identifier, phase, intended_s=1.0, input_tokens=30, max_tokens=8)
    record.sent_s, record.first_token_s, record.end_s = 1.001, 1.25, 1.75
    record.itl_s = np.full(7, 0.5 / 7)
    record.status, record.http_status = Status.OK, 200
    record.output_tokens, record.prompt_tokens = 8, 31
    return record


def rejected(identifier: int) -> RequestRecord:
    record = RequestRecord(identifier, "steady", intended_s=2.0, input_tokens=30, max_tokens=8)
    record.sent_s, record.end_s = 2.0, 2.01
    record.status, record.http_status, record.error = Status.REJECTED, 429, "HTTP 429"
    return record


def test_a_span_is_named_operation_and_model_with_the_conventions_attributes() -> None:
    exporter = InMemorySpanExporter()
    spans = ClientSpans(exporter)
    spans._provider.add_span_processor(SimpleSpanProcessor(exporter))  # synchronous for the test
    span, _ = spans.start(10**18, {}, TARGET.span_name)
    finish_span(span, completed(3), 10**18, TARGET)
    (finished,) = [s for s in exporter.get_finished_spans() if s.name == "chat Qwen3-8B"][:1]
    assert finished.kind is SpanKind.CLIENT
    found = dict(finished.attributes or {})
    assert found["gen_ai.operation.name"] == "chat"
    assert found["gen_ai.provider.name"] == "openai"
    assert found["gen_ai.request.model"] == "Qwen3-8B"
    assert found["gen_ai.request.max_tokens"] == 8
    assert found["gen_ai.request.stream"] is True
    assert found["gen_ai.usage.input_tokens"] == 31  # the server's count wins over the plan's
    assert found["gen_ai.usage.output_tokens"] == 8
    assert found["gen_ai.response.time_to_first_chunk"] == pytest.approx(0.25)
    assert (found["server.address"], found["server.port"]) == ("127.0.0.1", 8000)
    assert found["pytest_latency.phase"] == "steady"  # our extras stay, as extras
    assert "error.type" not in found
    spans.shutdown()


def test_a_failed_request_has_error_type_and_an_error_status() -> None:
    exporter = InMemorySpanExporter()
    spans = ClientSpans(exporter)
    spans._provider.add_span_processor(SimpleSpanProcessor(exporter))
    span, _ = spans.start(10**18, {}, "text_completion m")
    finish_span(span, rejected(1), 10**18, GenAiTarget.of("http://127.0.0.1:1", "m", False))
    (finished,) = exporter.get_finished_spans()[:1]
    assert finished.name == "text_completion m"
    assert finished.attributes is not None and finished.attributes["error.type"] == "429"
    assert finished.status.status_code is StatusCode.ERROR
    spans.shutdown()


def test_error_type_is_the_status_code_or_the_failure_kind() -> None:
    timed_out = RequestRecord(0, "s", 0.0, 1, status=Status.TIMEOUT)
    assert error_type(timed_out) == "timeout"
    assert error_type(rejected(0)) == "429"
    assert error_type(completed(0)) is None


def test_the_renamed_token_attributes_are_kept_behind_one_adapter() -> None:
    assert TOKEN_ATTRIBUTE_ALIASES["gen_ai.usage.input_tokens"] == ("gen_ai.usage.prompt_tokens",)
    assert TOKEN_ATTRIBUTE_ALIASES["gen_ai.usage.output_tokens"] == (
        "gen_ai.usage.completion_tokens",
    )


@pytest.mark.parametrize(
    ("traces", "expected"),
    [
        ("http://127.0.0.1:4318/v1/traces", "http://127.0.0.1:4318/v1/metrics"),
        ("http://127.0.0.1:4318/otlp/v1/traces/", "http://127.0.0.1:4318/otlp/v1/metrics"),
        ("http://127.0.0.1:4318", "http://127.0.0.1:4318/v1/metrics"),
    ],
)
def test_metrics_go_to_the_sibling_of_the_traces_url(traces: str, expected: str) -> None:
    assert metrics_url(traces) == expected


def test_one_duration_point_per_ended_request_in_seconds_with_advised_buckets() -> None:
    with otlp_collector() as (url, collected):
        meter = ClientMetrics(otlp_exporter(f"{url}/v1/traces"))
        records = [completed(i) for i in range(5)] + [rejected(5)]
        meter.record(records, TARGET)
        meter.record([completed(6, "burst")], TARGET)  # a second run: counted once more
        meter.shutdown()
    assert set(collected.posts) == {"/v1/metrics"}
    assert collected.histogram_count(DURATION) == 7
    assert collected.histogram_count(FIRST_CHUNK) == 6  # the rejected one had no chunk
    assert collected.histogram_count("gen_ai.client.operation.time_per_output_chunk") == 42
    assert collected.histogram_count("gen_ai.client.token.usage") == 12  # input and output
    (duration,) = {m.name: m for m in collected.metrics if m.name == DURATION}.values()
    assert duration.unit == "s"
    assert duration.histogram.aggregation_temporality == (
        AggregationTemporality.AGGREGATION_TEMPORALITY_DELTA
    )
    points = collected.histogram_points(DURATION)
    assert {tuple(p.explicit_bounds) for p in points} == {ADVISED_BUCKETS[DURATION]}
    by_phase = {
        (found["pytest_latency.phase"], found.get("error.type")): point
        for point in points
        for found in [attributes(point.attributes)]
    }
    assert by_phase[("steady", None)].count == 5
    assert by_phase[("steady", None)].sum == pytest.approx(5 * 0.75)
    assert by_phase[("steady", "429")].count == 1
    assert by_phase[("burst", None)].count == 1
    found = attributes(points[0].attributes)
    assert found["gen_ai.operation.name"] == "chat"
    assert found["gen_ai.request.model"] == "Qwen3-8B"
    assert found["server.port"] == 8000


def test_data_points_carry_the_service_class() -> None:
    with otlp_collector() as (url, collected):
        meter = ClientMetrics(otlp_exporter(f"{url}/v1/traces"))
        records = [completed(0), completed(1), completed(2)]
        records[0].service_class = records[1].service_class = "premium"
        meter.record(records, TARGET)
        meter.shutdown()
    counts = {
        attributes(point.attributes).get("pytest_latency.class"): point.count
        for point in collected.histogram_points(DURATION)
    }
    assert counts == {"premium": 2, None: 1}
