"""A hostile HTTP server for driver tests: raw bytes, 127.0.0.1 only, its own thread.

Every POST is answered by the test's script, a coroutine that writes whatever bytes it
likes through a :class:`Wire` (bad framing, interim responses, a drip, a reset, nothing
at all). GETs (the driver's warm-up pings) get a small well-formed answer, unless a
``get_script`` answers them (the readiness check's ``/v1/models``, ``/version``); the
readiness modes at the end of this module are such scripts. The server
notes, per connection, how many POSTs it served and whether a script wrote bytes past
the response it framed ("tainted"), so a test can prove no request read another's
leftovers.
"""

from __future__ import annotations

import asyncio
import functools
import json
import socket
import struct
import zlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from tests.helpers.scripted_server import LoopServer


@dataclass
class ConnectionLog:
    posts: int = 0
    tainted_after: int | None = None  # the POST count when leftovers were written


class Wire:
    """What a script can do to the one connection it answers on. ``path``: the request's;
    ``index``: which POST of the server's this is (0 for the first), for POSTs."""

    def __init__(self, writer: asyncio.StreamWriter, log: ConnectionLog) -> None:
        self.writer = writer
        self.log = log
        self.closed = False
        self.path = ""
        self.index = 0

    async def write(self, data: bytes) -> None:
        self.writer.write(data)
        await self.writer.drain()

    async def leftovers(self, data: bytes) -> None:
        """Bytes after the framed response: this connection must not carry another POST."""
        self.log.tainted_after = self.log.posts
        await self.write(data)

    async def pause(self, seconds: float) -> None:
        await asyncio.sleep(seconds)  # the server's pace, part of the script

    def close(self) -> None:
        self.closed = True
        self.writer.close()

    def reset(self) -> None:
        """Close with a TCP RST (SO_LINGER 0), not a FIN."""
        sock = self.writer.get_extra_info("socket")
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        self.closed = True
        self.writer.transport.abort()

    async def hang(self) -> None:
        await asyncio.Event().wait()  # cancelled at shutdown

    async def endless(self, piece: bytes) -> None:
        """``piece`` again and again until the client goes away (or shutdown)."""
        while True:
            await self.write(piece)


Script = Callable[[Wire], Awaitable[None]]


class HostileServer(LoopServer):
    def __init__(self, script: Script, get_script: Script | None = None) -> None:
        super().__init__()
        self.script = script
        self.get_script = get_script
        self.logs: list[ConnectionLog] = []
        self.posts = 0

    def __enter__(self) -> HostileServer:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        log = ConnectionLog()
        self.logs.append(log)
        wire = Wire(writer, log)
        while not wire.closed:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.decode("latin-1").split("\r\n")[1:]:
                name, _, value = line.partition(":")
                if name.strip().lower() == "content-length":
                    length = int(value)
            await reader.readexactly(length)
            wire.path = head.split(b" ", 2)[1].decode("latin-1")
            if head.startswith(b"GET") and self.get_script is not None:
                await self.get_script(wire)
                continue
            if head.startswith(b"GET"):
                body = b'{"object":"list","data":[]}'
                await wire.write(
                    b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
                )
                continue
            log.posts += 1
            wire.index = self.posts
            self.posts += 1
            await self.script(wire)


def sse(obj: object) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


def token(text: str, finish: str | None = None) -> bytes:
    delta = {"content": text} if text else {}
    return sse({"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})


STREAM = token("Hello") + token(" world") + token("", "stop") + b"data: [DONE]\n\n"


def chunked(*pieces: bytes) -> bytes:
    return b"".join(b"%x\r\n%s\r\n" % (len(piece), piece) for piece in pieces) + b"0\r\n\r\n"


def head(status: str = "200 OK", *headers: str, version: str = "HTTP/1.1") -> bytes:
    lines = [f"{version} {status}", "content-type: text/event-stream", *headers]
    return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1")


def json_answer(obj: object, status: str = "200 OK") -> bytes:
    body = json.dumps(obj).encode()
    return (
        f"HTTP/1.1 {status}\r\ncontent-type: application/json\r\n"
        f"content-length: {len(body)}\r\n\r\n"
    ).encode() + body


MODELS = json_answer({"object": "list", "data": [{"id": "hostile"}]})
_PIECE = b"x" * 65536


async def models_listed(wire: Wire) -> None:
    """A well-behaved ``/v1/models`` (and 404 for anything else a GET asks)."""
    if wire.path.startswith("/v1/models"):
        await wire.write(MODELS)
    else:
        await wire.write(b"HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\n\r\n")


async def endless_models(wire: Wire) -> None:
    await wire.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\r\n")
    await wire.write(b'{"object":"list","data":[{"id":"')
    await wire.endless(_PIECE)  # close-delimited: never ends


def gzip_bomb(expanded: int) -> bytes:
    """Gzip of ``expanded`` bytes of spaces (valid JSON whitespace), made in steps."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    block = b" " * (1 << 20)
    parts = [packer.compress(block) for _ in range(expanded >> 20)]
    return b"".join([*parts, packer.flush()])


@functools.cache
def cached_bomb(expanded: int) -> bytes:
    """:func:`gzip_bomb`, made once per process, when first asked for (not at import)."""
    return gzip_bomb(expanded)


def gzip_models(expanded: int) -> Script:
    """``/v1/models`` answered by a gzip that expands to ``expanded`` bytes."""

    async def answer(wire: Wire) -> None:
        bomb = cached_bomb(expanded)
        await wire.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            b"content-encoding: gzip\r\ncontent-length: %d\r\n\r\n" % len(bomb)
        )
        await wire.write(bomb)

    return answer


def model_named(name: str) -> Script:
    async def answer(wire: Wire) -> None:
        await wire.write(json_answer({"object": "list", "data": [{"id": name}]}))

    return answer


async def deep_models(wire: Wire) -> None:
    body = b"[" * 200_000 + b"]" * 200_000
    await wire.write(
        b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
        b"content-length: %d\r\n\r\n%s" % (len(body), body)
    )


async def endless_data_line(wire: Wire) -> None:
    await wire.write(head("200 OK") + b"data: ")
    await wire.endless(_PIECE)


async def endless_error(wire: Wire) -> None:
    await wire.write(b"HTTP/1.1 500 Internal Server Error\r\ncontent-type: text/plain\r\n\r\n")
    await wire.endless(_PIECE)


async def trickle(wire: Wire) -> None:
    """One byte a second with no newline: every read arrives well within a read timeout."""
    await wire.write(head("200 OK") + b"data: ")
    while True:
        await wire.write(b"x")
        await wire.pause(1.0)


async def answers(wire: Wire) -> None:
    await wire.write(head("200 OK", f"content-length: {len(STREAM)}") + STREAM)
