"""Model servers in containers, on testcontainers' ``DockerContainer``.

Each kind's module turns a ``ServerSpec`` into a ``ContainerSpec`` (pure data, unit
tested for the exact container it would start); ``run_container`` starts it, waits
until the server answers its health URL, measures that as the cold start, and removes
the container on every exit path. Containers whose owning test run is gone (a dead
pid here, a stale heartbeat elsewhere) are removed on the next start (``ownership.py``,
``heartbeat.py``; testcontainers' reaper is disabled).
"""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pytest_latency.secret import Secret, from_environment, redact
from pytest_latency.servers._http import wait_healthy
from pytest_latency.servers.base import ServerStartError
from pytest_latency.servers.heartbeat import Heartbeat
from pytest_latency.servers.ownership import owner_labels, remove_orphans
from pytest_latency.shown_text import shown
from pytest_latency.spec.model import ServerSpec, gpu_ids, parse_gpus

Network = Literal["host", "bridge"]
# Options every container kind accepts in ``server.options``; kinds add their own.
COMMON_OPTIONS = frozenset({"network", "startup_timeout", "args", "env"})
LOG_TAIL_LINES = 40
LOCAL_IMAGE_PREFIX = "pytest-latency/"  # images `pytest-latency images build` builds


@dataclass(frozen=True, slots=True)
class Volume:
    host_path: str
    container_path: str
    mode: Literal["ro", "rw"] = "rw"


@dataclass(frozen=True, slots=True)
class Listen:
    """Where the server inside the container listens."""

    host: str
    port: int


@dataclass(frozen=True, slots=True)
class Fallback:
    """Start ``spec`` instead when the first start failed with one of ``log_markers`` in
    its error (the container's last log lines); ``reason`` is recorded with the server."""

    log_markers: tuple[str, ...]
    reason: str
    spec: ContainerSpec

    def applies(self, error: str) -> bool:
        return any(marker in error for marker in self.log_markers)


@dataclass(frozen=True, slots=True)
class ContainerSpec:
    """Exactly what ``docker run`` gets for one server (never a secret's value)."""

    kind: str
    image: str
    command: tuple[str, ...]
    listen: Listen
    served_model: str | None  # the model name requests carry; None: ask /v1/models
    network: Network = "host"
    environment: Mapping[str, str] = field(default_factory=dict)
    # Names copied from the test process's environment at start; values never logged.
    secret_environment: tuple[str, ...] = ()
    gpus: str | None = None
    volumes: tuple[Volume, ...] = ()
    shm_size: str | None = None
    ipc_mode: str | None = None
    health_path: str = "/health"
    startup_timeout_s: float = 120.0
    exports_spans: bool = False
    fallback: Fallback | None = None  # a second try when the image refuses this one
    # Run in the container as soon as it runs (``docker exec``): exit 1 with a reason
    # when the image cannot serve this spec (any other exit: the check could not run).
    start_check: tuple[str, ...] = ()

    def docker_kwargs(self) -> dict[str, Any]:
        """docker-py ``containers.create`` arguments beyond image, command and env."""
        kwargs: dict[str, Any] = {}
        if self.network == "host":
            # `network`, not `network_mode`: testcontainers injects its own `network`
            # (Docker-in-Docker jobs), which would silently replace a network_mode.
            kwargs["network"] = "host"
        if self.gpus is not None:
            kwargs["device_requests"] = [gpu_request(self.gpus)]
        if self.shm_size is not None:
            kwargs["shm_size"] = self.shm_size
        if self.ipc_mode is not None:
            kwargs["ipc_mode"] = self.ipc_mode
        return kwargs

    def describe(self) -> str:
        """One line for logs and errors: secrets appear by name only."""
        secrets = "".join(f" {name}=<from environment>" for name in self.secret_environment)
        return f"{self.image} {' '.join(self.command)} ({self.network} network{secrets})"


def gpu_request(gpus: str) -> Any:
    """``all``, a count (``2``) or device ids (``device=1``, ``0,1``) as a DeviceRequest."""
    from docker.types import DeviceRequest

    text = parse_gpus(gpus)
    if text == "all":
        return DeviceRequest(count=-1, capabilities=[["gpu"]])
    if text.isdigit():
        return DeviceRequest(count=int(text), capabilities=[["gpu"]])
    return DeviceRequest(device_ids=gpu_ids(text), capabilities=[["gpu"]])


