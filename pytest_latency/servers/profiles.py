"""Container server kinds: build the kind's container, start it, describe what runs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pytest_latency.servers._http import discover_model, probe_version
from pytest_latency.servers.base import ServerInfo
from pytest_latency.servers.container import ContainerSpec, run_container
from pytest_latency.servers.kinds import BUILTIN_KINDS, ServerKind, builtin_kind
from pytest_latency.spec.model import ServerSpec


def _builtin(name: str) -> ServerKind:
    kind = builtin_kind(name)
    assert kind is not None, name
    return kind


#: The container each built-in kind would start, options checked: derived from the
#: ``KIND`` each kind's module declares.
PROFILES: dict[str, Callable[[ServerSpec], ContainerSpec]] = {
    name: _builtin(name).build for name in BUILTIN_KINDS
}


def runs_in_container(spec: ServerSpec) -> bool:
    """Every kind but a URL, and the embedded server only when given an image."""
    return spec.kind != "url" and (spec.kind != "sim" or spec.image is not None)


@contextmanager
def start(spec: ServerSpec, kind: ServerKind) -> Iterator[ServerInfo]:
    """Start ``kind``'s container for ``spec`` and yield the server it runs, until exit."""
    container_spec = kind.build(spec)
    with run_container(container_spec) as running:
        if kind.after_start is not None:
            kind.after_start(running)
        model = container_spec.served_model or discover_model(running.url)
        details: dict[str, object] = {
            "image": container_spec.image,
            "image_id": running.image_id,
            "container": running.container_id[:12],
            "network": container_spec.network,
            "command": list(container_spec.command),
        }
        if container_spec.gpus:
            details["gpus"] = container_spec.gpus
        version = probe_version(running.url)
        if version:
            details["version"] = version
        yield ServerInfo(
            kind=spec.kind,
            url=running.url,
            model=model,
            api=spec.api,
            details=details,
            cold_start_s=running.cold_start_s,
            exports_spans=container_spec.exports_spans,
            exit_problem=running.exit_problem,
        )
