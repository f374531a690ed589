"""Readiness and discovery over HTTP, shared by every server kind.

Every answer is read bounded (:mod:`~pytest_latency.driver.bounded_read`): a byte cap,
a decoded-size cap and a deadline. The API key travels in a :class:`BearerAuth`, never
in a headers dict that a traceback's locals (``pytest -l``) would show.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Generator

import httpx

from pytest_latency.driver.bounded_read import ACCEPT_ENCODING, AnswerUnreadable, read_bounded
from pytest_latency.secret import Secret, redact
from pytest_latency.servers.base import ServerStartError
from pytest_latency.shown_text import has_control, shown


class BearerAuth(httpx.Auth):
    """``Authorization: Bearer KEY`` added as each request leaves; shows as ``***``."""

    def __init__(self, key: Secret) -> None:
        self._key = key

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self._key.reveal()}"
        yield request

    def __repr__(self) -> str:
        return "BearerAuth(***)"


def bounded_client(timeout: float | httpx.Timeout, api_key: Secret | None = None) -> httpx.Client:
    """A client for the readiness exchanges: the key in a :class:`BearerAuth`, no
    environment proxies, no redirects, only the codings that are decoded in bounded steps."""
    return httpx.Client(
        timeout=timeout,
        trust_env=False,
        follow_redirects=False,
        auth=None if api_key is None else BearerAuth(api_key),
        headers={"Accept-Encoding": ACCEPT_ENCODING},
    )


def get_json(client: httpx.Client, url: str, deadline: float) -> tuple[int, object, bytes]:
    """``GET url``: its status, its body parsed as JSON (None when it is not JSON), and
    the body itself (only the first 4 KiB when the status is not 200).

    Raises :class:`AnswerUnreadable` past a cap or the deadline, and httpx's errors.
    """
    with client.stream("GET", url) as response:
        status = response.status_code
        if status != 200:
            return status, None, read_bounded(response, deadline, 4096, truncate=True)
        body = read_bounded(response, deadline)
    try:
        return status, json.loads(body), body
    except (ValueError, RecursionError):  # RecursionError: nesting thousands deep
        return status, None, body


def _client(timeout_s: float, api_key: Secret | None = None) -> httpx.Client:
    return bounded_client(timeout_s, api_key)


def wait_healthy(
    base_url: str,
    timeout_s: float,
    describe: str,
    *,
    path: str = "/health",
    started: float | None = None,
    gone: Callable[[], str | None] | None = None,
    evidence: Callable[[], str] | None = None,
) -> float:
    """Poll ``GET path`` until 200; seconds waited since ``started`` (default: now).

    ``gone`` says why the server is no longer there (a process or container that
    exited): the wait fails at once with it instead of at the timeout. ``evidence`` adds
    to a timeout's message (a container's last log lines).
    """
    started = time.monotonic() if started is None else started
    deadline = started + timeout_s
    last = "no answer yet"
    with httpx.Client(timeout=2.0, trust_env=False) as client:
        while time.monotonic() < deadline:
            problem = gone() if gone is not None else None
            if problem is not None:
                raise ServerStartError(f"{describe} did not start: {problem}")
            try:
                with client.stream("GET", f"{base_url}{path}") as response:
                    status = response.status_code  # the body is never read
                if status == 200:
                    return time.monotonic() - started
                last = f"HTTP {status}"
            except httpx.HTTPError as error:
                last = f"{type(error).__name__}: {shown(str(error), 200)}"
            time.sleep(0.05)
    raise ServerStartError(
        f"{describe} at {base_url}{path} not healthy after {timeout_s:.0f}s ({last})"
        + (f"; {evidence()}" if evidence is not None else "")
    )


def discover_model(base_url: str, timeout_s: float = 10.0, api_key: Secret | None = None) -> str:
    """The first model id from ``GET /v1/models``; ServerStartError when unreachable.

    A failure is raised outside the ``except``, without httpx's exception as its
    context: httpx's frames hold the request (and its headers) in their locals.
    """
    failure: str | None = None
    url = f"{base_url}/v1/models"
    try:
        with _client(timeout_s, api_key) as client:
            status, body, _ = get_json(client, url, time.monotonic() + timeout_s)
    except httpx.TransportError as error:  # nobody answered: a model name would not help
        failure = f"cannot reach {url} ({type(error).__name__}: {shown(str(error), 200)})"
    except (httpx.HTTPError, AnswerUnreadable) as error:
        detail = redact(f"{type(error).__name__}: {shown(str(error), 200)}", _keys(api_key))
        failure = (
            f"cannot list models at {url} ({detail}); "
            f"pass the model with --latency-model or server: {{model: ...}}"
        )
    if failure is not None:
        raise ServerStartError(failure)
    models = body.get("data") if status == 200 and isinstance(body, dict) else None
    if status != 200:
        raise ServerStartError(
            f"cannot list models at {url} (HTTP {status}); "
            f"pass the model with --latency-model or server: {{model: ...}}"
        )
    if not isinstance(models, list) or not models or not isinstance(models[0], dict):
        raise ServerStartError(f"{url} lists no model; pass --latency-model")
    model = models[0].get("id")
    if not isinstance(model, str) or not model:
        raise ServerStartError(f"{url} lists no model; pass --latency-model")
    if has_control(model):
        raise ServerStartError(
            f"{url} lists a model id with control characters: {shown(model, 80)}"
        )
    return model


def _keys(api_key: Secret | None) -> list[Secret]:
    return [api_key] if api_key is not None else []
