"""One request's life: send at its planned instant, read the stream, classify the end.

Status rules (exactly one per offered request):

- ``ok``: 2xx and the stream ended with ``data: [DONE]``, or it ended cleanly at EOF
  after a choice reported a ``finish_reason`` (a finished stream without the marker).
- ``rejected``: HTTP 429 or 503 (admission control said no).
- ``http_error``: any other non-2xx status, or an ``{"error": ...}`` event inside a 2xx
  stream (the server failed the request; the error text says which).
- ``timeout``: no complete response by ``intended + workload.timeout_s``.
- ``connection_error``: the transport failed: connect refused or reset, the peer closed
  before or during the response (including a chunked body cut short), TLS failures.
- ``protocol_error``: the bytes arrived but are not a valid response or stream: HTTP
  framing the parser rejects, a head, line or body over its limit
  (:class:`.limits.ResponseLimits`), a Content-Encoding the client cannot decode,
  malformed JSON in a data line, a chunk of the wrong shape, or a clean EOF with neither
  ``[DONE]`` nor a ``finish_reason`` ("stream ended without [DONE]").
- ``cancelled``: the run was cancelled before the request finished (the default of
  every record until one of the above is decided).

A 2xx stream that ends properly without any content chunk (only ``[DONE]``, or a
model that stopped at once) delivered nothing: ``http_error`` ("empty answer"), and so
is a stream whose ``finish_reason`` is ``abort`` or ``error`` (the server gave up on it).
With the workload's ``retry:`` a rejected request is sent again inside its own task
(:mod:`.retry`): one record, its status the last attempt's.
A status, once decided, is final: a 2xx stream that got ``[DONE]`` stays ``ok`` even if
the connection then fails while the client reads the rest of the body.
``end_s`` is set when the body ended by itself (EOF or ``[DONE]``, or a payload that
made the client stop); timeouts and transport failures keep only the instants reached.

Instants: ``sent_s`` is when the transport writes the request (httpcore's "headers
written" trace, or the hot path's hand-off to the socket), or the hand-off to the
transport when the request never got that far (connect refused). Chunk instants are
taken once per socket read, before any parsing: chunks that arrive in one read share an
instant (an ITL gap of 0 is what the client saw).

Containment: nothing raised while reading or decoding one response leaves that request;
an unexpected exception is recorded as a ``protocol_error`` naming it.
"""

from __future__ import annotations

import contextlib
import json
import random
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial

import anyio
import numpy as np
from opentelemetry.trace import Span

from pytest_latency.driver.encoding import encoding_problem
from pytest_latency.driver.errors import http_error_text, safe_text
from pytest_latency.driver.genai_conventions import GenAiTarget
from pytest_latency.driver.limits import REJECTED_STATUSES, ResponseLimits, check_deadline
from pytest_latency.driver.outcome import UNDECIDED, decide, decide_stream_end
from pytest_latency.driver.retry import parse_retry_after, send_with_retries
from pytest_latency.driver.sinks import ErrorSink, StreamSink
from pytest_latency.driver.sse import StreamState
from pytest_latency.driver.tracecontext import ClientSpans, finish_span
from pytest_latency.driver.transport import ExchangeFailure, Response, Transport, unreadable
from pytest_latency.records import RequestRecord, Status
from pytest_latency.secret import Secret, redact
from pytest_latency.spec.traffic import Retry, ServiceClass
from pytest_latency.workload.plan import PlannedRequest

_UNSET_GENAI = GenAiTarget("", "")


@dataclass(slots=True)
class PreparedSend:
    """A request ready to go (:meth:`Sender.prepare`)."""

    headers: dict[str, str] = field(repr=False)  # may carry credentials
    span: Span
    content: bytes = field(repr=False)


