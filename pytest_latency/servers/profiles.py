"""Container server kinds: build the kind's container, start it, describe what runs."""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterator
from contextlib import ExitStack, contextmanager

from pytest_latency.servers._http import discover_model, probe_version
from pytest_latency.servers.base import ServerInfo, ServerStartError
from pytest_latency.servers.container import ContainerSpec, RunningContainer, run_container
from pytest_latency.servers.kinds import BUILTIN_KINDS, ServerKind, builtin_kind
from pytest_latency.spec.model import ServerSpec

logger = logging.getLogger("pytest_latency.servers")


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
def run_with_fallbacks(
    container_spec: ContainerSpec,
) -> Iterator[tuple[RunningContainer, tuple[str, ...]]]:
    """Run ``container_spec``; when it fails to start with a marker of its fallback in
    the error (an image refusing a flag), run the fallback instead. Yields the running
    container and the reasons of the fallbacks taken (each attempt's container is
    removed before the next)."""
    reasons: list[str] = []
    with ExitStack() as stack:
        while True:
            try:
                running = stack.enter_context(run_container(container_spec))
                break
            except ServerStartError as error:
                fallback = container_spec.fallback
                if fallback is None or not fallback.applies(str(error)):
                    raise
                reasons.append(fallback.reason)
                logger.warning("%s: %s", container_spec.kind, fallback.reason)
                container_spec = fallback.spec
        yield running, tuple(reasons)


@contextmanager
def start(spec: ServerSpec, kind: ServerKind) -> Iterator[ServerInfo]:
    """Start ``kind``'s container for ``spec`` and yield the server it runs, until exit."""
    with run_with_fallbacks(kind.build(spec)) as (running, fallbacks):
        container_spec = running.spec
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
        if fallbacks:
            details["fallbacks"] = list(fallbacks)
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
