"""An OpenAI-style streaming server that exports each request's span before it answers.

What a user's own vLLM does when pointed at ``--latency-otlp-receiver``: for every
``POST /v1/chat/completions`` it takes the trace id from the request's ``traceparent``,
posts one OTLP/HTTP protobuf span (vLLM's ``llm_request`` attributes, with a queue wait
of its own choosing) to the receiver, and only then streams its answer. So the span is
sent during the run, and whether the receiver took it is known before the client sees
a byte. 127.0.0.1 only.
"""

from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from tests.helpers.otlp_helpers import VLLM_ATTRS, make_request, make_span, post

MODEL = "span-model"
CONTENT = ("Photo", "synthesis", ".")


class SpanExportingServer(ThreadingHTTPServer):
    """Serve in a daemon thread; read :attr:`exports` and :attr:`queue_wait_s` after."""

    daemon_threads = True

    def __init__(self, traces_url: str) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.traces_url = traces_url
        self.lock = threading.Lock()
        self.queue_wait_s: dict[str, float] = {}  # trace id -> queue wait it reported
        self.exports: dict[str, str] = {}  # trace id -> the receiver's answer, or the error
        self._thread = threading.Thread(target=self.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self.shutdown()
        self.server_close()
        self._thread.join(timeout=5)

    def export_span(self, trace_id: str) -> None:
        """Post this request's span now; remember what the receiver said."""
        with self.lock:
            # distinct per trace, and below any e2e: the join clamps server durations to it
            queue_wait = round(0.0001 + 0.00001 * len(self.queue_wait_s), 7)
            self.queue_wait_s[trace_id] = queue_wait
        attrs = {**VLLM_ATTRS, "gen_ai.latency.time_in_queue": queue_wait}
        body = make_request([make_span(trace_id, "llm_request", attrs)], "vllm.llm_engine")
        try:
            status, _, _ = post(self.traces_url, body.SerializeToString())
            outcome = f"HTTP {status}"
        except OSError as error:  # nobody listening: what the receiver's late start caused
            outcome = f"{type(error).__name__}: {error}"
        with self.lock:
            self.exports[trace_id] = outcome


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: SpanExportingServer

    def do_GET(self) -> None:
        if self.path == "/v1/models":
            self._send_json(200, {"object": "list", "data": [{"id": MODEL}]})
        else:
            self._send_json(404, {"error": "not found"})

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers.get("Content-Length", "0")))
        traceparent = self.headers.get("traceparent", "")
        parts = traceparent.split("-")
        if self.path != "/v1/chat/completions" or len(parts) != 4:
            self._send_json(400, {"error": "expected a chat completion with a traceparent"})
            return
        self.server.export_span(parts[1])
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for index, text in enumerate(CONTENT):
            finish = "stop" if index == len(CONTENT) - 1 else None
            delta = {"role": "assistant", "content": text} if index == 0 else {"content": text}
            chunk = {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}
            self._write_chunk(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        self._write_chunk(b"data: [DONE]\n\n")
        self.wfile.write(b"0\r\n\r\n")
        self.wfile.flush()

    def log_message(self, format: str, *args: Any) -> None:
        pass  # keep the test's output clean

    def _write_chunk(self, data: bytes) -> None:
        self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.wfile.flush()

    def _send_json(self, status: int, payload: object) -> None:
        body = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)