@dataclass(slots=True)
class Sender:
    """Everything requests of one run share; ``t0_ns`` is time zero (perf_counter ns)."""

    transport: Transport
    headers: Mapping[str, str] = field(repr=False)  # may carry credentials
    model: str
    chat: bool
    extra_body: Mapping[str, object]
    timeout_s: float
    spans: ClientSpans
    limits: ResponseLimits = field(default_factory=ResponseLimits)
    secrets: tuple[Secret, ...] = field(default=(), repr=False)  # hidden in error texts
    record_content: bool = False  # keep prompt and answer text in records (opt-in)
    continuous_usage_stats: bool = False  # ask for usage on every chunk (vLLM only)
    t0_ns: int = 0
    finished: int = 0  # requests whose send ended (any status), for progress reports
    # Epoch ns minus perf_counter ns, taken once: turns monotonic instants into span times.
    clock_offset_ns: int = field(default_factory=lambda: time.time_ns() - time.perf_counter_ns())
    # The run's operation, model and server in GenAI terms (span names and attributes).
    genai: GenAiTarget = _UNSET_GENAI  # made from model and api when not given
    retry: Retry | None = None  # retry rejected requests (driver/retry.py)
    # The workload's service classes by name: their headers and ``priority`` per request.
    classes: Mapping[str, ServiceClass] = field(default_factory=dict)
    retry_rng: random.Random = field(default_factory=random.Random, repr=False)  # jitter

    def __post_init__(self) -> None:
        check_deadline(self.timeout_s)
        if self.genai is _UNSET_GENAI:
            self.genai = GenAiTarget.of("", self.model, self.chat)

    def body(self, request: PlannedRequest, history: Sequence[tuple[str, str]] = ()) -> bytes:
        """The request body; ``history`` is a session's earlier (role, text) messages."""
        body: dict[str, object] = {"model": self.model}
        if self.chat:
            messages = [{"role": role, "content": text} for role, text in history]
            body["messages"] = [*messages, {"role": "user", "content": request.prompt}]
        else:
            body["prompt"] = "\n".join([*(text for _, text in history), request.prompt])
        body["max_tokens"] = request.output_tokens
        body["stream"] = True
        service_class = self.classes.get(request.service_class or "")
        if service_class is not None and service_class.priority is not None:
            body["priority"] = service_class.priority  # vLLM's field; lower is served first
        # Usage on every chunk gives tokens per chunk; only servers known to accept the
        # key get it (others may refuse an unknown stream option).
        body["stream_options"] = (
            {"include_usage": True, "continuous_usage_stats": True}
            if self.continuous_usage_stats
            else {"include_usage": True}
        )
        if self.extra_body:
            body.update(self.extra_body)
            floor = body.get("min_tokens")
            # The workload-wide floor must not pass this request's own cap (trace and
            # dataset requests carry their own output lengths): servers reject min > max.
            if isinstance(floor, int) and floor > request.output_tokens:
                body["min_tokens"] = request.output_tokens
        return json.dumps(body).encode()

    def prepare(
        self,
        request: PlannedRequest,
        record: RequestRecord,
        planned_ns: int,
        history: Sequence[tuple[str, str]] = (),
    ) -> PreparedSend:
        """What a send needs that does not depend on when it goes: the client span (it
        starts at the planned instant whenever it is made), its ``traceparent`` and the
        body. Made before the instant, it is not in the schedule lag (about 0.2 ms of
        cold Python per send at low rates); :meth:`withdraw` undoes it if nothing is sent.
        """
        headers = dict(self.headers)
        service_class = self.classes.get(request.service_class or "")
        if service_class is not None:
            headers.update((name.lower(), value) for name, value in service_class.headers)
        span, record.trace_id = self.spans.start(
            planned_ns + self.clock_offset_ns, headers, self.genai.span_name
        )
        return PreparedSend(headers, span, self.body(request, history))

    @staticmethod
    def withdraw(record: RequestRecord) -> None:
        """A prepared request that was never sent: no trace id (its span is never ended,
        so never exported)."""
        record.trace_id = ""

    async def send(
        self,
        request: PlannedRequest,
        record: RequestRecord,
        planned_ns: int,
        history: Sequence[tuple[str, str]] = (),
        answer: list[str] | None = None,
        prepared: PreparedSend | None = None,
    ) -> None:
        """Offer ``request`` now (its planned instant is ``planned_ns``); fill ``record``.

        A session's turn carries its ``history``, and its streamed text is appended to
        ``answer`` when given. ``prepared`` is :meth:`prepare`'s, made earlier. Never
        raises for anything the server or network does; only cancellation of the run
        propagates (the record then stays ``cancelled``).
        """
        if prepared is None:
            prepared = self.prepare(request, record, planned_ns, history)
        headers, span, content = prepared.headers, prepared.span, prepared.content
        deadline_ns = planned_ns + round(self.timeout_s * 1e9)
        if self.record_content and answer is None:
            answer = []  # the text is kept only when asked for: it costs memory per request
        try:
            with anyio.move_on_after((deadline_ns - time.perf_counter_ns()) / 1e9) as scope:
                exchange = partial(self._exchange, record, content, headers, request.prompt, answer)
                await send_with_retries(record, exchange, self.retry, deadline_ns, self.retry_rng)
        finally:
            if self.record_content:
                record.prompt, record.content = request.prompt, "".join(answer or ())
            finish_span(span, record, self.t0_ns + self.clock_offset_ns, self.genai)
            self.finished += 1
            # A float64 array holds a 200-token stream's gaps in 1.6 KB, a list in ~6.5 KB.
            record.itl_s = np.asarray(record.itl_s, dtype=np.float64)
        if record.status is UNDECIDED:
            reached = "" if record.first_token_s is None else " (first token was received)"
            record.status = Status.TIMEOUT
            record.error = (
                f"no complete response within {self.timeout_s:g}s of the planned send time{reached}"
                if scope.cancelled_caught
                else "internal: request ended without a status"
            )
        if self.secrets and record.error:  # a server may quote the key it refused
            record.error = redact(record.error, self.secrets)

    async def _exchange(
        self,
        record: RequestRecord,
        content: bytes,
        headers: Mapping[str, str],
        prompt: str,
        answer: list[str] | None = None,
    ) -> None:
        t0, clock = self.t0_ns, time.perf_counter_ns

        def on_sent() -> None:
            record.sent_s = (clock() - t0) / 1e9

        on_sent()  # the hand-off; refined when the transport writes the request
        try:
            async with self.transport.open(content, headers, on_sent) as response:
                record.http_status = response.status
                timing = response.header_list("server-timing")
                if timing:
                    record.server_timing = ", ".join(timing)
                if 200 <= response.status < 300:
                    await self._read_stream(response, record, prompt, answer)
                else:
                    await self._read_error(response, record, prompt)
        except ExchangeFailure as failure:  # texts may quote the server's bytes: made safe
            decide(record, failure.status, safe_text(failure.text, prompt))
        except Exception as exc:  # containment: one response never breaks the run
            decide(record, Status.PROTOCOL_ERROR, safe_text(unreadable(exc).text, prompt))

    async def _read_stream(
        self, response: Response, record: RequestRecord, prompt: str, answer: list[str] | None
    ) -> None:
        problem = encoding_problem(response.header("content-encoding"))
        if problem is not None:
            decide(record, Status.PROTOCOL_ERROR, problem)
            return
        sink = StreamSink(record, self.t0_ns, time.perf_counter_ns(), self.limits, answer)
        ended = False
        try:
            await response.read_body(sink)
            sink.flush()
            ended = True
        finally:
            self.keep_timeline(record, sink.state, sink.received_ns if ended else None)
        decide_stream_end(record, sink.state, sink.error, response.header("content-type"), prompt)

    def keep_timeline(self, record: RequestRecord, state: StreamState, end_ns: int | None) -> None:
        t0 = self.t0_ns
        if state.first_ns is not None:
            record.first_token_s = (state.first_ns - t0) / 1e9
        if end_ns is not None and record.end_s is None:
            record.end_s = (end_ns - t0) / 1e9
        if state.timings is not None:
            record.stream_timings = state.timings
        record.prompt_tokens, record.cached_tokens = state.prompt_tokens, state.cached_tokens
        if state.usage_tokens is not None and implausible_tokens(state.usage_tokens, record):
            # A count over the request's own cap (or absurd): the chunks are counted
            # instead, and the record says so; TPOT leaves the request out.
            record.output_tokens, record.output_tokens_source = state.chunks, "implausible"
        elif state.usage_tokens is not None:
            record.output_tokens, record.output_tokens_source = state.usage_tokens, "usage"
        else:
            record.output_tokens, record.output_tokens_source = state.chunks, "chunks"
        keep_reasoning(record, state, t0)

    async def _read_error(self, response: Response, record: RequestRecord, prompt: str) -> None:
        code = response.status
        record.status = Status.REJECTED if code in REJECTED_STATUSES else Status.HTTP_ERROR
        record.error = f"HTTP {code}"
        sink = ErrorSink()
        with contextlib.suppress(ExchangeFailure):  # the status already says what happened
            await response.read_body(sink)
        record.end_s = (time.perf_counter_ns() - self.t0_ns) / 1e9
        record.error = http_error_text(code, bytes(sink.body), prompt)
        if record.status is Status.REJECTED:
            wait = parse_retry_after(
                response.header("retry-after"), response.header("retry-after-ms")
            )
            record.retry_after_s = wait if wait is not None else record.retry_after_s


