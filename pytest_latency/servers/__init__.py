"""Model servers: start or attach, yield where they are, stop what we started."""

from __future__ import annotations

from contextlib import AbstractContextManager

from pytest_latency.servers import profiles, sim, url
from pytest_latency.servers.base import CONTAINER_KINDS, ServerInfo, ServerStartError
from pytest_latency.spec import ServerSpec

__all__ = ("CONTAINER_KINDS", "ServerInfo", "ServerStartError", "start_server")


def start_server(spec: ServerSpec) -> AbstractContextManager[ServerInfo]:
    """A context manager yielding the running server described by ``spec``."""
    if profiles.runs_in_container(spec):
        return profiles.start(spec)
    if spec.kind == "sim":
        return sim.start(spec)
    if spec.kind == "url":
        return url.attach(spec)
    raise ServerStartError(f"unknown server kind {spec.kind!r}")
