"""A scripted OpenAI-style streaming server for driver tests (127.0.0.1 only).

Raw asyncio HTTP/1.1 in its own thread and event loop, so tests control every byte
and every instant: each step of a script is written at a fixed offset from the
request's arrival (sleeping to absolute deadlines), and the server logs the
``perf_counter_ns`` instant of each write. Client and server share the process's
monotonic clock, so a test can compare the driver's measurements with the instants
the bytes really left the server: that is the truth the driver's numbers are held to.

The script for a request is chosen by the ``model`` in its body.
"""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal

End = Literal["eof", "cut", "hang"]
REASONS = {
    200: "OK",
    400: "Bad Request",
    429: "Too Many Requests",
    500: "Internal Server Error",
    503: "Service Unavailable",
}


@dataclass(frozen=True)
class Step:
    at_s: float  # seconds after the request arrived
    data: bytes  # body bytes, sent as one HTTP chunk (one TCP write)
    label: str = ""


@dataclass(frozen=True)
class Script:
    steps: tuple[Step, ...] = ()
    status: int | None = 200  # None: never answer at all
    content_type: str = "text/event-stream"
    end: End = "eof"  # eof: finish the chunked body; cut: drop the TCP connection; hang
    headers: tuple[tuple[str, str], ...] = ()  # extra response headers


@dataclass
class Exchange:
    """What the server saw and did for one POST."""

    model: str
    index: int  # arrival order among requests for this model
    arrival_ns: int
    headers: dict[str, str]
    body: dict[str, Any]
    writes: list[tuple[str, int]] = field(default_factory=list)  # (label, perf ns)

    def instants(self, label: str) -> list[int]:
        return [ns for name, ns in self.writes if name == label]

    @property
    def trace_id(self) -> str:
        return self.headers.get("traceparent", "---").split("-")[1]


ScriptFactory = Callable[[int], Script]


def sse(obj: object) -> bytes:
    return b"data: " + json.dumps(obj).encode() + b"\n\n"


DONE = b"data: [DONE]\n\n"


def chat_chunk(
    content: str | None = None,
    *,
    role: str | None = None,
    finish: str | None = None,
    timings: dict[str, float] | None = None,
    **delta_extra: str,
) -> bytes:
    delta: dict[str, str] = dict(delta_extra)
    if role is not None:
        delta["role"] = role
    if content is not None:
        delta["content"] = content
    chunk: dict[str, Any] = {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
    }
    if timings is not None:
        chunk["timings"] = timings  # llama.cpp puts these on its last chunk
    return sse(chunk)


def text_chunk(text: str, finish: str | None = None) -> bytes:
    return sse(
        {
            "object": "text_completion",
            "choices": [{"index": 0, "text": text, "finish_reason": finish}],
        }
    )


def usage_chunk(completion_tokens: int) -> bytes:
    return sse(
        {"choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": completion_tokens}}
    )


