"""HTTP/1.1 responses for the streaming hot path, parsed by httptools (llhttp).

Why not httpx here: on one core, httpx + httpcore + anyio streams cost ~130 us of client
CPU per streamed chunk (h11 events, an async generator and a task wake-up per read), so
a 64-token stream at 100 req/s saturates the core and the schedule collapses; see
docs/performance.md. This connection is an ``asyncio.Protocol``: each socket read is
timestamped first thing in ``data_received`` and the body bytes parsed out of that read
are handed *synchronously* to the request's sink with that instant, once per read (no
task wake-up per chunk).

Framing is llhttp's (uvicorn's parser), not ours: chunked and Content-Length bodies,
interim 1xx responses (skipped: never taken as the final response), close-delimited
bodies (HTTP/1.0 style, ended by EOF). Any parser error, a head over its limit, or an
exception while reading fails the request as a ``protocol_error``; nothing raised here
reaches the event loop. A connection carries one request at a time and is reused only
after its response was read to the end with nothing after it: bytes nobody asked for
(an excess body, a second response) close it, so the next request never reads them.
"""

from __future__ import annotations

import asyncio
import select
import time
from typing import cast

import httptools

from pytest_latency.driver.encoding import BodyDecoder
from pytest_latency.driver.limits import ResponseLimits, size_text
from pytest_latency.driver.transport import (
    ConnectionFailure,
    ExchangeFailure,
    ProtocolFailure,
    Sink,
    unreadable,
)

# _COMPLETE: the response ended but its body may still wait for the reader.
_IDLE, _HEAD, _BODY, _COMPLETE = range(4)
DISCONNECTED = "RemoteProtocolError: Server disconnected without sending a response."
CUT_SHORT = "RemoteProtocolError: peer closed connection without sending complete message body"


class ResponseHead:
    __slots__ = ("headers", "status")

    def __init__(self, status: int, headers: list[tuple[str, str]]) -> None:
        self.status = status
        self.headers = headers  # names lower-cased, in order

    def header(self, name: str) -> str:
        return next((value for key, value in self.headers if key == name), "")

    def header_list(self, name: str) -> list[str]:
        return [value for key, value in self.headers if key == name]


class _Refusal(Exception):
    """Raised inside a parser callback to stop parsing; ``failure`` None: excess bytes."""

    def __init__(self, failure: ExchangeFailure | None) -> None:
        super().__init__()
        self.failure = failure


def _retrieve(future: asyncio.Future[None]) -> None:
    if not future.cancelled():
        future.exception()  # a failure nobody awaited (the reader was cancelled) is no error


