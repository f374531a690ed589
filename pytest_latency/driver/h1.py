"""A minimal HTTP/1.1 client transport for the streaming hot path (plain http:// only).

Why not httpx here: on one core, httpx + httpcore + anyio streams cost ~130 us of client
CPU per streamed chunk (h11 events, an async generator and a task wake-up per read), so
a 64-token stream at 100 req/s saturates the core and the schedule collapses; see
docs/performance.md. This transport is an ``asyncio.Protocol``: each socket read is
timestamped and handed *synchronously* to the request's body sink inside
``data_received`` (no task wake-up per chunk); chunked framing is decoded incrementally,
each byte looked at once. Users still see httpx (``make_client``, ``client=``); this
layer is used only when the driver owns its client on asyncio with an http:// URL.

Errors are raised as the httpx exceptions httpx would raise (``ConnectError``,
``RemoteProtocolError``), so records read the same whichever path ran.
"""

from __future__ import annotations

import asyncio
import select
import time
from collections.abc import Callable

import httpx

# A body sink takes (bytes, perf_counter_ns of the read) and returns True to abort.
Sink = Callable[[bytes, int], bool]

_HEAD, _SIZE, _DATA, _CRLF, _TRAILER, _LENGTH, _CLOSE, _DONE = range(8)
MAX_HEAD_BYTES = 64 * 1024


class ResponseHead:
    __slots__ = ("headers", "status")

    def __init__(self, status: int, headers: list[tuple[str, str]]) -> None:
        self.status = status
        self.headers = headers  # names lower-cased, in order

    def get(self, name: str, default: str = "") -> str:
        return next((value for key, value in self.headers if key == name), default)

    def get_list(self, name: str) -> list[str]:
        return [value for key, value in self.headers if key == name]


