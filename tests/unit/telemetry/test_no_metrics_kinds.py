"""Ollama serves no /metrics: the hub does not scrape it (and so records no failures)."""

from __future__ import annotations

import socket

from pytest_latency.telemetry.hub import TelemetryHub, TelemetrySettings


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def observed(kind: str) -> object:
    hub = TelemetryHub(TelemetrySettings(metrics_interval_s=0.05))
    try:
        with hub.observe(f"http://127.0.0.1:{closed_port()}", kind) as observation:
            pass
    finally:
        hub.close()
    return observation.series


def test_ollama_is_not_scraped() -> None:
    assert observed("ollama") is None


def test_a_kind_with_metrics_is_scraped_and_its_failures_counted() -> None:
    series = observed("vllm")
    assert series is not None  # the scraper ran (and failed on the closed port)