#: More output tokens than any one response carries: a count past it is not believed.
ABSURD_TOKENS = 10_000_000


def implausible_tokens(count: int, record: RequestRecord) -> bool:
    """A server's ``usage.completion_tokens`` over the request's ``max_tokens``, or absurd."""
    cap = record.max_tokens if record.max_tokens is not None else ABSURD_TOKENS
    return count > min(cap, ABSURD_TOKENS)


def keep_reasoning(record: RequestRecord, state: StreamState, t0_ns: int) -> None:
    """The first answer token, the reasoning before it, and tokens per chunk if reported."""
    answer_ns, reasoning_ns = state.first_answer_ns, state.first_reasoning_ns
    if answer_ns is not None:  # computed as ttft_s is, so equal to it without reasoning
        record.ttfo_s = (answer_ns - t0_ns) / 1e9 - record.intended_s
        if reasoning_ns is not None and reasoning_ns <= answer_ns:
            record.reasoning_s = (answer_ns - reasoning_ns) / 1e9
    if state.reasoning_usage is not None:
        record.reasoning_tokens = state.reasoning_usage
    elif state.reasoning_chunks:
        record.reasoning_tokens = state.reasoning_chunks
    if state.chunk_tokens and len(state.chunk_tokens) == state.chunks:
        record.chunk_tokens = state.chunk_tokens
