"""The reference server's own telemetry: vLLM-style request spans and ``Server-Timing``.

With ``SimConfig.otlp_traces_endpoint`` set, every request that reached the queue and
ended (finished; or expired, cancelled, aborted: status ERROR) becomes one span, as
vLLM exports it: name ``llm_request``, kind SERVER, child of the caller's W3C
``traceparent`` (so it lands in the client's trace), attributes in seconds
``gen_ai.latency.time_in_queue``, ``.time_to_first_token`` (from arrival), ``.e2e``,
``.time_in_model_prefill`` (queue exit to first token), ``.time_in_model_decode``
(first token to end), ``.time_in_model_inference`` (their sum), plus
``gen_ai.usage.prompt_tokens`` / ``.completion_tokens``, ``gen_ai.request.id`` (the
``X-Request-Id`` header when sent) and ``gen_ai.response.model``.

As in vLLM (its provider keeps the SDK's default, parent-based sampler), a request
whose ``traceparent`` has the sampled flag clear gets no span at all; a request
without one gets a root span. ``SimConfig.otlp_sampling="all"`` exports every request.

Spans are built once per finished request on the event loop (never per token), from
the request's :class:`~pytest_latency.sim.engine.ServerTimings`: the very instants the
``Server-Timing`` header and the snapshot report. Perf-counter instants become epoch
nanoseconds through one offset taken at startup. Spans go over OTLP/HTTP (protobuf)
from a private ``TracerProvider`` (the global one is never touched) through a batch
processor; export failures are logged by the OpenTelemetry SDK and never reach request
handling. Stopping flushes, bounded by the exporter timeout.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from urllib.parse import urlsplit

import requests
from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, ParentBased
from opentelemetry.trace import SpanKind, Status, StatusCode, get_current_span
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from pytest_latency.sim.engine import ServerTimings, State
from pytest_latency.sim.protocol import Api, response_id
from pytest_latency.telemetry.settings import OTLP_TOKEN_VARIABLE

SPAN_NAME = "llm_request"  # vLLM's request span
SERVICE_NAME = "pytest-latency-sim"
TRACER_NAME = "pytest_latency.sim"
EXPORT_TIMEOUT_S = 5.0  # per export, retries included; also bounds the flush on stop
SCHEDULE_DELAY_MS = 200  # a finished request's span leaves within ~0.2 s
_EXPORTED = frozenset({State.OK, State.EXPIRED, State.CANCELLED})
_LOOPBACK = frozenset({"127.0.0.1", "localhost", "::1"})
_PROPAGATOR = TraceContextTextMapPropagator()

log = logging.getLogger("pytest_latency.sim")


@dataclass(frozen=True, slots=True)
class RequestTrace:
    """What a request's span needs besides its timings."""

    api: Api
    parent: Context | None  # the caller's trace context; None: a root span
    request_id: str | None  # the X-Request-Id header, if sent


def extract_parent(headers: Mapping[str, str]) -> Context | None:
    """The W3C trace context of ``headers`` (``traceparent``, ``tracestate``), if valid."""
    context = _PROPAGATOR.extract(headers)
    return context if get_current_span(context).get_span_context().is_valid else None


def time_in_queue(timings: ServerTimings) -> float | None:
    """Seconds queued: until a replica took it, or until it left the queue otherwise."""
    left = timings.queue_exit if timings.queue_exit is not None else timings.end
    if timings.queue_enter is None or left is None:
        return None
    return left - timings.queue_enter


def server_timing(timings: ServerTimings, *, final: bool) -> dict[str, str]:
    """A ``Server-Timing`` header (ms): ``queue``, and with ``final`` ``prefill``/``decode``."""
    parts: list[str] = []
    queued = time_in_queue(timings)
    if queued is not None:
        parts.append(f"queue;dur={queued * 1e3:.3f}")
    if final:
        for name, value in (("prefill", timings.prefill_s), ("decode", timings.decode_s)):
            if value is not None:
                parts.append(f"{name};dur={value * 1e3:.3f}")
    return {"Server-Timing": ", ".join(parts)} if parts else {}


def span_attributes(
    timings: ServerTimings, request_id: str, model: str
) -> dict[str, str | int | float]:
    """vLLM's ``llm_request`` attributes for one ended request (seconds, token counts)."""
    attributes: dict[str, str | int | float] = {
        "gen_ai.response.model": model,
        "gen_ai.request.id": request_id,
        "gen_ai.usage.prompt_tokens": timings.prompt_tokens,
        "gen_ai.usage.completion_tokens": timings.completion_tokens,
    }
    if timings.end is not None:
        attributes["gen_ai.latency.e2e"] = timings.end - timings.arrival
    queued = time_in_queue(timings)
    if queued is not None:
        attributes["gen_ai.latency.time_in_queue"] = queued
    if timings.first_token is not None and timings.prefill_s is not None:
        attributes["gen_ai.latency.time_to_first_token"] = timings.first_token - timings.arrival
        attributes["gen_ai.latency.time_in_model_prefill"] = timings.prefill_s
    if timings.decode_s is not None and timings.prefill_s is not None:
        attributes["gen_ai.latency.time_in_model_decode"] = timings.decode_s
        attributes["gen_ai.latency.time_in_model_inference"] = timings.prefill_s + timings.decode_s
    return attributes


