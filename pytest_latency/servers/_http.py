"""Readiness and discovery over HTTP, shared by every server kind."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx

from pytest_latency.secret import Secret, redact
from pytest_latency.servers.base import ServerStartError


def _client(timeout_s: float, api_key: Secret | None = None) -> httpx.Client:
    """A client that sends the API key (revealed here, into the client's headers only)."""
    headers = {} if api_key is None else {"Authorization": f"Bearer {api_key.reveal()}"}
    return httpx.Client(timeout=timeout_s, trust_env=False, headers=headers)


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
                response = client.get(f"{base_url}{path}")
                if response.status_code == 200:
                    return time.monotonic() - started
                last = f"HTTP {response.status_code}"
            except httpx.HTTPError as error:
                last = f"{type(error).__name__}: {error}"
            time.sleep(0.05)
    raise ServerStartError(
        f"{describe} at {base_url}{path} not healthy after {timeout_s:.0f}s ({last})"
        + (f"; {evidence()}" if evidence is not None else "")
    )


def discover_model(base_url: str, timeout_s: float = 10.0, api_key: Secret | None = None) -> str:
    """The first model id from ``GET /v1/models``; ServerStartError when unreachable.

    A failure is raised outside the ``except``, without httpx's exception as its
    context: httpx's frames hold the request's headers (the API key) in their locals.
    """
    failure: str | None = None
    try:
        with _client(timeout_s, api_key) as client:
            response = client.get(f"{base_url}/v1/models")
            response.raise_for_status()
            models = response.json().get("data") or []
    except httpx.TransportError as error:  # nobody answered: a model name would not help
        raise ServerStartError(
            f"cannot reach {base_url}/v1/models ({type(error).__name__}: {error})"
        ) from error
    except (httpx.HTTPError, ValueError) as error:
        detail = redact(f"{type(error).__name__}: {error}", [api_key] if api_key else [])
        failure = (
            f"cannot list models at {base_url}/v1/models ({detail}); "
            f"pass the model with --latency-model or server: {{model: ...}}"
        )
    if failure is not None:
        raise ServerStartError(failure)
    if not models or not isinstance(models[0], dict) or "id" not in models[0]:
        raise ServerStartError(f"{base_url}/v1/models lists no model; pass --latency-model")
    return str(models[0]["id"])
