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
from pytest_latency.servers.container import (
    COMMON_OPTIONS,
    ContainerSpec,
    extra_args,
    extra_env,
    listen_for,
    network_option,
    span_endpoint,
    startup_timeout,
)
from pytest_latency.servers.kinds import ServerKind
from pytest_latency.servers.server_version import read_server_version
from pytest_latency.spec.model import ServerSpec

# Must match sim/__main__.BANNER; not imported from there, to keep the server out of
# the test process.
LISTENING_PREFIX = "pytest-latency sim listening on "
START_TIMEOUT_S = 60.0


DEFAULT_IMAGE = "pytest-latency/sim:local"
DEFAULT_PORT = 8000


def _sim_arguments(spec: ServerSpec, leave_out: frozenset[str] = frozenset()) -> list[str]:
    arguments = ["--model", spec.model] if spec.model else []
    for name, value in sorted(spec.options.items()):
        if name not in COMMON_OPTIONS | leave_out:
            arguments += [f"--{name.replace('_', '-')}", str(value)]
    return arguments


def _command(spec: ServerSpec) -> list[str]:
    container_only = sorted(COMMON_OPTIONS & set(spec.options))
    if container_only:
        raise ServerStartError(
            f"server options {', '.join(container_only)} apply to the embedded server's "
            "image only (give it an image: --latency-image pytest-latency/sim:local)"
        )
    return [
        sys.executable, "-m", "pytest_latency.sim", "--host", "127.0.0.1", "--port", "0",
        *_sim_arguments(spec),
    ]  # fmt: skip


def container_spec(spec: ServerSpec) -> ContainerSpec:
    """The embedded server from its image (``containers/sim``), e.g. to test the image."""
    network = network_option(spec)
    listen = listen_for(network, DEFAULT_PORT)
    exports = span_endpoint(spec, network) is not None
    unreachable = frozenset() if exports else frozenset({"otlp_traces_endpoint"})
    arguments = _sim_arguments(spec, unreachable)
    return ContainerSpec(
        kind="sim",
        image=spec.image or DEFAULT_IMAGE,
        command=("--host", listen.host, "--port", str(listen.port), *arguments, *extra_args(spec)),
        listen=listen,
        served_model=spec.model,
        network=network,
        environment=extra_env(spec),
        gpus=spec.gpus,
        startup_timeout_s=startup_timeout(spec, START_TIMEOUT_S),
        exports_spans=exports,
    )


# Any option passes: the container runner reads COMMON_OPTIONS, the rest are sim flags.
KIND = ServerKind("sim", container_spec, options=None, exports_spans=True)


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


def _exit_problem(process: subprocess.Popen[str]) -> str | None:
    code = process.poll()
    return None if code is None else f"embedded server process exited with code {code}"


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
        wait_healthy(url, START_TIMEOUT_S, "embedded server", gone=lambda: _exit_problem(process))
        model = spec.model or discover_model(url)
        yield ServerInfo(
            kind="sim",
            url=url,
            model=model,
            api=spec.api,
            details={
                "options": {k: v for k, v in spec.options.items() if k != "otlp_traces_endpoint"},
                **read_server_version(url, "sim").to_json(),
            },
            cold_start_s=time.monotonic() - started,
            exports_spans=bool(spec.options.get("otlp_traces_endpoint")),
            exit_problem=lambda: _exit_problem(process),
        )
    finally:
        _stop(process)
