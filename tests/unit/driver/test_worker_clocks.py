"""Clock offsets from minimum-round-trip pings, against offsets known by construction."""

from __future__ import annotations

import random

import pytest

from pytest_latency.driver.worker_clocks import (
    ClockOffset,
    ClockPing,
    GeneratorWorker,
    describe_workers,
    estimate_offset,
    uncertain_clocks,
)


def simulated_pings(offset_ns: int, seed: int, count: int = 40) -> list[ClockPing]:
    """Pings over a path with random, asymmetric one-way delays (0.1-5 ms each way)."""
    rng = random.Random(seed)
    pings, local = [], 1_000_000_000
    for _ in range(count):
        there, back = rng.randint(100_000, 5_000_000), rng.randint(100_000, 5_000_000)
        pings.append(ClockPing(local, local + there + offset_ns, local + there + back))
        local += there + back + rng.randint(0, 1_000_000)
    return pings


@pytest.mark.parametrize("offset_ns", [0, 1, -7_000_000, 3_600_000_000_000, -(2**40)])
@pytest.mark.parametrize("seed", range(20))
def test_the_true_offset_is_within_the_uncertainty(offset_ns: int, seed: int) -> None:
    pings = simulated_pings(offset_ns, seed)
    estimate = estimate_offset(pings)
    assert abs(estimate.offset_ns - offset_ns) <= estimate.uncertainty_ns
    assert estimate.uncertainty_ns == (min(p.round_trip_ns for p in pings) + 1) // 2


def test_the_fastest_ping_decides() -> None:
    slow = ClockPing(sent_ns=0, reference_ns=900, received_ns=1_000)  # midpoint 500
    fast = ClockPing(sent_ns=2_000, reference_ns=2_110, received_ns=2_100)  # midpoint 2050
    assert estimate_offset([slow, fast]) == ClockOffset(offset_ns=60, uncertainty_ns=50)


def test_an_instant_converts_both_ways_and_offsets_compose() -> None:
    worker = ClockOffset(offset_ns=1_000, uncertainty_ns=30)  # reference - worker
    driver = ClockOffset(offset_ns=400, uncertainty_ns=20)  # reference - driver
    assert worker.to_local(5_000) == 4_000
    assert worker.relative_to(driver) == ClockOffset(offset_ns=600, uncertainty_ns=50)


@pytest.mark.parametrize(
    "pings", [[], [ClockPing(sent_ns=10, reference_ns=5, received_ns=9)]], ids=["none", "back"]
)
def test_no_estimate_from_no_pings_or_a_clock_running_backwards(pings: list[ClockPing]) -> None:
    with pytest.raises(ValueError, match="ping"):
        estimate_offset(pings)


def test_a_worker_whose_clock_is_less_certain_than_the_allowed_lag_is_named() -> None:
    sure = GeneratorWorker("w0", "n0", 0.0, 0.001, requests=10)
    unsure = GeneratorWorker("w1", "n1", 0.0, 0.060, requests=10)
    assert uncertain_clocks([sure], 0.050) == []
    (reason,) = uncertain_clocks([sure, unsure], 0.050)
    assert "w1 on node n1" in reason and "60 ms" in reason and "50 ms" in reason
    assert unsure.to_json() == {
        "worker": "w1",
        "node": "n1",
        "clock_offset_s": 0.0,
        "clock_uncertainty_s": 0.060,
        "requests": 10,
        "lost": 0,
    }


def test_the_terminal_line_names_workers_nodes_clocks_and_losses() -> None:
    assert describe_workers([]) is None
    workers = [
        GeneratorWorker("pytest-latency-worker-0", "n0", -2e-5, 0.0004, requests=34),
        GeneratorWorker("pytest-latency-worker-1", "n1", 6e-5, 0.00046, requests=33, lost=31),
    ]
    assert describe_workers(workers) == (
        "generator: 2 Ray workers on 2 nodes; clock offsets up to 0.06 ms, uncertain by up"
        " to 0.46 ms; lost: pytest-latency-worker-1 (31 requests)"
    )
    assert describe_workers(workers[:1]) == (
        "generator: 1 Ray worker on 1 node; clock offsets up to 0.02 ms, uncertain by up to 0.4 ms"
    )
