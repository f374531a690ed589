"""Model servers: start or attach, yield where they are, stop what we started."""

from __future__ import annotations

from contextlib import AbstractContextManager

from pytest_latency.servers import sim, url
from pytest_latency.servers.base import CONTAINER_KINDS, ServerInfo, ServerStartError
from pytest_latency.spec import ServerSpec

__all__ = ("CONTAINER_KINDS", "ServerInfo", "ServerStartError", "start_server")


def start_server(spec: ServerSpec) -> AbstractContextManager[ServerInfo]:
    """A context manager yielding the running server described by ``spec``."""
    if spec.kind == "sim":
        return sim.start(spec)
    if spec.kind == "url":
        return url.attach(spec)
    if spec.kind in CONTAINER_KINDS:
        raise ServerStartError(
            f"server kind {spec.kind!r} runs in a container, which this version of "
            "pytest-latency does not start yet; start the server yourself and pass its URL "
            "with --latency-server http://127.0.0.1:PORT"
        )
    raise ServerStartError(f"unknown server kind {spec.kind!r}")
