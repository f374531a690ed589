"""The httpx transport: https, trio, and a caller's own ``httpx.AsyncClient``.

httpx errors become :class:`.transport.ExchangeFailure` here, once: a connection that
failed or closed before the response was complete is a ``connection_error``; any other
protocol error (h11's framing checks, a body that fails content decoding) is a
``protocol_error``, as on the hot path. Chunk instants are taken when ``aiter_raw``
hands over a read (compressed bodies are decoded here, in bounded steps).
"""

from __future__ import annotations

import logging
import time
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx

from pytest_latency.driver.encoding import BodyDecoder
from pytest_latency.driver.errors import exception_text
from pytest_latency.driver.limits import ResponseLimits
from pytest_latency.driver.transport import (
    ConnectionFailure,
    ExchangeFailure,
    ProtocolFailure,
    Sink,
)

logger = logging.getLogger("pytest_latency.driver")
_HEADERS_WRITTEN = "send_request_headers.started"
# h11/httpcore texts of a connection closed before the response was complete.
_CLOSED_EARLY = ("peer closed connection", "Server disconnected")


def failure_from_httpx(exc: httpx.HTTPError) -> ExchangeFailure:
    """The record's status and text for an httpx error."""
    text = exception_text(exc)
    if isinstance(exc, httpx.RemoteProtocolError) and not str(exc).startswith(_CLOSED_EARLY):
        return ProtocolFailure(f"malformed HTTP response: {text}")
    if isinstance(exc, httpx.TransportError):
        return ConnectionFailure(text)
    return ProtocolFailure(text)  # e.g. DecodingError


class HttpxResponse:
    """An httpx streaming response as a :class:`.transport.Response`."""

    __slots__ = ("_max_body", "_response")

    def __init__(self, response: httpx.Response, max_body_bytes: int) -> None:
        self._response = response
        self._max_body = max_body_bytes

    @property
    def status(self) -> int:
        return self._response.status_code

    def header(self, name: str) -> str:
        value: str = self._response.headers.get(name, "")
        return value

    def header_list(self, name: str) -> list[str]:
        return self._response.headers.get_list(name)

    async def read_body(self, sink: Sink) -> None:
        # Raw bytes, decoded here in bounded steps: httpx's own decoder expands each read
        # whole (a 64 KiB gzip read can become 64 MiB).
        clock = time.perf_counter_ns
        decoder = BodyDecoder.for_header(self.header("content-encoding"), self._max_body)
        try:
            async for raw in self._response.aiter_raw():
                now = clock()
                for data in [raw] if decoder is None else decoder.decode(raw):
                    if sink(data, now):
                        return
            for data in [] if decoder is None else decoder.flush():
                if sink(data, clock()):
                    return
        except httpx.HTTPError as exc:
            raise failure_from_httpx(exc) from exc


class HttpxTransport:
    """POSTs to one URL through ``client``; closes the client only if it owns it."""

    def __init__(
        self,
        client: httpx.AsyncClient,
        url: str,
        *,
        owns_client: bool,
        limits: ResponseLimits | None = None,
    ) -> None:
        self.client = client
        self.url = url
        self.owns_client = owns_client
        self.limits = limits if limits is not None else ResponseLimits()

    @asynccontextmanager
    async def open(
        self, content: bytes, headers: Mapping[str, str], on_sent: Callable[[], None]
    ) -> AsyncIterator[HttpxResponse]:
        async def trace(name: str, info: Mapping[str, Any]) -> None:
            if name.endswith(_HEADERS_WRITTEN):
                on_sent()

        stream = self.client.stream(
            "POST", self.url, content=content, headers=headers, extensions={"trace": trace}
        )
        try:
            async with stream as response:
                yield HttpxResponse(response, self.limits.max_body_bytes)
        except httpx.HTTPError as exc:
            raise failure_from_httpx(exc) from exc

    async def ping(self, url: str, headers: Mapping[str, str]) -> None:
        try:  # the status only: the body is never read
            async with self.client.stream("GET", url, headers=dict(headers)) as response:
                logger.debug("warm-up ping: HTTP %s", response.status_code)
        except httpx.HTTPError as exc:
            logger.debug("warm-up ping failed: %s", type(exc).__name__)

    async def aclose(self) -> None:
        if self.owns_client:
            await self.client.aclose()
