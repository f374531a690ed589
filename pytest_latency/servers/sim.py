"""The embedded reference server, started as its own process for the session.

A separate process (not a thread) keeps the server's work off the driver's GIL, so
the measuring client is never slowed by the server it measures.
"""

from __future__ import annotations

import os
import selectors
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager

from pytest_latency.servers._http import discover_model, wait_healthy
from pytest_latency.servers.base import ServerInfo, ServerStartError
from pytest_latency.spec import ServerSpec

# Must match sim/__main__.BANNER; not imported from there, to keep the server out of
# the test process.
LISTENING_PREFIX = "pytest-latency sim listening on "
START_TIMEOUT_S = 60.0


def _command(spec: ServerSpec) -> list[str]:
    command = [sys.executable, "-m", "pytest_latency.sim", "--host", "127.0.0.1", "--port", "0"]
    if spec.model:
        command += ["--model", spec.model]
    for name, value in sorted(spec.options.items()):
        command += [f"--{name.replace('_', '-')}", str(value)]
    return command


def _read_url(process: subprocess.Popen[str], timeout_s: float) -> str:
    assert process.stdout is not None
    deadline = time.monotonic() + timeout_s
    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        while time.monotonic() < deadline:
            if not selector.select(timeout=max(0.0, deadline - time.monotonic())):
                break
            line = process.stdout.readline()
            if not line:
                break
            if line.startswith(LISTENING_PREFIX):
                return line[len(LISTENING_PREFIX) :].strip()
    raise ServerStartError(
        f"embedded server did not report its address within {timeout_s:.0f}s "
        f"(exit code {process.poll()})"
    )


def _stop(process: subprocess.Popen[str]) -> None:
    if process.poll() is None:
        process.terminate()
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)
    if process.stdout is not None:
        process.stdout.close()


def _version() -> str:
    from importlib.metadata import version

    return f"pytest-latency-sim {version('pytest-latency')}"


@contextmanager
def start(spec: ServerSpec) -> Iterator[ServerInfo]:
    """Run ``python -m pytest_latency.sim`` on an ephemeral loopback port until exit."""
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    started = time.monotonic()
    process = subprocess.Popen(
        _command(spec), stdout=subprocess.PIPE, stderr=None, text=True, env=env
    )
    try:
        url = _read_url(process, START_TIMEOUT_S)
        wait_healthy(url, START_TIMEOUT_S, "embedded server")
        model = spec.model or discover_model(url)
        yield ServerInfo(
            kind="sim",
            url=url,
            model=model,
            api=spec.api,
            details={
                "options": {k: v for k, v in spec.options.items() if k != "otlp_traces_endpoint"},
                "version": _version(),
            },
            cold_start_s=time.monotonic() - started,
            exports_spans=bool(spec.options.get("otlp_traces_endpoint")),
        )
    finally:
        _stop(process)
