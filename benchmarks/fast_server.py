"""A minimal, fast OpenAI-style SSE server for benchmarks (raw asyncio, 127.0.0.1 only).

Every POST streams ``max_tokens`` content chunks (default 64), the first ``--ttft-ms``
after the request head arrived and then one every ``--gap-ms``, each its own HTTP chunk
and TCP write. Then a finish chunk, a usage chunk and ``[DONE]``. Keep-alive HTTP/1.1.

Writes are due at absolute instants, kept in buckets of ``--tick-ms`` (0.25 ms): one
loop timer per bucket writes every chunk due in it, instead of one timer per chunk. At
1,000 req/s x 64 tokens that is 64,000 writes/s; a timer each (asyncio's ``call_at``
costs ~10 us in Python) left the server's own core saturated, so the benchmark measured
the server. With buckets a chunk costs about one ``transport.write``. Instants are
rounded to the bucket: the first-token truth below is logged at the actual write.
Runs on uvloop when it is installed (faster writes), else asyncio.

Truth: the server logs the ``time.perf_counter_ns`` instant (CLOCK_MONOTONIC, system-wide
on Linux, so comparable with the client process) of the first content write per trace
id; ``GET /truth`` returns them as JSON and clears the log.

    python benchmarks/fast_server.py --port 8999 --cpu 1
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import time
from typing import cast

HEAD_END = b"\r\n\r\n"
CHUNK = (
    b'data: {"id":"chatcmpl-b","object":"chat.completion.chunk","created":0,"model":"bench",'
    b'"choices":[{"index":0,"delta":{"content":"tok "},"finish_reason":null}]}\n\n'
)
FINISH = (
    b'data: {"id":"chatcmpl-b","object":"chat.completion.chunk","created":0,"model":"bench",'
    b'"choices":[{"index":0,"delta":{},"finish_reason":"length"}]}\n\n'
)
DONE = b"data: [DONE]\n\n"
RESPONSE_HEAD = (
    b"HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\n"
    b"transfer-encoding: chunked\r\ncache-control: no-cache\r\n\r\n"
)


def http_chunk(data: bytes) -> bytes:
    return b"%x\r\n%s\r\n" % (len(data), data)


CONTENT_CHUNK = http_chunk(CHUNK)


def usage(tokens: int) -> bytes:
    body = {"choices": [], "usage": {"prompt_tokens": 8, "completion_tokens": tokens}}
    return http_chunk(b"data: " + json.dumps(body).encode() + b"\n\n")


class Stream(asyncio.Protocol):
    """One connection: parses pipelined heads and bodies, streams responses."""

    def __init__(self, server: FastServer) -> None:
        self.server = server
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None
        self.busy = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # Not an isinstance check: uvloop's transports do not subclass asyncio's.
        self.transport = cast(asyncio.Transport, transport)

    def connection_lost(self, exc: Exception | None) -> None:
        self.transport = None

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if not self.busy:
            self.next_request()

    def next_request(self) -> None:
        end = self.buffer.find(HEAD_END)
        if end < 0 or self.transport is None:
            return
        head = bytes(self.buffer[:end]).decode("latin-1").lower()
        length, trace = 0, ""
        for line in head.split("\r\n")[1:]:
            name, _, value = line.partition(":")
            if name == "content-length":
                length = int(value)
            elif name == "traceparent":
                trace = value.strip().split("-")[1]
        if len(self.buffer) < end + 4 + length:
            return
        body = bytes(self.buffer[end + 4 : end + 4 + length])
        del self.buffer[: end + 4 + length]
        arrival_ns = time.perf_counter_ns()
        if head.startswith("get /truth"):
            self.reply_json(json.dumps(self.server.truth).encode())
            self.server.truth = {}
        elif head.startswith("get"):
            self.reply_json(b'{"object":"list","data":[{"id":"bench","object":"model"}]}')
        else:
            try:
                tokens = int(json.loads(body).get("max_tokens") or self.server.tokens)
            except (ValueError, AttributeError, TypeError):
                tokens = self.server.tokens  # a probe or another tool's body shape
            self.busy = True
            self.transport.write(RESPONSE_HEAD)
            self.schedule(arrival_ns, trace, 0, tokens)

    def reply_json(self, payload: bytes) -> None:
        assert self.transport is not None
        self.transport.write(
            b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
            b"content-length: %d\r\n\r\n%s" % (len(payload), payload)
        )
        self.next_request()

    def schedule(self, arrival_ns: int, trace: str, index: int, tokens: int) -> None:
        server = self.server
        server.due(arrival_ns + server.ttft_ns + index * server.gap_ns, self, trace, index, tokens)

    def emit(self, trace: str, index: int, tokens: int, arrival_ns: int) -> None:
        if self.transport is None:
            return
        if index == 0 and trace:
            self.server.truth[trace] = time.perf_counter_ns()
        self.transport.write(CONTENT_CHUNK)
        if index + 1 < tokens:
            self.schedule(arrival_ns, trace, index + 1, tokens)
            return
        self.transport.write(http_chunk(FINISH) + usage(tokens) + http_chunk(DONE) + b"0\r\n\r\n")
        self.busy = False
        self.next_request()


Due = tuple[Stream, str, int, int, int]  # stream, trace, chunk index, tokens, arrival_ns


class FastServer:
    def __init__(self, tokens: int, ttft_ms: float, gap_ms: float, tick_ms: float = 0.25) -> None:
        self.tokens = tokens
        self.ttft_ns = round(ttft_ms * 1e6)
        self.gap_ns = round(gap_ms * 1e6)
        self.tick_ns = max(1, round(tick_ms * 1e6))
        self.truth: dict[str, int] = {}
        self.buckets: dict[int, list[Due]] = {}  # tick number -> writes due in it

    def due(self, at_ns: int, stream: Stream, trace: str, index: int, tokens: int) -> None:
        """Queue one write for ``at_ns``; the bucket's timer is set by its first write."""
        tick = -(-at_ns // self.tick_ns)  # round up: never write before the instant
        bucket = self.buckets.get(tick)
        if bucket is None:
            bucket = self.buckets[tick] = []
            loop = asyncio.get_running_loop()
            when = loop.time() + (tick * self.tick_ns - time.perf_counter_ns()) / 1e9
            loop.call_at(when, self.fire, tick)
        bucket.append((stream, trace, index, tokens, at_ns - index * self.gap_ns - self.ttft_ns))

    def fire(self, tick: int) -> None:
        for stream, trace, index, tokens, arrival_ns in self.buckets.pop(tick, ()):
            stream.emit(trace, index, tokens, arrival_ns)

    async def serve(self, port: int, seconds: float) -> None:
        loop = asyncio.get_running_loop()
        server = await loop.create_server(
            lambda: Stream(self), "127.0.0.1", port, backlog=4096, reuse_address=True
        )
        print(f"listening on 127.0.0.1:{port}", flush=True)
        async with server:
            await asyncio.sleep(seconds)  # bounded: the server stops by itself


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8999)
    parser.add_argument("--tokens", type=int, default=64, help="when the body has no max_tokens")
    parser.add_argument("--ttft-ms", type=float, default=5.0)
    parser.add_argument("--gap-ms", type=float, default=5.0)
    parser.add_argument("--tick-ms", type=float, default=0.25, help="write bucket width")
    parser.add_argument("--cpu", type=int, default=None, help="pin to this core")
    parser.add_argument("--seconds", type=float, default=3600.0, help="stop after this long")
    args = parser.parse_args()
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    server = FastServer(args.tokens, args.ttft_ms, args.gap_ms, args.tick_ms)
    try:
        import uvloop  # optional: faster writes
    except ImportError:
        asyncio.run(server.serve(args.port, args.seconds))
    else:
        uvloop.run(server.serve(args.port, args.seconds))


if __name__ == "__main__":
    main()