def free_port() -> int:
    """An unused loopback port for a host-network server (picked, not assumed)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def listen_for(network: Network, default_port: int) -> Listen:
    """Host network: loopback on a free port. Bridge: all interfaces of the container."""
    if network == "host":
        return Listen("127.0.0.1", free_port())
    return Listen("0.0.0.0", default_port)


def check_options(spec: ServerSpec, accepted: frozenset[str]) -> None:
    unknown = sorted(set(spec.options) - accepted - COMMON_OPTIONS)
    if unknown:
        raise ServerStartError(
            f"server kind {spec.kind!r} has no option {', '.join(unknown)}; it accepts "
            f"{', '.join(sorted(accepted | COMMON_OPTIONS))}"
        )


def network_option(spec: ServerSpec) -> Network:
    value = spec.options.get("network", "host")
    if value not in ("host", "bridge"):
        raise ServerStartError(f"server option network must be host or bridge, got {value!r}")
    return "host" if value == "host" else "bridge"


def extra_args(spec: ServerSpec) -> tuple[str, ...]:
    """``server.options.args``: arguments appended to the server's command line."""
    value = spec.options.get("args", ())
    if isinstance(value, str):
        return tuple(value.split())
    if isinstance(value, list | tuple):
        return tuple(str(item) for item in value)
    raise ServerStartError(f"server option args must be a list of strings, got {value!r}")


def span_endpoint(spec: ServerSpec, network: Network) -> str | None:
    """Where the server should send its spans: the session's receiver is on our
    loopback, which only a host-network container can reach; "" turns export off."""
    endpoint = spec.options.get("otlp_traces_endpoint")
    return str(endpoint) if endpoint and network == "host" else None


def extra_env(spec: ServerSpec) -> dict[str, str]:
    value = spec.options.get("env", {})
    if not isinstance(value, dict):
        raise ServerStartError(f"server option env must be a mapping, got {value!r}")
    return {str(key): str(item) for key, item in value.items()}


def startup_timeout(spec: ServerSpec, default_s: float) -> float:
    from pytest_latency._units import parse_duration

    value = spec.options.get("startup_timeout")
    if value is None:
        return default_s
    try:
        return parse_duration(value)
    except ValueError as error:
        raise ServerStartError(f"server option startup_timeout: {error}") from None


@dataclass(slots=True)
class RunningContainer:
    """A started container: where its server answers and how to tell if it is gone."""

    spec: ContainerSpec
    url: str
    cold_start_s: float
    container_id: str
    image_id: str
    _container: Any = field(repr=False)
    # Values to hide in the container's own log lines (a server may print its env).
    secrets: tuple[Secret, ...] = field(default=(), repr=False)

    def exit_problem(self) -> str | None:
        """Why the server is gone (exit code and last log lines), or None while it runs."""
        try:
            self._container.reload()
            state = self._container.attrs.get("State", {})
        except Exception as error:  # the engine forgot it: removed from outside
            return f"container {self.container_id[:12]} is gone ({type(error).__name__})"
        if state.get("Running"):
            return None
        return (
            f"container {self.container_id[:12]} ({self.spec.image}) exited with code "
            f"{state.get('ExitCode')}{' (OOM-killed)' if state.get('OOMKilled') else ''}; "
            f"last log lines:\n{_log_tail(self._container, self.secrets)}"
        )


def _log_tail(container: Any, secrets: tuple[Secret, ...] = ()) -> str:
    try:
        logs = container.logs(tail=LOG_TAIL_LINES).decode("utf-8", "replace").rstrip()
    except Exception as error:  # the container may already be removed
        return f"  (logs unavailable: {type(error).__name__})"
    logs = redact(logs, secrets)
    return "\n".join(f"  | {shown(line)}" for line in logs.splitlines()) or "  (no output)"


def secret_environment(spec: ContainerSpec) -> dict[str, Secret]:
    """The secret variables ``spec`` names, from the test process's environment."""
    found = {name: from_environment(name) for name in spec.secret_environment}
    return {name: secret for name, secret in found.items() if secret is not None}


def _docker_container(spec: ContainerSpec) -> Any:
    """The container to start, without its secrets (added only for the start call)."""
    from testcontainers.core.container import DockerContainer

    environment = dict(spec.environment)
    container = DockerContainer(spec.image, env=environment).with_command(list(spec.command))
    for volume in spec.volumes:
        container.with_volume_mapping(volume.host_path, volume.container_path, volume.mode)
    if spec.network == "bridge":
        container.with_exposed_ports(spec.listen.port)
    # with_kwargs replaces earlier kwargs: everything goes in one call.
    return container.with_kwargs(labels=owner_labels(spec.kind), **spec.docker_kwargs())


def _prepare_host(spec: ContainerSpec, client: Any) -> None:
    """Host folders to mount exist, the image is here: neither counts as cold start."""
    for volume in spec.volumes:
        if volume.mode == "rw" and os.path.isabs(volume.host_path):
            Path(volume.host_path).mkdir(parents=True, exist_ok=True)
    if client.images.list(name=spec.image):
        return
    if spec.image.startswith(LOCAL_IMAGE_PREFIX):
        # Built here, never published: pulling would only ask a registry for nothing.
        built_kind = spec.image.removeprefix(LOCAL_IMAGE_PREFIX).split(":")[0]
        raise ServerStartError(
            f"image {spec.image} is not on this Docker engine; build it with "
            f"`pytest-latency images build {built_kind}`"
        )
    try:
        client.images.pull(spec.image)
    except Exception as error:
        raise ServerStartError(
            f"cannot pull {spec.image} for {spec.kind}: {type(error).__name__}: {error}"
        ) from error


