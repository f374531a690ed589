"""Client spans and W3C trace context: one OpenTelemetry CLIENT span per request.

Every request carries a ``traceparent`` naming its client span, so the server's own
spans (vLLM, TGI, SGLang, the embedded server) land in the same trace and can be joined
to the record by trace id. Spans live on a private ``TracerProvider`` (the global one can
be set only once per process and belongs to the user). Without an exporter nothing would
ever read a recorded span, so none is made: the request gets a ``traceparent`` of fresh
random ids (sampled flag set) and a non-recording span, about a tenth of the SDK span's
cost (start and end were ~5 % of a core at 1,000 req/s). With ``--latency-otlp-endpoint``
spans are recorded and go to the user's collector.

Every request is sampled, whatever the test host's ``OTEL_*`` variables say: the
provider has an always-on sampler (``OTEL_TRACES_SAMPLER=traceidratio`` with
``OTEL_TRACES_SAMPLER_ARG=0`` would otherwise send ``traceparent``s with the sampled flag
clear, and vLLM and SGLang export no span for those: every join would come back empty,
silently). With ``OTEL_SDK_DISABLED=true`` the SDK hands out no-op spans without ids; the
request then still gets a ``traceparent`` of our own making (random W3C ids, sampled
flag set), and only the client span itself is not recorded.

Span names and attributes follow OpenTelemetry's GenAI semantic conventions
(:mod:`.genai_conventions`): ``chat MODEL``, kind CLIENT, ``gen_ai.*`` request and usage
attributes and ``error.type`` on failures; the ``pytest_latency.*`` attributes are extras.

Trace ids may start with a run's prefix (``ClientSpans(prefix=...)``: 16 hex digits,
the high half of the id; the low half stays random, which is what samplers read): the
OTLP receiver then tells the run's own spans from anyone else's and keeps them apart.

Span times: the span starts at the request's *planned* send time and ends when its
response ended, the same boundary as the record's e2e. Monotonic instants are turned into
epoch nanoseconds with one offset per run, never per request.
"""

from __future__ import annotations

import random

from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter
from opentelemetry.sdk.trace.id_generator import RandomIdGenerator
from opentelemetry.sdk.trace.sampling import ALWAYS_ON
from opentelemetry.trace import (
    NonRecordingSpan,
    Span,
    SpanContext,
    SpanKind,
    StatusCode,
    TraceFlags,
    set_span_in_context,
)
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from pytest_latency.driver.genai_conventions import (
    CLASS_ATTRIBUTE,
    PHASE_ATTRIBUTE,
    GenAiTarget,
    span_attributes,
)
from pytest_latency.records import RequestRecord

_PROPAGATOR = TraceContextTextMapPropagator()


class PrefixedIds(RandomIdGenerator):
    """Trace ids whose high 64 bits are a run's prefix (16 hex digits); span ids random."""

    def __init__(self, prefix: str) -> None:
        if len(prefix) != 16:
            raise ValueError(f"a trace id prefix is 16 hex digits, got {prefix!r}")
        self._high = int(prefix, 16) << 64

    def generate_trace_id(self) -> int:
        low = 0
        while low == 0:  # an all-zero half is allowed, but keep ids plainly random
            low = random.getrandbits(64)
        return self._high | low


class ClientSpans:
    """Starts and ends the client span of every request of a run (or of a session)."""

    def __init__(self, exporter: SpanExporter | None = None, prefix: str | None = None) -> None:
        self._ids = RandomIdGenerator() if prefix is None else PrefixedIds(prefix)
        # ALWAYS_ON, never the environment's sampler: see the module docstring.
        self._provider = TracerProvider(
            sampler=ALWAYS_ON,
            resource=Resource.create({"service.name": "pytest-latency"}),
            id_generator=self._ids,
        )
        self._recording = exporter is not None
        if exporter is not None:
            self._provider.add_span_processor(BatchSpanProcessor(exporter))
        self._tracer = self._provider.get_tracer("pytest_latency.driver")

    def start(self, start_epoch_ns: int, headers: dict[str, str], name: str) -> tuple[Span, str]:
        """A started span named ``name`` (``chat MODEL``) and its trace id (32 hex);
        ``traceparent`` is added to ``headers``."""
        if not self._recording:  # nothing would read the span: ids only
            span = self._own_ids()
            context = span.get_span_context()
            trace_id = format(context.trace_id, "032x")
            headers["traceparent"] = f"00-{trace_id}-{context.span_id:016x}-01"
            return span, trace_id
        span = self._tracer.start_span(name, kind=SpanKind.CLIENT, start_time=start_epoch_ns)
        if not span.get_span_context().is_valid:  # OTEL_SDK_DISABLED: a no-op span
            span = self._own_ids()
        _PROPAGATOR.inject(headers, context=set_span_in_context(span))
        return span, format(span.get_span_context().trace_id, "032x")

    def _own_ids(self) -> Span:
        """A non-recording span with fresh W3C ids and the sampled flag: what the
        ``traceparent`` needs when the SDK records nothing."""
        context = SpanContext(
            trace_id=self._ids.generate_trace_id(),
            span_id=self._ids.generate_span_id(),
            is_remote=False,
            trace_flags=TraceFlags(TraceFlags.SAMPLED),
        )
        return NonRecordingSpan(context)

    def shutdown(self) -> None:
        """Flush spans still batched (bounded by the exporter's own timeout)."""
        self._provider.shutdown()


def finish_span(
    span: Span, record: RequestRecord, epoch_offset_ns: int, target: GenAiTarget
) -> None:
    """Describe the finished request on its span and end it at the request's last instant.

    ``epoch_offset_ns`` turns run-relative seconds into epoch ns: ``offset + s * 1e9``.
    """
    if not span.is_recording():  # nothing is kept of it: skip the attributes
        return
    attributes = span_attributes(record, target)
    attributes.update(
        {
            "pytest_latency.request.id": record.id,
            PHASE_ATTRIBUTE: record.phase,
            "pytest_latency.status": record.status.value,
            "pytest_latency.input_tokens": record.input_tokens,
        }
    )
    if record.http_status is not None:
        attributes["http.response.status_code"] = record.http_status
    if record.service_class is not None:
        attributes[CLASS_ATTRIBUTE] = record.service_class
    if record.attempts > 1:
        attributes["pytest_latency.attempts"] = record.attempts
    span.set_attributes(attributes)
    if record.first_token_s is not None:
        span.add_event("first_token", timestamp=epoch_offset_ns + round(record.first_token_s * 1e9))
    if not record.ok:
        span.set_status(StatusCode.ERROR, record.error or record.status.value)
    last_s = record.end_s if record.end_s is not None else None
    span.end(end_time=None if last_s is None else epoch_offset_ns + round(last_s * 1e9))
