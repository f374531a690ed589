"""Drains read a server's live queue: SGLang's /v1/loads, not its lagging gauges."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from pytest_latency.telemetry.queue_depth import parse_loads, queue_depth

# SGLang after the last request: its gauges last refreshed mid-decode (running 3).
STALE_SGLANG = (
    'sglang:num_running_reqs{dp_rank="0",model_name="m"} 3\n'
    'sglang:num_queue_reqs{dp_rank="0",model_name="m"} 0\n'
)
VLLM = 'vllm:num_requests_running{engine="0"} 2\nvllm:num_requests_waiting{engine="0"} 1\n'
IDLE_LOADS = (
    '{"loads": [{"dp_rank": 0, "num_running_reqs": 0, "num_waiting_reqs": 0, "token_usage": 0.1},'
    ' {"dp_rank": 1, "num_running_reqs": 0, "num_waiting_reqs": 0, "token_usage": 0.0}]}'
)


class Pages(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self, pages: dict[str, str]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.pages = pages

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class _Handler(BaseHTTPRequestHandler):
    server: Pages

    def do_GET(self) -> None:
        body = self.server.pages.get(self.path)
        self.send_response(200 if body is not None else 404)
        data = (body or "not found").encode()
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: object) -> None:
        pass


Serve = Callable[[dict[str, str]], str]


@pytest.fixture
def serve() -> Iterator[Serve]:
    servers: list[Pages] = []

    def start(pages: dict[str, str]) -> str:
        server = Pages(pages)
        threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True).start()
        servers.append(server)
        return server.url

    yield start
    for server in servers:
        server.shutdown()
        server.server_close()


def depth(url: str) -> dict[str, float]:
    with httpx.Client(timeout=2.0, trust_env=False) as client:
        return queue_depth(client, url)


def test_sglang_drains_by_its_live_loads_not_its_stale_gauges(serve: Serve) -> None:
    url = serve({"/metrics": STALE_SGLANG, "/v1/loads": IDLE_LOADS})
    assert depth(url) == {"waiting": 0.0, "running": 0.0}


def test_sglang_without_loads_gives_no_values_rather_than_stale_ones(serve: Serve) -> None:
    assert depth(serve({"/metrics": STALE_SGLANG})) == {}


def test_other_servers_drain_by_their_gauges(serve: Serve) -> None:
    assert depth(serve({"/metrics": VLLM, "/v1/loads": IDLE_LOADS})) == {
        "waiting": 1.0,
        "running": 2.0,
    }


def test_nothing_listening_is_no_values() -> None:
    assert depth("http://127.0.0.1:1") == {}


@pytest.mark.parametrize(
    "document",
    [{}, {"loads": []}, {"loads": [{"num_running_reqs": 1}]}, {"loads": ["x"]}, [1, 2]],
)
def test_other_shapes_of_loads_are_not_read(document: object) -> None:
    assert parse_loads(document) is None


def test_loads_add_up_over_ranks() -> None:
    document = {
        "loads": [
            {"num_running_reqs": 2, "num_waiting_reqs": 1},
            {"num_running_reqs": 1, "num_waiting_reqs": 0},
        ]
    }
    assert parse_loads(document) == {"waiting": 1.0, "running": 3.0}
