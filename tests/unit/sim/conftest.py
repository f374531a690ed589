"""Shared fixtures for the reference-server tests: fast configurations, loopback only."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from pytest_latency.sim import SimConfig, SimServer

# Steps of ~2 ms keep HTTP tests quick; timing-sensitive tests use their own configs.
FAST = SimConfig(
    decode_base_s=0.002, decode_per_seq_s=0.0, prefill_base_s=0.0, prefill_per_token_s=0.0
)


@pytest.fixture(scope="module")
def sim() -> Iterator[SimServer]:
    with SimServer(FAST) as server:
        yield server


@pytest.fixture
def client(sim: SimServer) -> Iterator[httpx.Client]:
    with httpx.Client(base_url=sim.url, trust_env=False, timeout=10.0) as http:
        yield http
