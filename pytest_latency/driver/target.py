"""Where the driver sends (:class:`Target`) and how it reaches it: the hot path for plain
http:// on asyncio, else an httpx client of the driver's own (:func:`make_client`), or the
caller's.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal

import httpx

from pytest_latency.driver.fast import FastTransport
from pytest_latency.driver.httpx_transport import HttpxTransport
from pytest_latency.driver.limits import ResponseLimits
from pytest_latency.driver.transport import Transport
from pytest_latency.secret import Secret

# Below the 5 s idle timeout of uvicorn-based servers (vLLM, SGLang), so a pooled
# connection is not reused just as the server closes it.
KEEPALIVE_EXPIRY_S = 4.0
# Server kinds whose streams report usage on every chunk when asked (vLLM's
# ``stream_options.continuous_usage_stats``); others may reject the unknown key.
CONTINUOUS_USAGE_KINDS = frozenset({"vllm"})
_PATHS = {"chat": "/v1/chat/completions", "completions": "/v1/completions"}


@dataclass(frozen=True, slots=True)
class Target:
    """Where to send: an OpenAI-compatible server. ``headers`` are never logged.

    ``api_key`` is sent as ``Authorization: Bearer``; it is revealed only into the
    headers of the requests, and texts the server sends back are redacted of it.

    ``extra_body`` keys (e.g. ``min_tokens``, ``ignore_eos``) are added to every request
    body last, so they override the driver's own keys. ``limits`` bound what one response
    may cost the client (head, SSE line, body size); a response over them is a
    ``protocol_error``.
    """

    base_url: str  # "http://127.0.0.1:8000", without /v1
    model: str
    api: Literal["chat", "completions"] = "chat"
    headers: Mapping[str, str] = field(default_factory=dict)
    extra_body: Mapping[str, object] = field(default_factory=dict)
    limits: ResponseLimits = field(default_factory=ResponseLimits)
    api_key: Secret | None = None
    # Keep each request's prompt and generated text in its record (off: they are never
    # stored, so no report can show them): ``--latency-record-content``.
    record_content: bool = False
    # Ask for usage on every chunk (``stream_options.continuous_usage_stats``), so records
    # keep tokens per chunk; only for servers that accept it (vLLM, see
    # :data:`CONTINUOUS_USAGE_KINDS`).
    continuous_usage_stats: bool = False
    # The high half of every request's trace id (16 hex digits; None: all random): the
    # OTLP receiver keeps the run's own spans apart from anyone else's by it.
    trace_prefix: str | None = None

    def __post_init__(self) -> None:
        if self.api not in _PATHS:
            raise ValueError(f"api must be 'chat' or 'completions', got {self.api!r}")
        if not self.base_url.startswith(("http://", "https://")):
            raise ValueError(f"base_url must start with http:// or https://, got {self.base_url!r}")

    @property
    def url(self) -> str:
        return self.base_url.rstrip("/") + _PATHS[self.api]

    def __repr__(self) -> str:  # headers may hold credentials
        return f"Target(base_url={self.base_url!r}, model={self.model!r}, api={self.api!r})"


def make_client() -> httpx.AsyncClient:
    """The driver's own client: uncapped pool (open loop), keep-alive, HTTP/1.1, no env proxies."""
    return httpx.AsyncClient(
        http1=True,
        http2=False,
        trust_env=False,
        follow_redirects=False,
        timeout=httpx.Timeout(None),  # deadlines are the driver's, per request
        limits=httpx.Limits(
            max_connections=None,
            max_keepalive_connections=None,
            keepalive_expiry=KEEPALIVE_EXPIRY_S,
        ),
    )


def choose_transport(target: Target, client: httpx.AsyncClient | None) -> Transport:
    """A caller's client is used as it is; otherwise the hot path when it applies (asyncio,
    plain http://), else a client of our own (https, trio)."""
    if client is not None:
        return HttpxTransport(client, target.url, owns_client=False, limits=target.limits)
    try:
        asyncio.get_running_loop()
        on_asyncio = True
    except RuntimeError:  # not on asyncio (trio): httpx does the work
        on_asyncio = False
    url = httpx.URL(target.url)
    if on_asyncio and url.scheme == "http" and url.host:
        return FastTransport(target.url, KEEPALIVE_EXPIRY_S, target.limits)
    return HttpxTransport(make_client(), target.url, owns_client=True, limits=target.limits)
