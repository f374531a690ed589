"""The HTTP surface of the reference server: gateway, OpenAI routes, health, metrics.

The gateway validates the request, takes the W3C trace id (or creates one), then
hands the request to the admission queue. A streaming response starts (headers and,
for chat, the role chunk) when the request reaches a replica, so a queue timeout
can still be answered with a proper 503 status. Responses carry ``Server-Timing``
(:mod:`.tracing`): the queue wait when a stream starts, queue/prefill/decode when a
non-streaming response is complete.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from pytest_latency.file_format import plugin_version
from pytest_latency.sim.chunks import StreamChunks, reasoning_of
from pytest_latency.sim.config import SimConfig
from pytest_latency.sim.engine import ServerTimings, State
from pytest_latency.sim.live import ABORTED, ADMITTED, EXPIRED, FINISHED, LiveEngine, Ticket
from pytest_latency.sim.metrics import exposition
from pytest_latency.sim.protocol import (
    DONE,
    Api,
    Encoder,
    GenRequest,
    RequestError,
    error_body,
    new_trace_id,
    parse_request,
    parse_traceparent,
)
from pytest_latency.sim.tracing import RequestTrace, SpanExport, extract_parent, server_timing

RETRY_AFTER_S = 1  # what a 429 tells clients; the queue drains within seconds
_SSE_HEADERS = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}


class SimApp:
    """One server instance: its live engine and its Starlette application."""

    def __init__(self, config: SimConfig) -> None:
        self.config = config
        endpoint = config.otlp_traces_endpoint
        self.spans = (
            SpanExport(endpoint, config.model, sampling=config.otlp_sampling) if endpoint else None
        )
        self.live = LiveEngine(config, self.spans)
        self.invalid = 0  # requests refused by validation (400/404)
        self._ordinal = 0
        self._created = int(time.time())
        self.asgi = Starlette(
            routes=[
                Route("/v1/chat/completions", self.chat, methods=["POST"]),
                Route("/v1/completions", self.completions, methods=["POST"]),
                Route("/v1/models", self.models, methods=["GET"]),
                Route("/health", self.health, methods=["GET"]),
                Route("/version", self.version, methods=["GET"]),
                Route("/metrics", self.metrics, methods=["GET"]),
            ],
            lifespan=self._lifespan,
        )

    @asynccontextmanager
    async def _lifespan(self, _app: Starlette) -> AsyncIterator[None]:
        self.live.start_clock()
        try:
            yield
        finally:
            await self.aclose()

    async def aclose(self) -> None:
        """Abort what is in flight, then flush its spans (bounded); idempotent."""
        await self.live.shutdown()
        spans, self.spans = self.spans, None
        if spans is not None:
            await asyncio.to_thread(spans.shutdown)

    async def chat(self, request: Request) -> Response:
        return await self._generate(request, "chat")

    async def completions(self, request: Request) -> Response:
        return await self._generate(request, "completions")

    async def models(self, _request: Request) -> Response:
        model = {
            "id": self.config.model,
            "object": "model",
            "created": self._created,
            "owned_by": "pytest-latency",
        }
        return JSONResponse({"object": "list", "data": [model]})

    async def version(self, _request: Request) -> Response:
        """What this server is, as vLLM's ``/version`` says it (docs/environment.md)."""
        return JSONResponse({"version": f"pytest-latency-sim {plugin_version()}"})

    async def health(self, _request: Request) -> Response:
        if self.live.closed or not self.live.engine.is_ready(time.perf_counter()):
            return JSONResponse({"status": "starting"}, status_code=503)
        return JSONResponse({"status": "ok"})

    async def metrics(self, _request: Request) -> Response:
        text = exposition(self.live.engine, self.invalid, self.live.queue_time, time.perf_counter())
        return Response(text, media_type="text/plain; version=0.0.4; charset=utf-8")

    async def _generate(self, request: Request, api: Api) -> Response:
        client_trace_id = parse_traceparent(request.headers.get("traceparent"))
        self._ordinal += 1
        try:
            try:
                body = json.loads(await request.body())
            except ValueError as exc:
                raise RequestError(f"the request body is not valid JSON: {exc}") from None
            gen = parse_request(body, api, self.config, self._ordinal)
        except RequestError as exc:
            self.invalid += 1
            return _error(exc.status, str(exc), "invalid_request_error", exc.code)
        if self.live.closed:
            return _error(
                503, "the server is shutting down", "service_unavailable", "shutting_down"
            )
        trace = self._trace(request, api, client_trace_id is not None)
        trace_id = client_trace_id or new_trace_id()
        service_class = request.headers.get(self.config.class_header, "")
        ticket = self.live.submit(
            gen.prompt_tokens, gen.target_tokens, trace_id, gen.stream, trace, gen.blocks,
            gen.priority, service_class,
        )  # fmt: skip
        if ticket.state is State.UNAVAILABLE:
            return _error(503, "no replica is ready yet", "service_unavailable", "not_ready")
        if ticket.state is State.REJECTED:
            full = self.live.engine.waiting >= self.config.max_queue
            message = (
                "the admission queue is full"
                if full
                else f"class {service_class} is over its share"
            )
            response = _error(
                429, message, "rate_limit_error", "queue_full" if full else "over_share"
            )
            response.headers["Retry-After"] = str(RETRY_AFTER_S)
            return response
        return await self._respond(request, ticket, gen)

    def _trace(self, request: Request, api: Api, has_parent: bool) -> RequestTrace | None:
        if self.spans is None:
            return None
        parent = extract_parent(request.headers) if has_parent else None
        return RequestTrace(api, parent, request.headers.get("x-request-id") or None)

    async def _respond(self, request: Request, ticket: Ticket, gen: GenRequest) -> Response:
        """Wait in the queue (watching for the client leaving), then answer."""
        disconnect = asyncio.ensure_future(_disconnected(request))
        try:
            event = await _next_event(ticket, disconnect)
            if gen.stream and event == ADMITTED:
                disconnect.cancel()  # the streaming response watches from here on
                encoder = Encoder(gen.api, self.config.model, ticket.sequence.id)
                stream = self._stream(ticket, gen, encoder)
                timing = server_timing(ticket.sequence.timings, final=False)
                return StreamingResponse(
                    stream, media_type="text/event-stream", headers=_SSE_HEADERS | timing
                )
            while event == ADMITTED:
                event = await _next_event(ticket, disconnect)
        finally:
            disconnect.cancel()
        if event is None:  # the client went away: nobody reads this response
            self.live.cancel(ticket)
            return Response(status_code=499)
        timings = ticket.sequence.timings
        if event == FINISHED:
            encoder = Encoder(gen.api, self.config.model, ticket.sequence.id)
            reason = _finish_reason(ticket, gen)
            body = encoder.completion(
                gen.prompt_tokens, ticket.sequence.generated, reason, self._cached(timings)
            )
            return JSONResponse(body, headers=server_timing(timings, final=True))
        return _final_error(event, timings)

    async def _stream(
        self, ticket: Ticket, gen: GenRequest, encoder: Encoder
    ) -> AsyncIterator[bytes]:
        try:
            if gen.api == "chat":
                yield encoder.role_chunk()
            events = ticket.events
            chunks = StreamChunks(self.config, gen, encoder)
            finished = False
            while not finished:  # bounded: at most target_tokens token events, then a final one
                parts: list[bytes] = []
                event = await events.get()
                while True:  # write everything already produced in one go
                    if event > 0:
                        parts.append(chunks.token(event))
                    else:
                        finished = True
                        if event == FINISHED:
                            parts.append(chunks.flush())
                            parts.append(self._trailer(ticket, gen, encoder))
                        break  # aborted mid-stream: end without [DONE], a truncated stream
                    if events.empty():
                        break
                    event = events.get_nowait()
                if any(parts):
                    yield b"".join(parts)
        finally:
            self.live.cancel(ticket)  # a no-op unless the client left mid-stream

    def _trailer(self, ticket: Ticket, gen: GenRequest, encoder: Encoder) -> bytes:
        trailer = encoder.finish_chunk(_finish_reason(ticket, gen))
        if gen.include_usage:
            cached = self._cached(ticket.sequence.timings)
            generated, reasoning = ticket.sequence.generated, reasoning_of(self.config, gen)
            trailer += encoder.usage_chunk(gen.prompt_tokens, generated, cached, reasoning)
        return trailer + DONE

    def _cached(self, timings: ServerTimings) -> int | None:
        """Cached prompt tokens to report; None (not reported) with the cache off."""
        return timings.cached_tokens if self.config.prefix_cache_blocks else None


