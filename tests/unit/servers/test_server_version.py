"""The server's version is read from each engine's own endpoint, or is None (never a guess)."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from pytest_latency.servers.server_version import (
    ServerVersion,
    parse_version,
    read_server_version,
)


@contextmanager
def answering(routes: Mapping[str, object]) -> Iterator[str]:
    """A loopback server answering GET ``path`` with ``routes[path]`` as JSON, else 404."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = routes.get(self.path)
            payload = json.dumps(body).encode()
            self.send_response(404 if body is None else 200)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(payload)))
            self.end_headers()
            self.wfile.write(payload)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    ("kind", "body", "expected"),
    [
        ("vllm", {"version": "0.32.0"}, ("0.32.0", None)),
        ("llamacpp", {"build_info": "b6123-1a2b3c4d", "total_slots": 4}, ("b6123-1a2b3c4d",) * 2),
        ("tgi", {"version": "3.3.4", "sha": "9f38d93", "model_id": "m"}, ("3.3.4", "9f38d93")),
        ("sglang", {"version": "0.5.4", "tp_size": 1}, ("0.5.4", None)),
        ("ollama", {"version": "0.12.6"}, ("0.12.6", None)),
        ("sim", {"version": "pytest-latency-sim 1.0"}, ("pytest-latency-sim 1.0", None)),
    ],
)
def test_each_engine_is_read_at_its_own_endpoint_shape(
    kind: str, body: object, expected: tuple[str | None, str | None]
) -> None:
    assert parse_version(kind, body) == expected


def test_an_answer_without_a_version_gives_none_not_a_guess() -> None:
    assert parse_version("vllm", {"version": ""}) == (None, None)
    assert parse_version("tgi", ["3.0"]) == (None, None)
    assert parse_version("llamacpp", {"version": 3}) == (None, None)


def test_a_known_kind_is_asked_at_its_endpoint_and_says_where() -> None:
    with answering({"/props": {"build_info": "b7000-abc"}, "/version": {"version": "no"}}) as url:
        found = read_server_version(url, "llamacpp")
    assert found == ServerVersion("b7000-abc", "b7000-abc", "/props")


def test_an_unknown_server_is_asked_at_every_engine_endpoint() -> None:
    with answering({"/get_server_info": {"version": "0.5.4"}}) as url:
        found = read_server_version(url, "url")
    assert found == ServerVersion("0.5.4", None, "/get_server_info")


def test_a_server_that_says_nothing_has_a_null_version() -> None:
    with answering({}) as url:
        found = read_server_version(url, "url")
    assert found.to_json() == {"version": None, "build": None, "version_source": None}


def test_an_unreachable_server_has_a_null_version() -> None:
    with answering({}) as url:
        pass  # closed: nobody listens there any more
    assert read_server_version(url, "vllm", timeout_s=0.5) == ServerVersion()
