"""Model servers: start or attach, yield where they are, stop what we started."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from pytest_latency.servers.base import ServerInfo, ServerStartError
from pytest_latency.servers.kinds import CONTAINER_KINDS, ServerKind, find_kind, unknown_kind

if TYPE_CHECKING:
    from pytest_latency.spec.model import ServerSpec

__all__ = ("CONTAINER_KINDS", "ServerInfo", "ServerKind", "ServerStartError", "start_server")


def start_server(
    spec: ServerSpec, kind: ServerKind | None = None
) -> AbstractContextManager[ServerInfo]:
    """A context manager yielding the running server described by ``spec``.

    ``kind``: the kind the session resolved for ``spec.kind`` (through the
    ``pytest_latency_server_kind`` hook); None looks ``spec.kind`` up among the built-ins.
    """
    # The per-kind modules (httpx, testcontainers helpers) load when a server starts:
    # the plugin reads the kind names in every pytest run.
    from pytest_latency.servers import profiles, sim, url

    if not profiles.runs_in_container(spec):
        return url.attach(spec) if spec.kind == "url" else sim.start(spec)
    kind = kind or find_kind(spec.kind)
    if kind is None:
        raise ServerStartError(unknown_kind(spec.kind))
    return profiles.start(spec, kind)
