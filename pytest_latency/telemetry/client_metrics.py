"""The GenAI conventions' client histograms, exported over OTLP/HTTP (docs/tracing.md).

With ``--latency-otlp-endpoint URL`` (the collector's traces URL) the four client
histograms go to the sibling ``/v1/metrics`` of that URL:

- ``gen_ai.client.operation.duration`` (s): one measurement per request that ended
  (``error.type`` on the failed ones), from its planned send to its last byte;
- ``gen_ai.client.operation.time_to_first_chunk`` (s): one per request whose first
  content chunk came, from its planned send;
- ``gen_ai.client.operation.time_per_output_chunk`` (s): one per gap between content
  chunks;
- ``gen_ai.client.token.usage`` ({token}): input and output tokens of each completed
  request (``gen_ai.token.type``).

Each carries the run's request attributes (operation, provider, model, server address
and port) plus ``pytest_latency.phase`` and ``pytest_latency.class``. Buckets are those
the conventions advise. Temporality is delta, and the measurements of a run are
recorded from its records when it ends and flushed at once: the counts of every export
add up to the requests measured, with nothing counted twice and nothing on the
driver's hot path. Instruments come from the ``opentelemetry-semantic-conventions``
package's own constructors.
"""

from __future__ import annotations

from collections.abc import Sequence
from urllib.parse import urlsplit, urlunsplit

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.sdk.metrics import Histogram, MeterProvider
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    MetricExporter,
    PeriodicExportingMetricReader,
)
from opentelemetry.sdk.metrics.view import ExplicitBucketHistogramAggregation, View
from opentelemetry.sdk.resources import Resource
from opentelemetry.semconv._incubating.attributes.gen_ai_attributes import (
    GEN_AI_TOKEN_TYPE,
    GenAiTokenTypeValues,
)
from opentelemetry.semconv._incubating.metrics import gen_ai_metrics as metrics
from opentelemetry.semconv.attributes.error_attributes import ERROR_TYPE

from pytest_latency.driver.genai_conventions import (
    CLASS_ATTRIBUTE,
    PHASE_ATTRIBUTE,
    GenAiTarget,
    error_type,
    usage_input_tokens,
)
from pytest_latency.records import RequestRecord

__all__ = ("ADVISED_BUCKETS", "ClientMetrics", "metrics_url")

# The conventions' advised explicit bucket boundaries, per histogram.
_SECONDS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92)
_CHUNK_SECONDS = (0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5)
_TOKENS = tuple(float(4**power) for power in range(14))  # 1, 4, 16, ... 67,108,864
ADVISED_BUCKETS: dict[str, tuple[float, ...]] = {
    metrics.GEN_AI_CLIENT_OPERATION_DURATION: _SECONDS,
    metrics.GEN_AI_CLIENT_OPERATION_TIME_TO_FIRST_CHUNK: _SECONDS,
    metrics.GEN_AI_CLIENT_OPERATION_TIME_PER_OUTPUT_CHUNK: _CHUNK_SECONDS,
    metrics.GEN_AI_CLIENT_TOKEN_USAGE: _TOKENS,
}
EXPORT_TIMEOUT_S = 5.0  # a collector that is down costs a run at most this, once
# Exports happen when a run ends (force_flush); the periodic timer only backs that up.
_BACKSTOP_INTERVAL_MS = 60_000.0


def metrics_url(traces_url: str) -> str:
    """The sibling ``/v1/metrics`` of an OTLP/HTTP traces URL (``.../v1/traces``); a URL
    not ending in ``/traces`` gets ``/v1/metrics`` appended to its path."""
    parts = urlsplit(traces_url)
    path = parts.path.rstrip("/")
    if path.endswith("/traces"):
        path = path[: -len("traces")] + "metrics"
    else:
        path += "/v1/metrics"
    return urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))


def otlp_exporter(traces_url: str) -> OTLPMetricExporter:
    """OTLP/HTTP protobuf to ``traces_url``'s sibling, delta temporality for histograms."""
    return OTLPMetricExporter(
        endpoint=metrics_url(traces_url),
        timeout=EXPORT_TIMEOUT_S,
        preferred_temporality={Histogram: AggregationTemporality.DELTA},
    )


class ClientMetrics:
    """The session's meter: records each run's requests, then exports them."""

    def __init__(self, exporter: MetricExporter) -> None:
        reader = PeriodicExportingMetricReader(
            exporter, export_interval_millis=_BACKSTOP_INTERVAL_MS
        )
        views = [
            View(instrument_name=name, aggregation=ExplicitBucketHistogramAggregation(bounds))
            for name, bounds in ADVISED_BUCKETS.items()
        ]
        self._provider = MeterProvider(
            metric_readers=[reader],
            resource=Resource.create({"service.name": "pytest-latency"}),
            views=views,
        )
        meter = self._provider.get_meter("pytest_latency.driver")
        self._duration = metrics.create_gen_ai_client_operation_duration(meter)
        self._first_chunk = metrics.create_gen_ai_client_operation_time_to_first_chunk(meter)
        self._per_chunk = metrics.create_gen_ai_client_operation_time_per_output_chunk(meter)
        self._tokens = metrics.create_gen_ai_client_token_usage(meter)

    def record(self, records: Sequence[RequestRecord], target: GenAiTarget) -> None:
        """One measurement per request (and per chunk gap), then export them all."""
        shared = target.attributes()
        for record in records:
            if record.never_sent:  # never offered: not an operation
                continue
            attributes = {**shared, PHASE_ATTRIBUTE: record.phase}
            if record.service_class is not None:
                attributes[CLASS_ATTRIBUTE] = record.service_class
            failure = error_type(record)
            if failure is not None:
                attributes[ERROR_TYPE] = failure
            self._record_one(record, attributes)
        self._provider.force_flush(timeout_millis=round(EXPORT_TIMEOUT_S * 1000))

    def _record_one(self, record: RequestRecord, attributes: dict[str, str | int | bool]) -> None:
        e2e, ttft = record.e2e_s, record.ttft_s
        if e2e is not None:
            self._duration.record(e2e, attributes)
        if ttft is not None:
            self._first_chunk.record(ttft, attributes)
        for gap in record.itl_s:
            self._per_chunk.record(float(gap), attributes)
        if record.ok:
            tokens = {
                GenAiTokenTypeValues.INPUT.value: usage_input_tokens(record),
                GenAiTokenTypeValues.OUTPUT.value: record.output_tokens,
            }
            for kind, count in tokens.items():
                if count is not None:
                    self._tokens.record(count, {**attributes, GEN_AI_TOKEN_TYPE: kind})

    def shutdown(self) -> None:
        self._provider.shutdown(timeout_millis=round(EXPORT_TIMEOUT_S * 1000))
