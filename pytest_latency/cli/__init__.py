"""The ``pytest-latency`` command: judge, report, compare and images over saved runs."""

from __future__ import annotations

from pytest_latency.cli.main import main as main
