"""The server's version and build, read from each engine's own endpoint (docs/environment.md).

Each engine says it differently:

- vLLM ``GET /version``: ``{"version": "0.32.0"}``;
- llama.cpp ``GET /props``: ``build_info`` (``"b6123-1a2b3c4d"``, the release and commit);
- TGI ``GET /info``: ``version`` and ``sha`` (the commit);
- SGLang ``GET /get_server_info``: ``version`` among its server arguments;
- Ollama ``GET /api/version``: ``version``;
- the embedded server ``GET /version``: ``version`` and ``build``.

A server of unknown kind (an existing URL) is asked at each endpoint in turn; the first
that names a version wins. Nothing found is ``None`` for both (never a guess).
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import httpx

from pytest_latency.driver.bounded_read import AnswerUnreadable
from pytest_latency.secret import Secret
from pytest_latency.servers._http import bounded_client, get_json
from pytest_latency.shown_text import shown

__all__ = ("ENDPOINTS", "ServerVersion", "parse_version", "read_server_version")


@dataclass(frozen=True, slots=True)
class ServerVersion:
    """What the server said of itself; ``source`` is the endpoint that said it."""

    version: str | None = None
    build: str | None = None
    source: str | None = None

    def to_json(self) -> dict[str, object]:
        return {"version": self.version, "build": self.build, "version_source": self.source}


def _text(body: Mapping[str, object], key: str) -> str | None:
    value = body.get(key)
    return value if isinstance(value, str) and value else None


def _plain(body: Mapping[str, object]) -> tuple[str | None, str | None]:
    return _text(body, "version"), _text(body, "build")


def _llamacpp(body: Mapping[str, object]) -> tuple[str | None, str | None]:
    build = _text(body, "build_info")
    return build, build


def _tgi(body: Mapping[str, object]) -> tuple[str | None, str | None]:
    return _text(body, "version"), _text(body, "sha")


Parser = Callable[[Mapping[str, object]], tuple[str | None, str | None]]
# Per kind: the endpoint and how to read it. The embedded server answers like vLLM.
ENDPOINTS: Mapping[str, tuple[str, Parser]] = {
    "vllm": ("/version", _plain),
    "sim": ("/version", _plain),
    "llamacpp": ("/props", _llamacpp),
    "tgi": ("/info", _tgi),
    "sglang": ("/get_server_info", _plain),
    "ollama": ("/api/version", _plain),
}


def parse_version(kind: str, body: object) -> tuple[str | None, str | None]:
    """(version, build) from the JSON ``body`` of ``kind``'s endpoint; Nones if absent."""
    if not isinstance(body, Mapping):
        return None, None
    return ENDPOINTS[kind][1](body)


def read_server_version(
    base_url: str, kind: str, api_key: Secret | None = None, timeout_s: float = 1.0
) -> ServerVersion:
    """Ask ``kind``'s own endpoint (every known endpoint when the kind is unknown)."""
    kinds = [kind] if kind in ENDPOINTS else list(dict.fromkeys(ENDPOINTS))
    asked: set[str] = set()
    deadline = time.monotonic() + 2.0 * timeout_s * len(kinds)  # bounded whatever answers
    # Read bounded (a hostile endpoint cannot grow memory or hold the run), the key in
    # an httpx.Auth (never in a local dict a traceback would show).
    with bounded_client(timeout_s, api_key) as client:
        for name in kinds:
            path = ENDPOINTS[name][0]
            if path in asked and name != kind:  # /version serves vLLM and the sim alike
                continue
            asked.add(path)
            try:
                status, body, _ = get_json(client, f"{base_url}{path}", deadline)
            except (httpx.HTTPError, AnswerUnreadable):
                continue
            version, build = parse_version(name, body if status == 200 else None)
            if version is not None:
                return ServerVersion(
                    shown(version, 80), None if build is None else shown(build, 80), path
                )
    return ServerVersion()
