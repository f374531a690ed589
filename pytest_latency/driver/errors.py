"""Short, safe error texts for records: truncated, and never carrying the prompt.

Servers sometimes echo the request in error bodies ("prompt too long: ..."); records,
reports and logs must not. Any stretch of the message that matches the prompt is
treated as an echo and the message is replaced. Control characters (ESC, CR, C1) are
escaped (:func:`pytest_latency.shown_text.shown`): a record's error text reaches
terminals and CI logs.
"""

from __future__ import annotations

import json
from typing import Any

from pytest_latency.shown_text import shown

MAX_ERROR_CHARS = 200
_SCAN_CHARS = 2 * MAX_ERROR_CHARS  # only this much of a body is looked at
_WINDOW = 16  # an echo of >= _WINDOW + _STEP chars always contains an aligned window
_STEP = 8
_ECHOED = "[redacted: the server's message echoed the prompt]"


def http_error_text(status: int, body: bytes, prompt: str) -> str:
    """``HTTP 500: <message>`` from a (caller-bounded) non-2xx body, JSON or text."""
    message = _message_from_body(body)
    return f"HTTP {status}: {safe_text(message, prompt)}" if message else f"HTTP {status}"


def error_event_text(payload: dict[str, Any], prompt: str) -> str:
    """Text for an ``{"error": ...}`` event received inside a 2xx stream."""
    message = _message_from_json(payload) or "(no message)"
    return f"error event in stream: {safe_text(message, prompt)}"


def exception_text(exc: BaseException) -> str:
    """``ConnectError: [Errno 111] Connection refused``, truncated."""
    detail = str(exc).strip()
    name = type(exc).__name__
    return _truncate(shown(f"{name}: {detail}" if detail else name))


def safe_text(text: str, prompt: str) -> str:
    """Whitespace collapsed, prompt echoes removed, at most MAX_ERROR_CHARS long."""
    text = " ".join(text[:_SCAN_CHARS].split())
    if _echoes(text, prompt):
        return _ECHOED
    return _truncate(shown(text))


def _echoes(text: str, prompt: str) -> bool:
    if not prompt:
        return False
    if len(prompt) < _WINDOW:
        return len(prompt) >= 8 and prompt in text
    return any(
        text[start : start + _WINDOW] in prompt
        for start in range(0, len(text) - _WINDOW + 1, _STEP)
    )


def _truncate(text: str) -> str:
    if len(text) <= MAX_ERROR_CHARS:
        return text
    return text[: MAX_ERROR_CHARS - 1] + "…"


def _message_from_body(body: bytes) -> str:
    try:
        parsed = json.loads(body)
    except ValueError:
        return body.decode("utf-8", errors="replace")
    return _message_from_json(parsed) or body.decode("utf-8", errors="replace")


def _message_from_json(parsed: object) -> str:
    """The human message of the usual error shapes (OpenAI, vLLM, TGI, FastAPI)."""
    if isinstance(parsed, str):
        return parsed
    if not isinstance(parsed, dict):
        return ""
    for key in ("error", "message", "detail"):
        value = parsed.get(key)
        if isinstance(value, str) and value:
            return value
        if isinstance(value, dict):
            inner = _message_from_json(value)
            if inner:
                return inner
    return ""
