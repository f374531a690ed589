"""Hooks other plugins and conftest files may implement."""

from __future__ import annotations

from typing import TYPE_CHECKING

import pluggy

if TYPE_CHECKING:
    from pytest_latency.result import LatencyResult

hookspec = pluggy.HookspecMarker("pytest")


@hookspec
def pytest_latency_run_finished(result: LatencyResult) -> None:
    """Called after every run with its records, before any objective is decided."""
