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
- ``protocol_error``: the bytes arrived but are not a valid stream: malformed JSON in a
  data line, a chunk of the wrong shape, or a clean EOF with neither ``[DONE]`` nor a
  ``finish_reason`` ("stream ended without [DONE]").
- ``cancelled``: the run was cancelled before the request finished (the default of
  every record until one of the above is decided).

A 2xx stream that ends properly without any content chunk (a model that stopped at
once) is ``ok`` with ``first_token_s`` None. A status, once decided, is final: a 2xx
stream that got ``[DONE]`` stays ``ok`` even if the connection then fails while the
client reads the rest of the body.
``end_s`` is set when the body ended by itself (EOF or ``[DONE]``, or a payload that
made the client stop); timeouts and transport failures keep only the instants reached.

Instants: ``sent_s`` is when httpcore starts writing the request headers (its ``trace``
extension), or the hand-off to httpx when the request never got that far (connect
refused). Chunk instants are taken once per socket read, before any parsing: chunks
that arrive in one read share an instant (an ITL gap of 0 is what the client saw).
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import httpx
import numpy as np

from pytest_latency.driver import fast
from pytest_latency.driver.errors import exception_text, http_error_text
from pytest_latency.driver.h1 import H1Pool
from pytest_latency.driver.outcome import UNDECIDED, decide, decide_stream_end
from pytest_latency.driver.sse import SSEDecoder, StreamError, StreamState
from pytest_latency.driver.tracecontext import ClientSpans, finish_span
from pytest_latency.records import RequestRecord, Status
from pytest_latency.workload.plan import PlannedRequest

MAX_ERROR_BODY_BYTES = 4096
REJECTED_STATUSES = frozenset({429, 503})
_HEADERS_WRITTEN = "send_request_headers.started"


@dataclass(slots=True)
class Sender:
    """Everything requests of one run share; ``t0_ns`` is time zero (perf_counter ns)."""

    client: httpx.AsyncClient
    url: str
    headers: Mapping[str, str]
    model: str
    chat: bool
    extra_body: Mapping[str, object]
    timeout_s: float
    spans: ClientSpans
    pool: H1Pool | None = None  # the hot-path transport; None: every request through httpx
    t0_ns: int = 0
    # Epoch ns minus perf_counter ns, taken once: turns monotonic instants into span times.
    clock_offset_ns: int = field(default_factory=lambda: time.time_ns() - time.perf_counter_ns())

    parsed_url: httpx.URL = field(init=False)

    def __post_init__(self) -> None:
        self.parsed_url = httpx.URL(self.url)

    def body(self, request: PlannedRequest) -> bytes:
        body: dict[str, object] = {"model": self.model}
        if self.chat:
            body["messages"] = [{"role": "user", "content": request.prompt}]
        else:
            body["prompt"] = request.prompt
        body["max_tokens"] = request.output_tokens
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
        if self.extra_body:
            body.update(self.extra_body)
        return json.dumps(body).encode()

    async def send(self, request: PlannedRequest, record: RequestRecord, planned_ns: int) -> None:
        """Offer ``request`` now (its planned instant is ``planned_ns``); fill ``record``.

        Never raises for anything the server or network does; only cancellation of the
        run propagates (the record then stays ``cancelled``).
        """
        headers = dict(self.headers)
        span, record.trace_id = self.spans.start(planned_ns + self.clock_offset_ns, headers)
        content = self.body(request)
        deadline_ns = planned_ns + round(self.timeout_s * 1e9)
        try:
            with anyio.move_on_after((deadline_ns - time.perf_counter_ns()) / 1e9) as scope:
                if self.pool is not None:
                    await fast.exchange(self, self.pool, record, content, headers, request.prompt)
                else:
                    await self._exchange(record, content, headers, request.prompt)
        finally:
            finish_span(span, record, self.t0_ns + self.clock_offset_ns)
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

    async def _exchange(
        self, record: RequestRecord, content: bytes, headers: Mapping[str, str], prompt: str
    ) -> None:
        t0 = self.t0_ns
        clock = time.perf_counter_ns

        async def trace(name: str, info: Mapping[str, Any]) -> None:
            if name.endswith(_HEADERS_WRITTEN):
                record.sent_s = (clock() - t0) / 1e9

        record.sent_s = (clock() - t0) / 1e9  # hand-off; refined when headers are written
        try:
            async with self.client.stream(
                "POST", self.url, content=content, headers=headers, extensions={"trace": trace}
            ) as response:
                record.http_status = response.status_code
                timing = response.headers.get_list("server-timing")
                if timing:
                    record.server_timing = ", ".join(timing)
                if 200 <= response.status_code < 300:
                    await self._read_stream(response, record, prompt)
                else:
                    await self._read_error(response, record, prompt)
        except httpx.TransportError as exc:
            decide(record, Status.CONNECTION_ERROR, exception_text(exc))
        except httpx.HTTPError as exc:  # e.g. a body that fails content decoding
            decide(record, Status.PROTOCOL_ERROR, exception_text(exc))

    async def _read_stream(
        self, response: httpx.Response, record: RequestRecord, prompt: str
    ) -> None:
        gaps: list[float] = []
        record.itl_s = gaps
        state = StreamState(gaps)
        decoder = SSEDecoder()
        clock = time.perf_counter_ns
        received_ns = clock()  # an empty body ends when its headers arrived
        ended = False
        error: StreamError | None = None
        try:
            async for raw in response.aiter_bytes():
                received_ns = clock()
                for data in decoder.feed(raw):
                    state.feed(data, received_ns)
                if state.done and record.status is UNDECIDED:
                    record.status = Status.OK  # keep reading to EOF so the connection is reused
                    record.end_s = (received_ns - self.t0_ns) / 1e9
            for data in decoder.flush():
                state.feed(data, received_ns)
            ended = True
        except StreamError as exc:
            ended, error = True, exc
        finally:
            self.keep_timeline(record, state, received_ns if ended else None)
        content_type = response.headers.get("content-type", "")
        decide_stream_end(record, state, error, content_type, prompt)

    def keep_timeline(self, record: RequestRecord, state: StreamState, end_ns: int | None) -> None:
        t0 = self.t0_ns
        if state.first_ns is not None:
            record.first_token_s = (state.first_ns - t0) / 1e9
        if end_ns is not None and record.end_s is None:
            record.end_s = (end_ns - t0) / 1e9
        if state.timings is not None:
            record.stream_timings = state.timings
        if state.usage_tokens is not None:
            record.output_tokens, record.output_tokens_source = state.usage_tokens, "usage"
        else:
            record.output_tokens, record.output_tokens_source = state.chunks, "chunks"

    async def _read_error(
        self, response: httpx.Response, record: RequestRecord, prompt: str
    ) -> None:
        code = response.status_code
        record.status = Status.REJECTED if code in REJECTED_STATUSES else Status.HTTP_ERROR
        record.error = f"HTTP {code}"
        body = bytearray()
        try:
            async for raw in response.aiter_bytes():
                body += raw
                if len(body) >= MAX_ERROR_BODY_BYTES:
                    break
        except httpx.HTTPError:
            pass  # the status already says what happened
        record.end_s = (time.perf_counter_ns() - self.t0_ns) / 1e9
        record.error = http_error_text(code, bytes(body[:MAX_ERROR_BODY_BYTES]), prompt)