class _TraceIds(RandomIdGenerator):
    """Root spans take the trace id the gateway already gave the request."""

    def __init__(self) -> None:
        self.next_trace_id = 0  # set just before starting a root span, on the loop thread

    def generate_trace_id(self) -> int:
        value, self.next_trace_id = self.next_trace_id, 0
        return value or super().generate_trace_id()


class _GuardedExporter(SpanExporter):
    """Counts failed exports, never raises, and shuts the real exporter down once."""

    def __init__(self, inner: SpanExporter) -> None:
        self._inner = inner
        self._lock = threading.Lock()
        self._closed = False
        self.failed = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        try:
            result = self._inner.export(spans)
        except Exception:  # the batch worker must survive anything the exporter does
            log.debug("OTLP span export raised", exc_info=True)
            result = SpanExportResult.FAILURE
        if result is not SpanExportResult.SUCCESS:
            self.failed += 1
        return result

    def shutdown(self) -> None:
        with self._lock:
            closed, self._closed = self._closed, True
        if not closed:
            with contextlib.suppress(Exception):
                self._inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class SpanExport:
    """One ``llm_request`` span per ended request, batched to an OTLP/HTTP endpoint."""

    def __init__(
        self, endpoint: str, model: str, timeout_s: float = EXPORT_TIMEOUT_S,
        exporter: SpanExporter | None = None, sampling: str = "parent",
    ) -> None:  # fmt: skip
        self.model = model
        self.timeout_s = timeout_s
        # One offset for the server's life: perf_counter instants to epoch ns.
        self._offset_ns = time.time_ns() - time.perf_counter_ns()
        self._ids = _TraceIds()
        self._exporter = _GuardedExporter(exporter or _otlp_exporter(endpoint, timeout_s))
        self._provider = TracerProvider(
            sampler=ParentBased(ALWAYS_ON) if sampling == "parent" else ALWAYS_ON,
            id_generator=self._ids, shutdown_on_exit=False,
            resource=Resource.create({"service.name": SERVICE_NAME}),
        )  # fmt: skip
        self._provider.add_span_processor(
            BatchSpanProcessor(self._exporter, schedule_delay_millis=SCHEDULE_DELAY_MS)
        )
        self._tracer = self._provider.get_tracer(TRACER_NAME)
        self._record_errors = 0

    @property
    def failed_exports(self) -> int:
        """Export calls that did not succeed (the collector down, or refusing)."""
        return self._exporter.failed

    def epoch_ns(self, instant: float) -> int:
        """A ``time.perf_counter()`` instant as Unix epoch nanoseconds."""
        return self._offset_ns + round(instant * 1e9)

    def record(self, timings: ServerTimings, trace: RequestTrace) -> None:
        """Queue the span of one ended request for export; never raises."""
        if timings.outcome not in _EXPORTED or timings.end is None:
            return  # refused at the door (429, not ready): vLLM has no span for those
        try:
            self._record(timings, trace, timings.end)
        except Exception:
            self._record_errors += 1
            level = logging.WARNING if self._record_errors == 1 else logging.DEBUG
            log.log(level, "could not record the span of request %d", timings.id, exc_info=True)
        finally:
            self._ids.next_trace_id = 0

    def _record(self, timings: ServerTimings, trace: RequestTrace, end: float) -> None:
        if trace.parent is None and timings.trace_id:
            self._ids.next_trace_id = int(timings.trace_id, 16)
        request_id = trace.request_id or response_id(trace.api, timings.id)
        span = self._tracer.start_span(
            SPAN_NAME, context=trace.parent or Context(), kind=SpanKind.SERVER,
            attributes=span_attributes(timings, request_id, self.model),
            start_time=self.epoch_ns(timings.arrival),
        )  # fmt: skip
        if timings.outcome is not State.OK:
            span.set_status(Status(StatusCode.ERROR, timings.outcome.value))
        span.end(end_time=self.epoch_ns(end))

    def shutdown(self) -> bool:
        """Flush pending spans and stop, within about ``timeout_s`` (+1 s); blocking.

        False when the flush did not finish in time: a retrying export is then
        interrupted and its spans are lost, so a dead collector cannot hang ``stop()``.
        """
        worker = threading.Thread(
            target=self._provider.shutdown, name="pytest-latency-sim-spans", daemon=True
        )
        worker.start()
        worker.join(self.timeout_s)
        if not worker.is_alive():
            return True
        self._exporter.shutdown()  # wakes the exporter from its retry back-off
        worker.join(1.0)
        return False


def _otlp_exporter(endpoint: str, timeout_s: float) -> OTLPSpanExporter:
    session = requests.Session()
    # A loopback collector (the plugin's receiver) must not go through an HTTP proxy.
    session.trust_env = urlsplit(endpoint).hostname not in _LOOPBACK
    # The receiver's token (--latency-otlp-token), when it asks for one.
    token = os.environ.get(OTLP_TOKEN_VARIABLE)
    headers = {"Authorization": f"Bearer {token}"} if token else None
    return OTLPSpanExporter(endpoint=endpoint, timeout=timeout_s, session=session, headers=headers)
