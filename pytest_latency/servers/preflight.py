"""Preflight: before time zero, is the server there, serving the model, and answering?

Three checks, each a short HTTP exchange with a short timeout:

1. **reachable**: ``GET /v1/models`` connects and answers 200;
2. **the model is listed** there: the one asked for (``--latency-model`` or the spec's
   ``model``), or, when none was asked for, the first listed is used. A server that does
   not implement the list (404 or 405) is let through when a model was named: the test
   request then tells whether it serves it;
3. **one small request answered**: a streaming request for one token, whose first event
   must arrive within the timeout.

A failure raises :class:`ServerNotReady` ("server not ready: ..."), which the plugin
reports as an error of the test, never as a failed objective: a run against a server
that is not there measures the network stack, not latency.

Every answer is read bounded (:mod:`~pytest_latency.driver.bounded_read`): at most 1 MiB
raw and 1 MiB decoded (64 KiB for the test request's stream), within the timeout of
wall-clock time, so an endless body, a gzip bomb or a one-byte-a-second trickle ends as
"not ready" in bounded memory and time. The server's text is shown escaped
(:mod:`pytest_latency.shown_text`), and a model id with control characters is refused.
"""

from __future__ import annotations

import errno
import json
import secrets
import time

import httpx

from pytest_latency.driver.bounded_read import AnswerUnreadable, bounded_chunks, read_bounded
from pytest_latency.errors import ServerNotReady
from pytest_latency.secret import Secret, redact
from pytest_latency.servers._http import bounded_client, get_json
from pytest_latency.shown_text import has_control, shown

PREFLIGHT_TIMEOUT_S = 10.0  # the test request on a cold CPU server may take a few seconds
CONNECT_TIMEOUT_S = 3.0
_MAX_LISTED = 8  # models named in a "not listed" message
_MAX_BODY_CHARS = 200
_MAX_STREAM_BYTES = 64 * 1024  # a first event bigger than this is not a one-token answer
_MAX_ERROR_BYTES = 4096  # of an error body, read for its message
_PROMPT = "Reply with one word."
_PATHS = {"chat": "/v1/chat/completions", "completions": "/v1/completions"}
_UNLISTED = (404, 405)  # no /v1/models on this server (a gateway, a bare engine)


def check_ready(
    base_url: str,
    model: str | None,
    api: str = "chat",
    timeout_s: float = PREFLIGHT_TIMEOUT_S,
    api_key: Secret | None = None,
) -> str:
    """Check the server at ``base_url``; return the model to request (``model`` if given).

    ``api_key`` goes as a Bearer token, as with the run's requests. Raises
    :class:`ServerNotReady` naming what failed; a server's text quoting the key shows
    ``***`` in its place.
    """
    __tracebackhide__ = True
    timeout = httpx.Timeout(timeout_s, connect=min(CONNECT_TIMEOUT_S, timeout_s))
    problem: str | None = None
    try:
        with bounded_client(timeout, api_key) as client:
            listed = _listed_models(client, base_url, model, timeout_s)
            chosen = _choose(base_url, model, listed)
            _test_request(client, base_url, chosen, api, timeout_s)
    except ServerNotReady as error:
        problem = str(error) if api_key is None else redact(str(error), [api_key])
    if problem is not None:  # raised outside the except: no context holding the client
        raise ServerNotReady(problem)
    return chosen


def _not_ready(problem: str) -> ServerNotReady:
    return ServerNotReady(f"server not ready: {problem}")


def _listed_models(
    client: httpx.Client, base_url: str, model: str | None, timeout_s: float
) -> list[str] | None:
    """Model ids from ``GET /v1/models``; None when the server has no such list."""
    __tracebackhide__ = True
    url = f"{base_url}/v1/models"
    try:
        status, body, text = get_json(client, url, time.monotonic() + timeout_s)
    except httpx.HTTPError as error:
        raise _not_ready(_transport_problem(error, base_url, url)) from None
    except AnswerUnreadable as error:
        raise _not_ready(f"GET {url}: {error}") from None
    if status in _UNLISTED and model is not None:
        return None
    if status != 200:
        raise _not_ready(f"GET {url} got HTTP {status}: {_excerpt(_text(text))}")
    entries = body.get("data") if isinstance(body, dict) else None
    if not isinstance(entries, list) or not all(
        isinstance(entry, dict) and isinstance(entry.get("id"), str) for entry in entries
    ):
        raise _not_ready(
            f"GET {url} answered no model list ({{'data': [{{'id': ...}}]}}):"
            f" {_excerpt(_text(text))}"
        )
    return [entry["id"] for entry in entries]