class LoopServer:
    """An asyncio server on 127.0.0.1 in its own thread and event loop.

    Subclasses serve one connection in :meth:`_serve`; :meth:`start` / :meth:`stop` run
    and end the loop, cancelling connections still open.
    """

    def __init__(self) -> None:
        self.port = 0
        self._loop = asyncio.new_event_loop()
        self._tasks: set[asyncio.Task[None]] = set()
        self._server: asyncio.Server | None = None
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def thread_id(self) -> int:
        """The server thread's native id (for its run-queue wait, see run_queue.py)."""
        assert self._thread.native_id is not None, "the server is not started"
        return self._thread.native_id

    def start(self) -> None:
        self._thread.start()
        future = asyncio.run_coroutine_threadsafe(self._listen(), self._loop)
        self.port = future.result(timeout=5)

    def stop(self) -> None:
        asyncio.run_coroutine_threadsafe(self._shutdown(), self._loop).result(timeout=5)
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=5)
        self._loop.close()

    async def _listen(self) -> int:
        self._server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        port: int = self._server.sockets[0].getsockname()[1]
        return port

    async def _shutdown(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._tasks.add(task)
        try:
            await self._serve(reader, writer)
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # client went away, or the server is shutting down
        finally:
            self._tasks.discard(task)
            writer.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        raise NotImplementedError


class ScriptedServer(LoopServer):
    """Start with :meth:`start`, route models to scripts, read :attr:`exchanges`."""

    def __init__(self) -> None:
        super().__init__()
        self.routes: dict[str, ScriptFactory] = {}
        self.exchanges: list[Exchange] = []
        self.connections = 0
        self.gets = 0
        self.models: list[str] = []  # what GET /v1/models lists
        self._counts: dict[str, int] = {}

    def route(self, model: str, script: Script | ScriptFactory) -> None:
        self.routes[model] = script if callable(script) else (lambda _index: script)

    def by_trace(self) -> dict[str, Exchange]:
        return {exchange.trace_id: exchange for exchange in self.exchanges}

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        while await self._one_request(reader, writer):
            pass

    async def _one_request(
        self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> bool:
        head = await reader.readuntil(b"\r\n\r\n")
        arrival_ns = time.perf_counter_ns()
        request_line, *lines = head.decode("latin-1").rstrip("\r\n").split("\r\n")
        method = request_line.split(" ")[0]
        headers = {}
        for line in lines:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        body = await reader.readexactly(int(headers.get("content-length", "0")))
        if method == "GET":
            self.gets += 1
            models = [{"id": model, "object": "model"} for model in self.models]
            payload = json.dumps({"object": "list", "data": models}).encode()
            writer.write(
                b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                b"content-length: %d\r\n\r\n%s" % (len(payload), payload)
            )
            await writer.drain()
            return True
        parsed = json.loads(body)
        model = parsed.get("model", "")
        index = self._counts.get(model, 0)
        self._counts[model] = index + 1
        exchange = Exchange(model, index, arrival_ns, headers, parsed)
        self.exchanges.append(exchange)
        return await self._play(self.routes[model](index), exchange, writer)

    async def _play(self, script: Script, exchange: Exchange, writer: asyncio.StreamWriter) -> bool:
        if script.status is None:
            await asyncio.Event().wait()  # never answers; cancelled at shutdown
        reason = REASONS.get(script.status or 0, "Status")
        extra = "".join(f"{name}: {value}\r\n" for name, value in script.headers)
        writer.write(
            f"HTTP/1.1 {script.status} {reason}\r\ncontent-type: {script.content_type}"
            f"\r\ntransfer-encoding: chunked\r\n{extra}\r\n".encode()
        )
        await writer.drain()
        for step in script.steps:
            delay_ns = exchange.arrival_ns + round(step.at_s * 1e9) - time.perf_counter_ns()
            if delay_ns > 0:
                await asyncio.sleep(delay_ns / 1e9)
            exchange.writes.append((step.label, time.perf_counter_ns()))
            writer.write(b"%x\r\n%s\r\n" % (len(step.data), step.data))
            await writer.drain()
        if script.end == "hang":
            await asyncio.Event().wait()
        if script.end == "cut":
            writer.transport.abort()
            return False
        writer.write(b"0\r\n\r\n")
        await writer.drain()
        return True


PROMPT = "Tell me about the secret lighthouse keeper whose name is Bartholomew Quill."


def plan_at(
    times: list[float],
    *,
    timeout_s: float = 5.0,
    phase: str = "steady",
    warmup: int = 0,
    output_tokens: int = 16,
) -> Any:
    """A Plan offering one request at each of ``times`` (seconds from time zero)."""
    from pytest_latency.spec.model import Phase, Workload
    from pytest_latency.workload.plan import Plan, PlannedRequest

    duration = max(max(times, default=0.0), 0.001) + 0.001
    workload = Workload(
        phases=(Phase(name=phase, rate=max(len(times), 1) / duration, duration_s=duration),),
        timeout_s=timeout_s,
        output_tokens=output_tokens,
    )

    def planned(i: int, at: float) -> PlannedRequest:
        return PlannedRequest(
            id=i,
            phase=phase,
            intended_s=at,
            input_tokens=12,
            output_tokens=output_tokens,
            prompt=PROMPT,
        )

    return Plan(
        workload=workload,
        requests=tuple(planned(i, at) for i, at in enumerate(times)),
        warmup=tuple(planned(1000 + i, 0.0) for i in range(warmup)),
    )