async def _disconnected(request: Request) -> None:
    """Return once the client has gone away (the body has been read already)."""
    for _ in range(1000):  # each receive blocks until the server sees a new message
        message = await request.receive()
        if message["type"] == "http.disconnect":
            return
    await asyncio.Future()  # a chatty client: stop listening, wait to be cancelled


async def _next_event(ticket: Ticket, disconnect: asyncio.Future[None]) -> int | None:
    """The ticket's next event, or None when the client disconnected first."""
    if not ticket.events.empty():
        return ticket.events.get_nowait()
    getter = asyncio.ensure_future(ticket.events.get())
    await asyncio.wait((getter, disconnect), return_when=asyncio.FIRST_COMPLETED)
    if getter.done():
        return getter.result()
    getter.cancel()
    return None


def _finish_reason(ticket: Ticket, gen: GenRequest) -> str:
    return "length" if ticket.sequence.generated >= gen.max_tokens else "stop"


def _final_error(event: int, timings: ServerTimings) -> Response:
    if event == EXPIRED:
        response = _error(
            503,
            "the request waited longer than the queue timeout",
            "service_unavailable",
            "queue_timeout",
        )
    else:
        assert event == ABORTED, event
        response = _error(
            503, "the server is shutting down", "service_unavailable", "shutting_down"
        )
    response.headers.update(server_timing(timings, final=False))  # how long it waited
    return response


def _error(status: int, message: str, kind: str, code: str | None = None) -> JSONResponse:
    body: dict[str, Any] = error_body(message, kind, code)
    return JSONResponse(body, status_code=status)
