"""A session's telemetry: the OTLP receiver, client span export, scraping, and the join.

The pieces (protobuf, OpenTelemetry SDK, httpx) load when first used, not when the
session is created: the plugin creates a session in every pytest run.
"""

from __future__ import annotations

import os
import secrets
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING

from pytest_latency.errors import ReceiverUnavailable as ReceiverUnavailable  # re-exported
from pytest_latency.telemetry.settings import (
    DEFAULT_METRICS_INTERVAL_S,
    OTLP_TOKEN_VARIABLE,
    TelemetrySettings,
    parse_listen_address,
)

if TYPE_CHECKING:
    from pytest_latency.driver.genai_conventions import GenAiTarget
    from pytest_latency.driver.tracecontext import ClientSpans
    from pytest_latency.records import RequestRecord
    from pytest_latency.telemetry.client_metrics import ClientMetrics
    from pytest_latency.telemetry.join import JoinReport
    from pytest_latency.telemetry.prometheus import MetricsSeries
    from pytest_latency.telemetry.receiver import OtlpReceiver

# Kinds that serve no Prometheus /metrics: scraping them would only record failures
# (Ollama's routes, server/routes.go and openai/openai.go, have none).
NO_METRICS_KINDS = frozenset({"ollama"})

__all__ = (
    "DEFAULT_METRICS_INTERVAL_S",
    "Observation",
    "ReceiverUnavailable",
    "TelemetryHub",
    "TelemetrySettings",
)


class Observation:
    """What was scraped during one run; ``series`` is set when the run ends."""

    def __init__(self) -> None:
        self.series: MetricsSeries | None = None
        self.time_zero_ns: int | None = None  # the driver's time zero, once known


class TelemetryHub:
    def __init__(self, settings: TelemetrySettings) -> None:
        self.settings = settings
        # The high half of this session's trace ids: the receiver keeps spans of these
        # apart from any other sender's (docs/tracing.md, "Limits").
        self.trace_prefix = secrets.token_hex(8)
        self._receiver: OtlpReceiver | None = None
        self._spans: ClientSpans | None = None
        self._metrics: ClientMetrics | None = None

    @property
    def receiver(self) -> OtlpReceiver:
        """The session's span receiver, started on first use (see :meth:`start_receiver`)."""
        return self.start_receiver()

    def start_receiver(self) -> OtlpReceiver:
        """Listen now (idempotent): at the configured address, else an ephemeral port.

        Raises :class:`ReceiverUnavailable` when the address cannot be bound.
        """
        if self._receiver is None:
            from pytest_latency.telemetry.receiver import OtlpReceiver

            host, port = ("127.0.0.1", 0)
            if self.settings.receiver_address:
                host, port = parse_listen_address(self.settings.receiver_address)
            token = self.settings.token
            if token is not None:  # the servers the plugin starts (the embedded one) send it
                os.environ.setdefault(OTLP_TOKEN_VARIABLE, token.reveal())
            try:
                self._receiver = OtlpReceiver(
                    host=host, port=port, token=self.settings.token,
                    trace_prefix=self.trace_prefix,
                ).start()  # fmt: skip
            except OSError as error:
                raise ReceiverUnavailable(f"cannot listen on {host}:{port}: {error}") from None
        return self._receiver

    @property
    def client_spans(self) -> ClientSpans:
        if self._spans is None:
            from pytest_latency.driver.tracecontext import ClientSpans

            exporter = None
            if self.settings.export_endpoint:
                from opentelemetry.exporter.otlp.proto.http.trace_exporter import (
                    OTLPSpanExporter,
                )

                exporter = OTLPSpanExporter(endpoint=self.settings.export_endpoint)
            self._spans = ClientSpans(exporter, prefix=self.trace_prefix)
        return self._spans

    def export_client_metrics(self, records: Sequence[RequestRecord], target: GenAiTarget) -> None:
        """Send a run's GenAI client histograms to the sibling ``/v1/metrics`` of the span
        export URL (telemetry/client_metrics.py); nothing without ``--latency-otlp-endpoint``."""
        if not self.settings.export_endpoint:
            return
        if self._metrics is None:
            from pytest_latency.telemetry.client_metrics import ClientMetrics, otlp_exporter

            self._metrics = ClientMetrics(otlp_exporter(self.settings.export_endpoint))
        self._metrics.record(records, target)

    @contextmanager
    def observe(self, base_url: str, server_kind: str) -> Iterator[Observation]:
        """Scrape the server's ``/metrics`` while the block runs (if enabled, and if the
        kind has any)."""
        observation = Observation()
        if self.settings.metrics_interval_s <= 0 or server_kind in NO_METRICS_KINDS:
            yield observation
            return
        from pytest_latency.telemetry.prometheus import KINDS, MetricsScraper

        kind = server_kind if server_kind in KINDS else "auto"
        scraper = MetricsScraper(
            f"{base_url}/metrics", kind, self.settings.metrics_interval_s,
            time_zero_ns=time.perf_counter_ns(),
        )  # fmt: skip
        scraper.start()
        try:
            yield observation
        finally:
            if observation.time_zero_ns is not None:
                scraper.time_zero_ns = observation.time_zero_ns
            observation.series = scraper.stop()

    def join(
        self,
        records: Sequence[RequestRecord],
        *,
        expect_spans: bool,
        max_wait_s: float | None = None,
    ) -> JoinReport:
        """Attach server durations to ``records``; wait for late spans only if expected
        (at most the grace period, and at most ``max_wait_s`` when given)."""
        from pytest_latency.telemetry.join import join_records

        receiver = self._receiver
        if receiver is None and not expect_spans:
            return join_records(records, {})
        receiver = self.receiver
        wanted = [record.trace_id for record in records if record.ok]
        started = time.monotonic()
        grace = self.settings.grace_s if expect_spans else 0.0
        if max_wait_s is not None:
            grace = max(0.0, min(grace, max_wait_s))
        timings = receiver.timings(wanted, grace_s=grace)
        waited = time.monotonic() - started
        unknown = receiver.unknown_trace_ids([record.trace_id for record in records])
        receiver.clear()
        return join_records(
            records, timings, unknown_traces=unknown, waited_s=waited,
            receiver=receiver.traces_url, expect_spans=expect_spans,
        )  # fmt: skip

    def close(self) -> None:
        if self._metrics is not None:
            self._metrics.shutdown()
            self._metrics = None
        if self._spans is not None:
            self._spans.shutdown()
            self._spans = None
        if self._receiver is not None:
            self._receiver.stop()
            self._receiver = None
