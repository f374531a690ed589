"""The transport seam: how one request is written and its response read.

The driver (:mod:`.request`) decides statuses and instants once, for every transport;
a transport only moves bytes. Two implement :class:`Transport`: the hot path
(:mod:`.fast`, HTTP/1.1 on an ``asyncio.Protocol``, parsed by httptools) and httpx
(:mod:`.httpx_transport`: https, trio, a caller's own client).

A body is read by handing a :data:`Sink` every piece with the ``perf_counter_ns``
instant of the socket read that carried it; the sink returns True to stop reading
(that connection is then closed). Anything the server or network does wrong is raised
as an :class:`ExchangeFailure`, which names the record's status and error text.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from pytest_latency.driver.errors import exception_text
from pytest_latency.records import Status

# A body sink takes (bytes, perf_counter_ns of the read) and returns True to stop reading.
Sink = Callable[[bytes, int], bool]


class ExchangeFailure(Exception):
    """The request failed in a way its record states: ``status`` and ``text``."""

    status = Status.PROTOCOL_ERROR

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


class ConnectionFailure(ExchangeFailure):
    """Connect refused or reset, or the peer closed before the response was complete."""

    status = Status.CONNECTION_ERROR


class ProtocolFailure(ExchangeFailure):
    """Bytes arrived but are not a valid HTTP response (or one over a limit)."""

    status = Status.PROTOCOL_ERROR


def unreadable(exc: Exception) -> ProtocolFailure:
    """An unexpected exception while reading one response, contained to that request."""
    return ProtocolFailure(f"client could not read the response: {exception_text(exc)}")


class Response(Protocol):
    """A response whose head arrived; the body is still to be read."""

    @property
    def status(self) -> int: ...

    def header(self, name: str) -> str:
        """The first value of a header (name lower-case), or ''."""
        ...

    def header_list(self, name: str) -> list[str]: ...

    async def read_body(self, sink: Sink) -> None:
        """Feed the body to ``sink`` read by read; return at its end or when the sink
        stopped; raise :class:`ExchangeFailure` when it broke off."""
        ...


class Transport(Protocol):
    """Writes requests to one URL and reads their responses."""

    def open(
        self, content: bytes, headers: Mapping[str, str], on_sent: Callable[[], None]
    ) -> AbstractAsyncContextManager[Response]:
        """POST ``content``; ``on_sent`` is called as the request is written."""
        ...

    async def ping(self, url: str, headers: Mapping[str, str]) -> None:
        """A warm-up GET that opens a connection; never raises for the server's doing."""
        ...

    async def aclose(self) -> None: ...
