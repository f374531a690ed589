"""The hot-path transport: HTTP/1.1 over :class:`.h1.H1Connection`, pooled, plain http://.

Used when the driver owns its client on asyncio with an http:// URL (see
:func:`.target.choose_transport`). ``sent_s`` is the instant the request bytes are
handed to the socket (the httpx transport reports httpcore's "headers written", the same
moment). Connect failures read as httpx's (``ConnectError: ...``), so records read the
same whichever transport ran.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager

import httpx

from pytest_latency.driver.h1 import DISCONNECTED, H1Connection, ResponseHead
from pytest_latency.driver.limits import ResponseLimits
from pytest_latency.driver.transport import ConnectionFailure, ExchangeFailure, Sink

logger = logging.getLogger("pytest_latency.driver")


def request_head(method: str, url: httpx.URL, headers: Mapping[str, str], length: int) -> bytes:
    """An HTTP/1.1 request head (header values must be latin-1, as on the wire)."""
    lines = [f"{method} {url.raw_path.decode('ascii')} HTTP/1.1", f"host: {url.netloc.decode()}"]
    lines += [f"{name}: {value}" for name, value in headers.items()]
    if method != "GET" or length:
        lines.append(f"content-length: {length}")
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


class H1Pool:
    """Idle keep-alive connections to one host, most recently used first; uncapped."""

    def __init__(
        self,
        host: str,
        port: int,
        keepalive_expiry_s: float,
        limits: ResponseLimits | None = None,
    ) -> None:
        self.host = host
        self.port = port
        self.keepalive_expiry_s = keepalive_expiry_s
        self.limits = limits if limits is not None else ResponseLimits()
        self.opened = 0
        self._idle: list[H1Connection] = []
        self._all: set[H1Connection] = set()

    async def acquire(self, *, fresh: bool = False) -> H1Connection:
        now = time.monotonic()
        while self._idle and not fresh:
            connection = self._idle.pop()
            fresh = now - connection.idle_since < self.keepalive_expiry_s
            if fresh and not connection.closed and not connection.peer_closed():
                return connection
            connection.close()
            self._all.discard(connection)
        try:
            _, connection = await asyncio.get_running_loop().create_connection(
                lambda: H1Connection(self.limits), self.host, self.port
            )
        except OSError as exc:
            raise ConnectionFailure(f"ConnectError: {exc}") from exc
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


def _stale(connection: H1Connection, failure: ConnectionFailure) -> bool:
    """The peer closed a reused connection before a byte of the response came back."""
    return connection.requests_sent > 1 and connection.silent and failure.text == DISCONNECTED


class FastResponse:
    """A response on a pooled connection (the :class:`.transport.Response` of this path)."""

    __slots__ = ("_connection", "_head")

    def __init__(self, connection: H1Connection, head: ResponseHead) -> None:
        self._connection = connection
        self._head = head

    @property
    def status(self) -> int:
        return self._head.status

    def header(self, name: str) -> str:
        return self._head.header(name)

    def header_list(self, name: str) -> list[str]:
        return self._head.header_list(name)

    async def read_body(self, sink: Sink) -> None:
        await self._connection.read_body(sink)


class FastTransport:
    """The hot path: POSTs to one http:// URL over an uncapped keep-alive pool."""

    def __init__(self, url: str, keepalive_expiry_s: float, limits: ResponseLimits) -> None:
        self.url = httpx.URL(url)
        port = self.url.port or 80
        self.pool = H1Pool(self.url.host, port, keepalive_expiry_s, limits)

    @asynccontextmanager
    async def open(
        self, content: bytes, headers: Mapping[str, str], on_sent: Callable[[], None]
    ) -> AsyncIterator[FastResponse]:
        connection = await self.pool.acquire()
        try:
            data = request_head("POST", self.url, headers, len(content)) + content
            on_sent()
            try:
                head = await connection.send(data)
            except ConnectionFailure as failure:
                if not _stale(connection, failure):
                    raise
                # A kept-alive connection the server closed as we reused it (llama.cpp's
                # overflow threads close after one response without saying so, and the
                # FIN can land just after the reuse check): the server never answered,
                # so the request goes once more, on a new connection.
                self.pool.release(connection)
                connection = await self.pool.acquire(fresh=True)
                head = await connection.send(data)
            yield FastResponse(connection, head)
        finally:
            self.pool.release(connection)  # closes it unless the response was read to its end

    async def ping(self, url: str, headers: Mapping[str, str]) -> None:
        head = request_head("GET", httpx.URL(url), {**headers, "accept": "*/*"}, 0)
        try:
            connection = await self.pool.acquire()
        except ExchangeFailure as failure:
            logger.debug("warm-up ping failed: %s", failure.text)
            return
        try:
            response = await connection.send(head)
            await connection.read_body(lambda data, now_ns: False)
            logger.debug("warm-up ping: HTTP %s", response.status)
        except ExchangeFailure as failure:
            logger.debug("warm-up ping failed: %s", failure.text)
        finally:
            self.pool.release(connection)

    async def aclose(self) -> None:
        self.pool.close()