def _choose(base_url: str, model: str | None, listed: list[str] | None) -> str:
    __tracebackhide__ = True
    if listed is None:
        assert model is not None  # an unlisted server is let through only with a model
        return model
    if model is None:
        if not listed:
            raise _not_ready(f"{base_url}/v1/models lists no model; pass one with --latency-model")
        if has_control(listed[0]):
            raise _not_ready(
                f"{base_url}/v1/models lists a model id with control characters:"
                f" {shown(listed[0], 80)!s}; pass one with --latency-model"
            )
        return listed[0]
    if model not in listed:
        names = ", ".join(shown(name, 80) for name in listed[:_MAX_LISTED])
        names += ", ..." if len(listed) > _MAX_LISTED else ""
        raise _not_ready(f"model {shown(model)!r} not in /v1/models (listed: {names or 'none'})")
    return model


def _test_request(
    client: httpx.Client, base_url: str, model: str, api: str, timeout_s: float
) -> None:
    """One streaming request for one token: its first event must come, and not as an error."""
    __tracebackhide__ = True
    url = base_url + _PATHS.get(api, _PATHS["chat"])
    body: dict[str, object] = {"model": model, "max_tokens": 1, "stream": True}
    if api == "completions":
        body["prompt"] = _PROMPT
    else:
        body["messages"] = [{"role": "user", "content": _PROMPT}]
    # An unsampled W3C parent: servers that trace (vLLM, the embedded server) leave this
    # request out of their exported spans, so it is not a trace "from outside the run".
    headers = {"traceparent": f"00-{secrets.token_hex(16)}-{secrets.token_hex(8)}-00"}
    deadline = time.monotonic() + timeout_s
    try:
        with client.stream("POST", url, json=body, headers=headers) as response:
            if response.status_code != 200:
                text = read_bounded(response, deadline, _MAX_ERROR_BYTES, truncate=True).decode(
                    "utf-8", errors="replace"
                )
                raise _not_ready(
                    f"test request (POST {url}) got HTTP {response.status_code}: {_excerpt(text)}"
                )
            _first_event(response, url, deadline)
    except httpx.TimeoutException:
        raise _not_ready(f"test request (POST {url}) not answered within {timeout_s:g}s") from None
    except AnswerUnreadable as error:
        raise _not_ready(f"test request (POST {url}): {error}") from None
    except httpx.HTTPError as error:
        raise _not_ready(_transport_problem(error, base_url, url)) from None


def _first_event(response: httpx.Response, url: str, deadline: float) -> None:
    """Read the stream up to its first ``data:`` event; raise unless it is an answer.

    At most ``_MAX_STREAM_BYTES`` are read, by the deadline: a line that never ends
    fails as surely as an endless body."""
    __tracebackhide__ = True
    pending = b""
    try:
        for piece in bounded_chunks(response, deadline, _MAX_STREAM_BYTES):
            pending += piece
            *lines, pending = pending.split(b"\n")
            for raw in lines:
                if _answered(raw.decode("utf-8", errors="replace").strip(), url):
                    return
    except AnswerUnreadable:
        pending = b""  # drop before raising
        raise
    if _answered(pending.decode("utf-8", errors="replace").strip(), url):
        return
    raise _not_ready(
        f"test request (POST {url}) got HTTP 200 but no stream event"
        f" (content-type {shown(response.headers.get('content-type', 'none'), 80)!r})"
    )


def _answered(line: str, url: str) -> bool:
    """True for a ``data:`` line that answers; raise for one that is an error."""
    __tracebackhide__ = True
    if not line.startswith("data:"):
        return False
    data = line[len("data:") :].strip()
    if data == "[DONE]":
        return True
    try:
        event = json.loads(data)
    except (ValueError, RecursionError):
        raise _not_ready(f"test request (POST {url}): not a JSON event: {_excerpt(data)}") from None
    if isinstance(event, dict) and "error" in event:
        raise _not_ready(f"test request (POST {url}) got an error: {_excerpt(data)}")
    return True


def _transport_problem(error: httpx.HTTPError, base_url: str, url: str) -> str:
    """``connection refused at http://127.0.0.1:8000``, or what else the transport said."""
    if isinstance(error, httpx.ConnectError):
        cause: BaseException | None = error
        while cause is not None:
            if isinstance(cause, ConnectionRefusedError) or (
                isinstance(cause, OSError) and cause.errno == errno.ECONNREFUSED
            ):
                return f"connection refused at {base_url}"
            cause = cause.__cause__ or cause.__context__
        return f"cannot connect to {base_url}: {shown(str(error), 200) or type(error).__name__}"
    if isinstance(error, httpx.TimeoutException):
        return f"no answer from {url} within the preflight timeout"
    return f"{type(error).__name__} at {url}: {shown(str(error), 200)}"


def _text(body: bytes) -> str:
    return body[: 8 * _MAX_BODY_CHARS].decode("utf-8", errors="replace")


def _excerpt(text: str) -> str:
    flat = " ".join(text[: 4 * _MAX_BODY_CHARS].split())
    return shown(flat, _MAX_BODY_CHARS) if flat else "(empty body)"