class H1Connection(asyncio.Protocol):
    """One keep-alive connection carrying one request at a time."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.reusable = True
        self.idle_since = 0.0
        self._buffer = bytearray()
        self._mode = _DONE
        self._remaining = 0
        self._read_ns = 0
        self._sink: Sink | None = None
        self._head: asyncio.Future[ResponseHead] | None = None
        self._end: asyncio.Future[None] | None = None

    # -- asyncio.Protocol -------------------------------------------------------------
    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self._read_ns = time.perf_counter_ns()  # before any parsing
        self._buffer += data
        if self._mode == _HEAD:
            self._parse_head()
        elif self._sink is not None and self._mode != _DONE:
            self._parse_body()

    def eof_received(self) -> bool:
        return False  # close the transport; connection_lost decides what it meant

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.reusable = False
        if self._mode == _CLOSE and self._sink is not None:
            self._mode = _DONE
            self._resolve_end(None)
        elif self._mode == _HEAD:
            error = httpx.RemoteProtocolError("Server disconnected without sending a response.")
            self._fail(error)
        elif self._mode != _DONE:
            self._fail(
                httpx.RemoteProtocolError(
                    "peer closed connection without sending complete message body"
                )
            )

    # -- requests ---------------------------------------------------------------------
    def send(self, data: bytes) -> asyncio.Future[ResponseHead]:
        """Write a whole request; the future resolves with the response head."""
        assert self.transport is not None and self._mode == _DONE
        loop = asyncio.get_running_loop()
        self._head = loop.create_future()
        self._end = loop.create_future()
        self._sink = None
        self._mode = _HEAD
        self.transport.write(data)
        return self._head

    async def read_body(self, sink: Sink) -> None:
        """Feed the body to ``sink`` read by read; return when it ended or was aborted."""
        assert self._end is not None
        self._sink = sink
        if self._buffer and self._mode != _DONE:
            self._parse_body()  # bytes that came with the head
        await self._end

    def close(self) -> None:
        self.reusable = False
        if self.transport is not None and not self.closed:
            self.transport.close()

    @property
    def idle(self) -> bool:
        """No response in flight: the last one was read to its end (or none was sent)."""
        return self._mode == _DONE

    def peer_closed(self) -> bool:
        """An idle connection the server already closed (its FIN is in the kernel but the
        loop has not seen it yet). Servers that close after a response without saying
        ``Connection: close`` (llama.cpp's overflow threads) race the next send; httpcore
        makes the same check before reusing a connection."""
        sock = self.transport.get_extra_info("socket") if self.transport is not None else None
        if sock is None:
            return True
        # poll, not select: a load run holds thousands of sockets, and select() refuses
        # descriptors past FD_SETSIZE (1024).
        poller = select.poll()
        poller.register(sock.fileno(), select.POLLIN)
        return bool(poller.poll(0))  # an idle HTTP/1.1 connection has nothing but EOF to read

    def abort(self) -> None:
        self.reusable = False
        if self.transport is not None and not self.closed:
            self.transport.abort()

    # -- parsing ----------------------------------------------------------------------
    def _parse_head(self) -> None:
        end = self._buffer.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buffer) > MAX_HEAD_BYTES:
                self._fail(httpx.RemoteProtocolError("response head too large"))
            return
        lines = bytes(self._buffer[:end]).decode("latin-1").split("\r\n")
        del self._buffer[: end + 4]
        try:
            status = int(lines[0].split(" ", 2)[1])
        except (IndexError, ValueError):
            self._fail(httpx.RemoteProtocolError("malformed response status line"))
            return
        headers = []
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers.append((name.strip().lower(), value.strip()))
        head = ResponseHead(status, headers)
        self._framing(head)
        if self._head is not None and not self._head.done():
            self._head.set_result(head)

    def _framing(self, head: ResponseHead) -> None:
        if "close" in head.get("connection").lower():
            self.reusable = False
        if "chunked" in head.get("transfer-encoding").lower():
            self._mode = _SIZE
        elif head.get("content-length"):
            self._mode, self._remaining = _LENGTH, int(head.get("content-length"))
        elif head.status in (204, 304) or 100 <= head.status < 200:
            self._mode, self._remaining = _LENGTH, 0
        else:
            self._mode, self.reusable = _CLOSE, False
        if self._mode == _LENGTH and self._remaining == 0:
            self._mode = _DONE
            self._resolve_end(None)

    def _parse_body(self) -> None:
        try:
            position = self._walk(self._buffer, 0)
        except ValueError:
            self._fail(httpx.RemoteProtocolError("malformed chunked encoding"))
            return
        del self._buffer[:position]

    def _walk(self, buffer: bytearray, position: int) -> int:
        size = len(buffer)
        while position < size and self._mode != _DONE:
            mode = self._mode
            if mode == _SIZE:
                line_end = buffer.find(b"\r\n", position)
                if line_end < 0:
                    break
                self._remaining = int(bytes(buffer[position:line_end]).split(b";")[0], 16)
                position = line_end + 2
                self._mode = _DATA if self._remaining else _TRAILER
            elif mode in (_DATA, _LENGTH, _CLOSE):
                take = size - position if mode == _CLOSE else min(size - position, self._remaining)
                piece = bytes(buffer[position : position + take])
                position += take
                self._remaining -= take
                if self._deliver(piece):
                    return size
                if self._remaining == 0 and mode != _CLOSE:
                    self._mode = _CRLF if mode == _DATA else _DONE
            elif mode == _CRLF:
                if size - position < 2:
                    break
                position += 2
                self._mode = _SIZE
            else:  # trailers, up to the empty line
                line_end = buffer.find(b"\r\n", position)
                if line_end < 0:
                    break
                self._mode = _DONE if line_end == position else _TRAILER
                position = line_end + 2
        if self._mode == _DONE:
            self._resolve_end(None)
        return position

    def _deliver(self, piece: bytes) -> bool:
        assert self._sink is not None
        if self._sink(piece, self._read_ns):
            self._mode = _DONE  # the reader has what it needs; the rest is not read
            self.abort()
            self._resolve_end(None)
            return True
        return False

    def _resolve_end(self, error: Exception | None) -> None:
        end = self._end
        if end is not None and not end.done():
            if error is None:
                end.set_result(None)
            else:
                end.set_exception(error)

    def _fail(self, error: Exception) -> None:
        self._mode = _DONE
        self.abort()
        if self._head is not None and not self._head.done():
            self._head.set_exception(error)
            if self._end is not None and not self._end.done():
                self._end.cancel()  # nobody will wait for a body that never started
        else:
            self._resolve_end(error)


class H1Pool:
    """Idle keep-alive connections to one host, most recently used first; uncapped."""

    def __init__(self, host: str, port: int, keepalive_expiry_s: float) -> None:
        self.host = host
        self.port = port
        self.keepalive_expiry_s = keepalive_expiry_s
        self.opened = 0
        self._idle: list[H1Connection] = []
        self._all: set[H1Connection] = set()

    async def acquire(self) -> H1Connection:
        now = time.monotonic()
        while self._idle:
            connection = self._idle.pop()
            fresh = now - connection.idle_since < self.keepalive_expiry_s
            if fresh and not connection.closed and not connection.peer_closed():
                return connection
            connection.close()
        loop = asyncio.get_running_loop()
        try:
            _, connection = await loop.create_connection(H1Connection, self.host, self.port)
        except OSError as exc:
            raise httpx.ConnectError(str(exc)) from exc
        self.opened += 1
        self._all.add(connection)
        return connection

    def release(self, connection: H1Connection) -> None:
        # Only a connection whose response was read to its end can carry another one: a
        # caller cancelled mid-body (a timed-out warm-up ping) must not hand back a
        # connection that would deliver the old body to the next request.
        if connection.reusable and not connection.closed and connection.idle:
            connection.idle_since = time.monotonic()
            self._idle.append(connection)
        else:
            connection.abort()
            self._all.discard(connection)

    def close(self) -> None:
        for connection in self._all:
            connection.abort()
        self._all.clear()
        self._idle.clear()
