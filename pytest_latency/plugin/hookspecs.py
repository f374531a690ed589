"""Hooks other plugins and conftest files may implement."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from pytest_latency.analysis.result import LatencyResult
    from pytest_latency.servers.kinds import ServerKind

hookspec = pluggy.HookspecMarker("pytest")


@hookspec
def pytest_latency_run_finished(result: LatencyResult) -> None:
    """Called after every run with its records, before any objective is decided."""


@hookspec(firstresult=True)
def pytest_latency_server_kind(name: str) -> ServerKind | None:
    """The server kind called ``name`` (``--latency-server NAME``, ``server: {kind: NAME}``),
    or None to leave it to other plugins and then the built-in kinds.

    Asked before the built-in kinds, so it can also replace one. Example (conftest.py)::

        from pytest_latency.servers.kinds import ServerKind

        def pytest_latency_server_kind(name):
            if name == "mykind":
                return ServerKind("mykind", my_container_spec, frozenset({"max_batch"}))
            return None
    """