@contextmanager
def _reaper_disabled() -> Iterator[None]:
    """testcontainers' reaper (Ryuk) off for one start, unless the user configured it.

    The reaper image cannot be pulled where there is no registry, and ownership.py
    removes orphans instead. testcontainers 4.x reads ``testcontainers_config
    .ryuk_disabled`` (``TESTCONTAINERS_RYUK_DISABLED`` or ``ryuk.disabled``) in
    ``DockerContainer.start``: that setting is changed around the start and restored,
    never the process's environment.
    """
    if "TESTCONTAINERS_RYUK_DISABLED" in os.environ:  # the user's choice stands
        yield
        return
    from testcontainers.core.config import testcontainers_config

    previous = testcontainers_config.ryuk_disabled
    testcontainers_config.ryuk_disabled = True
    try:
        yield
    finally:
        testcontainers_config.ryuk_disabled = previous


def _start(container: Any, spec: ContainerSpec, secrets: dict[str, Secret]) -> None:
    """``docker run``, the secrets revealed into the environment for this call only.

    A failure is raised outside the ``except`` block, without the SDK's exception as its
    cause or context: the SDK's frames hold the revealed environment in their locals,
    which ``pytest -l`` would print. Its text is kept, redacted.
    """
    failure: str | None = None
    container.env.update({name: secret.reveal() for name, secret in secrets.items()})
    try:
        with _reaper_disabled():
            container.start()
    except Exception as error:
        detail = redact(f"{type(error).__name__}: {error}", secrets.values())
        failure = f"cannot start {spec.describe()}: {detail}"
    finally:
        for name in secrets:
            container.env.pop(name, None)
    if failure is not None:
        raise ServerStartError(failure)


def _start_check(container: Any, spec: ContainerSpec) -> None:
    """``spec.start_check`` in the started container: a reason in seconds, not after a
    server that will fail its requests has loaded for a minute."""
    if not spec.start_check:
        return
    code, output = container.exec_run(list(spec.start_check))
    if code == 1:
        reason = bytes(output or b"").decode("utf-8", "replace").strip()
        raise ServerStartError(f"{spec.kind} server cannot start as {spec.describe()}: {reason}")


def _remove(container: Any) -> None:
    """Force-remove; a failure here must not hide why the run ended."""
    try:
        container.stop()
    except Exception as error:  # already gone, or the engine went away
        import warnings

        warnings.warn(f"could not remove a server container: {error}", stacklevel=3)


def _connect(spec: ContainerSpec) -> tuple[Any, Any]:
    """The container to start and the engine's client; ServerStartError without one."""
    try:
        container = _docker_container(spec)
        client = container.get_docker_client().client
        client.ping()
    except Exception as error:
        raise ServerStartError(
            f"cannot reach a Docker engine to start {spec.kind} ({type(error).__name__}: "
            f"{error}); on a root machine `bash scripts/docker-engine.sh` installs and starts one"
        ) from error
    return container, client


def _url(container: Any, spec: ContainerSpec) -> str:
    if spec.network == "host":
        return f"http://127.0.0.1:{spec.listen.port}"
    host = container.get_container_host_ip()
    return f"http://{host}:{container.get_exposed_port(spec.listen.port)}"


@contextmanager
def run_container(spec: ContainerSpec) -> Iterator[RunningContainer]:
    """Start ``spec``, wait until healthy, yield it; always remove the container.

    While it exists the container has a heartbeat (``heartbeat.py``), so that sweeps
    from other CI jobs on the engine leave it alone.
    """
    container, client = _connect(spec)
    remove_orphans(client)
    _prepare_host(spec, client)
    started = time.monotonic()  # cold start: from create to healthy, the image present
    heartbeat: Heartbeat | None = None
    secrets = secret_environment(spec)
    try:
        _start(container, spec, secrets)
        wrapped = container.get_wrapped_container()
        heartbeat = Heartbeat(wrapped, client).start()
        running = RunningContainer(
            spec=spec,
            url=_url(container, spec),
            cold_start_s=0.0,
            container_id=wrapped.id,
            image_id=str(wrapped.image.id),
            _container=wrapped,
            secrets=tuple(secrets.values()),
        )
        _start_check(wrapped, spec)
        running.cold_start_s = wait_healthy(
            running.url,
            spec.startup_timeout_s,
            f"{spec.kind} server",
            path=spec.health_path,
            started=started,
            gone=running.exit_problem,
            evidence=lambda: (
                f"container {spec.describe()}; last log lines:\n"
                + _log_tail(wrapped, running.secrets)
            ),
        )
        yield running
    finally:
        if heartbeat is not None:
            heartbeat.stop()
        _remove(container)  # on every exit path (KeyboardInterrupt included)
