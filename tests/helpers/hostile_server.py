"""A hostile HTTP server for driver tests: raw bytes, 127.0.0.1 only, its own thread.

Every POST is answered by the test's script, a coroutine that writes whatever bytes it
likes through a :class:`Wire` (bad framing, interim responses, a drip, a reset, nothing
at all). GETs (the driver's warm-up pings) get a small well-formed answer. The server
notes, per connection, how many POSTs it served and whether a script wrote bytes past
the response it framed ("tainted"), so a test can prove no request read another's
leftovers.
"""

from __future__ import annotations

import asyncio
import json
import socket
import struct
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

from tests.helpers.scripted_server import LoopServer


@dataclass
class ConnectionLog:
    posts: int = 0
    tainted_after: int | None = None  # the POST count when leftovers were written


class Wire:
    """What a script can do to the one connection it answers on."""

    def __init__(self, writer: asyncio.StreamWriter, log: ConnectionLog) -> None:
        self.writer = writer
        self.log = log
        self.closed = False

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


Script = Callable[[Wire], Awaitable[None]]


class HostileServer(LoopServer):
    def __init__(self, script: Script) -> None:
        super().__init__()
        self.script = script
        self.logs: list[ConnectionLog] = []

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
            if head.startswith(b"GET"):
                body = b'{"object":"list","data":[]}'
                await wire.write(
                    b"HTTP/1.1 200 OK\r\ncontent-length: %d\r\n\r\n%s" % (len(body), body)
                )
                continue
            log.posts += 1
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
