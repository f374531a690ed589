"""The status table: each way a request can end, the status it maps to, and its error text.

Shared by the status tests (httpx transport) and the fast-path parity tests (raw
HTTP/1.1), so both transports are held to the same rules.
"""

from __future__ import annotations

import json

from pytest_latency.driver import Status
from tests.helpers.scripted_server import DONE, PROMPT, Script, Step, chat_chunk, sse

FIRST = Step(0.02, chat_chunk("Hello"), "first")


def error_body(message: str) -> bytes:
    return json.dumps({"error": {"message": message, "type": "x"}}).encode()


CASES: dict[str, tuple[Script, Status, str]] = {
    "429": (
        Script(status=429, steps=(Step(0, error_body("queue full")),)),
        Status.REJECTED,
        "HTTP 429: queue full",
    ),
    "503": (
        Script(status=503, content_type="text/plain", steps=(Step(0, b"busy"),)),
        Status.REJECTED,
        "HTTP 503: busy",
    ),
    "500": (
        Script(status=500, steps=(Step(0, error_body("engine died")),)),
        Status.HTTP_ERROR,
        "HTTP 500: engine died",
    ),
    "400-echo": (
        Script(status=400, steps=(Step(0, error_body(f"bad prompt: {PROMPT}")),)),
        Status.HTTP_ERROR,
        "HTTP 400: [redacted",
    ),
    "error-event": (
        Script(steps=(FIRST, Step(0.03, sse({"error": {"message": "OOM"}})))),
        Status.HTTP_ERROR,
        "error event in stream: OOM",
    ),
    "garbage-json": (
        Script(steps=(FIRST, Step(0.03, b"data: {oops\n\n"))),
        Status.PROTOCOL_ERROR,
        "malformed JSON in a data line",
    ),
    "no-done": (Script(steps=(FIRST,)), Status.PROTOCOL_ERROR, "stream ended without [DONE]"),
    "not-sse": (
        Script(content_type="application/json", steps=(Step(0, b'{"choices": []}'),)),
        Status.PROTOCOL_ERROR,
        "stream ended without [DONE] (content-type",
    ),
    "finished-no-done": (
        Script(steps=(FIRST, Step(0.03, chat_chunk(finish="stop")))),
        Status.OK,
        "",
    ),
    "empty-200": (Script(), Status.PROTOCOL_ERROR, "stream ended without [DONE]"),
    # A completed stream that delivered nothing is a failed request, not a success
    # that drops out of every latency sample.
    "done-no-content": (
        Script(steps=(Step(0.01, chat_chunk(role="assistant")), Step(0.02, DONE))),
        Status.HTTP_ERROR,
        "empty answer: the stream completed with no content",
    ),
    "only-done": (
        Script(steps=(Step(0.01, DONE),)),
        Status.HTTP_ERROR,
        "empty answer: the stream completed with no content",
    ),
    "stop-no-content": (
        Script(steps=(Step(0.01, chat_chunk(role="assistant", finish="stop")),), end="close"),
        Status.HTTP_ERROR,
        "empty answer: the stream completed with no content",
    ),
    "finish-abort": (
        Script(steps=(FIRST, Step(0.01, chat_chunk(finish="abort")), Step(0.02, DONE))),
        Status.HTTP_ERROR,
        "the server ended the answer with finish_reason 'abort'",
    ),
    "cut": (Script(steps=(FIRST,), end="cut"), Status.CONNECTION_ERROR, "RemoteProtocolError"),
    "hang-mid-stream": (
        Script(steps=(FIRST,), end="hang"),
        Status.TIMEOUT,
        "no complete response within 0.4s of the planned send time (first",
    ),
    "no-answer": (Script(status=None), Status.TIMEOUT, "no complete response within 0.4s"),
}