class H1Connection(asyncio.Protocol):
    """One keep-alive connection carrying one request at a time."""

    def __init__(self, limits: ResponseLimits | None = None) -> None:
        self.limits = limits if limits is not None else ResponseLimits()
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.requests_sent = 0  # more than one: a kept-alive connection, reused
        self.reusable = True
        self.idle_since = 0.0
        self._state = _IDLE
        self._parser: httptools.HttpResponseParser | None = None
        self._read_ns = 0
        self._head_bytes = 0
        self._interim = False
        self._close_delimited = False
        self._headers: list[tuple[str, str]] = []
        self._decoder: BodyDecoder | None = None
        self._pieces: list[bytes] = []  # body parsed out of the current read
        self._backlog: list[tuple[int, bytes]] = []  # reads parsed before the reader came
        self._sink: Sink | None = None
        self._head: asyncio.Future[ResponseHead] | None = None
        self._end: asyncio.Future[None] | None = None

    # -- asyncio.Protocol -------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport; not an isinstance check: uvloop's do not subclass asyncio's.
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self._read_ns = time.perf_counter_ns()  # before any parsing: TTFT/ITL come from this
        if self._state in (_IDLE, _COMPLETE):
            self._drop()  # bytes after the response: the next request must never read them
            return
        try:
            self._receive(data)
        except Exception as exc:  # containment: nothing raised here may reach the loop
            self._fail(unreadable(exc))

    def eof_received(self) -> bool:
        return False  # close the transport; connection_lost decides what it meant

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.reusable = False
        state = self._state
        try:
            if state == _BODY and self._close_delimited and exc is None:
                self._complete()  # a close-delimited body ends at EOF
                self._deliver()
            elif state == _HEAD:
                self._fail(ConnectionFailure(DISCONNECTED))
            elif state == _BODY:
                text = CUT_SHORT if exc is None else f"ReadError: {exc}"
                self._fail(ConnectionFailure(text))
        except Exception as exc:  # the decoder's tail, or the sink
            self._fail(unreadable(exc))

    # -- requests ---------------------------------------------------------------------
    def send(self, data: bytes) -> asyncio.Future[ResponseHead]:
        """Write a whole request; the future resolves with the final response head."""
        assert self.transport is not None and self._state == _IDLE
        loop = asyncio.get_running_loop()
        self._head = loop.create_future()
        self._end = loop.create_future()
        self._end.add_done_callback(_retrieve)
        self._parser = httptools.HttpResponseParser(self)
        self._head_bytes = 0
        self._interim = self._close_delimited = False
        self._headers = []
        self._decoder = None
        self._sink = None
        self._state = _HEAD
        self.requests_sent += 1
        self.transport.write(data)
        return self._head

    @property
    def silent(self) -> bool:
        """Not one byte of a response arrived for the request in flight."""
        return self._head_bytes == 0

    async def read_body(self, sink: Sink) -> None:
        """Feed the body to ``sink`` read by read; return when it ended or was stopped."""
        assert self._end is not None
        self._sink = sink
        backlog, self._backlog = self._backlog, []
        try:
            for read_ns, data in backlog:  # bytes that came with (or soon after) the head
                if sink(data, read_ns):
                    self._stop()
                    break
            if self._state == _COMPLETE:
                self._state = _IDLE
                self._resolve_end()
        except Exception as exc:  # containment, as in data_received
            self._fail(unreadable(exc))
        await self._end

    @property
    def idle(self) -> bool:
        """No response in flight: the last one was read to its end (or none was sent)."""
        return self._state == _IDLE

    def close(self) -> None:
        self.reusable = False
        if self.transport is not None and not self.closed:
            self.transport.close()

    def abort(self) -> None:
        self.reusable = False
        if self.transport is not None and not self.closed:
            self.transport.abort()

    def peer_closed(self) -> bool:
        """An idle connection the server already closed (its FIN is in the kernel but the
        loop has not seen it yet), or one with unread bytes. Servers that close after a
        response without saying ``Connection: close`` (llama.cpp's overflow threads) race
        the next send; httpcore makes the same check before reusing a connection."""
        sock = self.transport.get_extra_info("socket") if self.transport is not None else None
        if sock is None:
            return True
        # poll, not select: a load run holds thousands of sockets, and select() refuses
        # descriptors past FD_SETSIZE (1024).
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLIN)
        return bool(poller.poll(0))  # an idle HTTP/1.1 connection has nothing to read

    # -- parsing ----------------------------------------------------------------------
    def _receive(self, data: bytes) -> None:
        assert self._parser is not None
        if self._state == _HEAD:
            self._head_bytes += len(data)
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._fail(ProtocolFailure("malformed HTTP response: unexpected protocol upgrade"))
            return
        except httptools.HttpParserError as exc:
            if not self._parse_error(exc):
                return
        if self._state == _HEAD and self._head_bytes > self.limits.max_head_bytes:
            limit = size_text(self.limits.max_head_bytes)
            self._fail(ProtocolFailure(f"response head over {limit}"))
            return
        self._deliver()

    def _parse_error(self, exc: httptools.HttpParserError) -> bool:
        """Handle a parser error; True when the response is complete and still delivered."""
        refusal = exc.__context__
        if isinstance(refusal, _Refusal) and refusal.failure is not None:
            self._fail(refusal.failure)
            return False
        if self._state != _COMPLETE:
            self._fail(ProtocolFailure(f"malformed HTTP response: {exc or type(exc).__name__}"))
            return False
        self._drop()  # the response ended; what followed it is not ours to read
        return True

    def _deliver(self) -> None:
        pieces = self._pieces
        if pieces:
            # Identity bodies are joined (one sink call per read); decoded ones go in their
            # bounded steps, never copied into one buffer.
            batch = pieces[:] if self._decoder is not None else [b"".join(pieces)]
            pieces.clear()
            for data in batch:
                if self._sink is None:
                    self._backlog.append((self._read_ns, data))
                elif self._sink(data, self._read_ns):
                    self._stop()
                    return
        if self._state == _COMPLETE and self._sink is not None:
            self._state = _IDLE
            self._resolve_end()

    # -- llhttp callbacks (names are httptools' protocol) -----------------------------
    def on_message_begin(self) -> None:
        if self._state == _COMPLETE:
            raise _Refusal(None)  # a second response in the same read

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name.decode("latin-1").lower(), value.decode("latin-1")))

    def on_headers_complete(self) -> None:
        assert self._parser is not None
        status = self._parser.get_status_code()
        if 100 <= status < 200:  # interim (100 Continue, 103 Early Hints): not the answer
            self._interim = True
            self._headers = []
            return
        head = ResponseHead(status, self._headers)
        chunked = "chunked" in head.header("transfer-encoding").lower()
        if not chunked and not head.header("content-length") and status not in (204, 304):
            self._close_delimited = True
        if self._close_delimited or not self._parser.should_keep_alive():
            self.reusable = False
        self._decoder = BodyDecoder.for_header(
            head.header("content-encoding"), self.limits.max_body_bytes
        )
        self._state = _BODY
        if self._head is not None and not self._head.done():
            self._head.set_result(head)

    def on_body(self, body: bytes) -> None:
        if self._decoder is None:
            self._pieces.append(body)
            return
        try:
            self._pieces.extend(self._decoder.decode(body))
        except ProtocolFailure as failure:
            self._pieces.clear()  # the decoded bytes so far: not kept alive by the failure
            raise _Refusal(failure) from None

    def on_message_complete(self) -> None:
        if self._interim:
            self._interim = False
            return
        assert self._parser is not None
        if not self._parser.should_keep_alive():
            self.reusable = False
        try:
            self._complete()
        except ProtocolFailure as failure:
            raise _Refusal(failure) from None

    # -- endings ----------------------------------------------------------------------
    def _complete(self) -> None:
        if self._decoder is not None:
            self._pieces.extend(self._decoder.flush())
        self._state = _COMPLETE

    def _drop(self) -> None:
        self.reusable = False
        if self.transport is not None and not self.closed:
            self.transport.abort()

    def _stop(self) -> None:
        """The reader has what it needs: the rest of the body is not read."""
        self._state = _IDLE
        self._drop()
        self._resolve_end()

    def _resolve_end(self) -> None:
        if self._end is not None and not self._end.done():
            self._end.set_result(None)

    def _fail(self, failure: ExchangeFailure) -> None:
        self._state = _IDLE
        self._pieces.clear()
        self._backlog.clear()
        self._drop()
        if self._head is not None and not self._head.done():
            self._head.set_exception(failure)
            if self._end is not None and not self._end.done():
                self._end.cancel()  # nobody will wait for a body that never started
        elif self._end is not None and not self._end.done():
            self._end.set_exception(failure)
