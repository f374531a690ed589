"""The hot-path exchange: one streamed request over :mod:`pytest_latency.driver.h1`.

Same classification and instants as the httpx path in :mod:`.request` (whose module
doc states the rules); the differences are only where the work happens: the SSE
decoder and the chunk interpretation run inside the protocol's ``data_received``, with
the read's own timestamp, and ``sent_s`` is the instant the request bytes were handed
to the socket (the httpx path uses httpcore's "headers written" trace, the same moment).
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING

import httpx

from pytest_latency.driver.errors import exception_text, http_error_text
from pytest_latency.driver.h1 import H1Connection, H1Pool, ResponseHead
from pytest_latency.driver.outcome import UNDECIDED, decide, decide_stream_end
from pytest_latency.driver.sse import SSEDecoder, StreamError, StreamState
from pytest_latency.records import RequestRecord, Status

if TYPE_CHECKING:
    from pytest_latency.driver.request import Sender

MAX_ERROR_BODY_BYTES = 4096
REJECTED_STATUSES = frozenset({429, 503})


def request_head(method: str, url: httpx.URL, headers: Mapping[str, str], length: int) -> bytes:
    """An HTTP/1.1 request head (header values must be latin-1, as on the wire)."""
    lines = [f"{method} {url.raw_path.decode('ascii')} HTTP/1.1", f"host: {url.netloc.decode()}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if method != "GET" or length:
        lines.append(f"content-length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class StreamSink:
    """Consumes a 2xx SSE body read by read (called inside ``data_received``)."""

    __slots__ = ("decoder", "error", "received_ns", "record", "state", "t0_ns")

    def __init__(self, record: RequestRecord, t0_ns: int, start_ns: int) -> None:
        self.record = record
        self.t0_ns = t0_ns
        gaps: list[float] = []
        record.itl_s = gaps
        self.state = StreamState(gaps)
        self.decoder = SSEDecoder()
        self.received_ns = start_ns  # an empty body ends when its head arrived
        self.error: StreamError | None = None

    def __call__(self, data: bytes, now_ns: int) -> bool:
        self.received_ns = now_ns
        state = self.state
        try:
            for event in self.decoder.feed(data):
                state.feed(event, now_ns)
        except StreamError as exc:
            self.error = exc
            return True
        record = self.record
        if state.done and record.status is UNDECIDED:
            record.status = Status.OK  # keep reading to the end so the connection is reused
            record.end_s = (now_ns - self.t0_ns) / 1e9
        return False

    def flush(self) -> None:
        try:
            for event in self.decoder.flush():
                self.state.feed(event, self.received_ns)
        except StreamError as exc:
            self.error = exc


class ErrorSink:
    """Collects at most MAX_ERROR_BODY_BYTES of a non-2xx body."""

    __slots__ = ("body",)

    def __init__(self) -> None:
        self.body = bytearray()

    def __call__(self, data: bytes, now_ns: int) -> bool:
        self.body += data
        return len(self.body) >= MAX_ERROR_BODY_BYTES


async def exchange(
    sender: Sender,
    pool: H1Pool,
    record: RequestRecord,
    content: bytes,
    headers: Mapping[str, str],
    prompt: str,
) -> None:
    """Send one request on a pooled connection and fill ``record`` (never raises httpx errors)."""
    t0, clock = sender.t0_ns, time.perf_counter_ns
    record.sent_s = (clock() - t0) / 1e9  # hand-off; refined when the bytes are written
    connection: H1Connection | None = None
    try:
        connection = await pool.acquire()
        head_bytes = request_head("POST", sender.parsed_url, headers, len(content))
        record.sent_s = (clock() - t0) / 1e9
        head = await connection.send(head_bytes + content)
        record.http_status = head.status
        timing = head.get_list("server-timing")
        if timing:
            record.server_timing = ", ".join(timing)
        if 200 <= head.status < 300:
            await _read_stream(sender, connection, head, record, prompt)
        else:
            await _read_error(sender, connection, head, record, prompt)
    except httpx.TransportError as exc:
        decide(record, Status.CONNECTION_ERROR, exception_text(exc))
    except asyncio.CancelledError:
        if connection is not None:
            connection.abort()  # mid-response: the connection cannot be reused
        raise
    finally:
        if connection is not None:
            pool.release(connection)


async def _read_stream(
    sender: Sender,
    connection: H1Connection,
    head: ResponseHead,
    record: RequestRecord,
    prompt: str,
) -> None:
    sink = StreamSink(record, sender.t0_ns, time.perf_counter_ns())
    ended = False
    try:
        await connection.read_body(sink)
        sink.flush()
        ended = True
    finally:
        sender.keep_timeline(record, sink.state, sink.received_ns if ended else None)
    decide_stream_end(record, sink.state, sink.error, head.get("content-type"), prompt)


async def _read_error(
    sender: Sender,
    connection: H1Connection,
    head: ResponseHead,
    record: RequestRecord,
    prompt: str,
) -> None:
    code = head.status
    record.status = Status.REJECTED if code in REJECTED_STATUSES else Status.HTTP_ERROR
    record.error = f"HTTP {code}"
    sink = ErrorSink()
    with contextlib.suppress(httpx.HTTPError):  # the status already says what happened
        await connection.read_body(sink)
    record.end_s = (time.perf_counter_ns() - sender.t0_ns) / 1e9
    record.error = http_error_text(code, bytes(sink.body[:MAX_ERROR_BODY_BYTES]), prompt)
