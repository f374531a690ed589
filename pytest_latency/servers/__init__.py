"""Model servers: start or attach, yield where they are, stop what we started."""

from __future__ import annotations

from contextlib import AbstractContextManager
from typing import TYPE_CHECKING

from pytest_latency.servers.base import CONTAINER_KINDS, ServerInfo, ServerStartError

if TYPE_CHECKING:
    from pytest_latency.spec import ServerSpec

__all__ = ("CONTAINER_KINDS", "ServerInfo", "ServerStartError", "start_server")


def start_server(spec: ServerSpec) -> AbstractContextManager[ServerInfo]:
    """A context manager yielding the running server described by ``spec``."""
    # The per-kind modules (httpx, testcontainers helpers) load when a server starts:
    # the plugin reads CONTAINER_KINDS from this package in every pytest run.
    from pytest_latency.servers import profiles, sim, url

    if profiles.runs_in_container(spec):
        return profiles.start(spec)
    if spec.kind == "sim":
        return sim.start(spec)
    if spec.kind == "url":
        return url.attach(spec)
    raise ServerStartError(f"unknown server kind {spec.kind!r}")
