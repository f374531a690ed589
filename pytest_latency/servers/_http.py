"""Readiness and discovery over HTTP, shared by every server kind."""

from __future__ import annotations

import time
from collections.abc import Callable

import httpx

from pytest_latency.servers.base import ServerStartError


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


def probe_version(base_url: str) -> str | None:
    """The server's version where it says (vLLM ``/version``, TGI ``/info``); else None."""
    with httpx.Client(timeout=1.0, trust_env=False) as client:
        for path in ("/version", "/info"):
            try:
                response = client.get(f"{base_url}{path}")
                if response.status_code == 200:
                    version = response.json().get("version")
                    if isinstance(version, str) and version:
                        return version
            except (httpx.HTTPError, ValueError, AttributeError):
                continue
    return None


def discover_model(base_url: str, timeout_s: float = 10.0) -> str:
    """The first model id from ``GET /v1/models``; ServerStartError when unreachable."""
    try:
        with httpx.Client(timeout=timeout_s, trust_env=False) as client:
            response = client.get(f"{base_url}/v1/models")
            response.raise_for_status()
            models = response.json().get("data") or []
    except httpx.TransportError as error:  # nobody answered: a model name would not help
        raise ServerStartError(
            f"cannot reach {base_url}/v1/models ({type(error).__name__}: {error})"
        ) from error
    except (httpx.HTTPError, ValueError) as error:
        raise ServerStartError(
            f"cannot list models at {base_url}/v1/models ({type(error).__name__}: {error}); "
            f"pass the model with --latency-model or server: {{model: ...}}"
        ) from error
    if not models or not isinstance(models[0], dict) or "id" not in models[0]:
        raise ServerStartError(f"{base_url}/v1/models lists no model; pass --latency-model")
    return str(models[0]["id"])
