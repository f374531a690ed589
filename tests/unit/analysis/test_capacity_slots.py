"""A 6-minute capacity search against slot servers of known capacity, in virtual time.

A slot server (``tests/helpers/slot_server.py``) serves ``slots`` requests at once, each
for a 0.1 s prefill and 20 tokens at 25 ms (0.6 s), first come first served: its
capacity is ``slots / 0.6`` req/s. The search runs as a user would run it: 60 s probes
(a 6 s warm-up), a 6-minute budget, confidence 99%, TTFT p90 decided as each live probe
decides it. The truth is where the mean share of a 60 s probe's TTFTs within the limit
crosses 90% (20 seeds). docs/capacity.md ("How narrow a bracket: measured") has the
table these numbers come from.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_latency.analysis.capacity import search_capacity
from pytest_latency.analysis.capacity_result import CapacityResult
from pytest_latency.spec.model import objective
from tests.helpers.slot_server import SlotServer
from tests.helpers.virtual_capacity import VirtualProbes

WARM_S, PROBE_S, BUDGET_S = 6.0, 60.0, 360.0
REPLICATES = 20
SPAN = (0.15, 4.5)  # the search's rates, in capacities: its first probe at 0.82


def slots(count: int) -> SlotServer:
    return SlotServer(slots=count, prefill_s=0.1, decode_s=0.025, output_tokens=20)


def flip_rate(server: SlotServer, limit_s: float, seeds: int = 20) -> float:
    """Where the mean share of probe requests with TTFT <= ``limit_s`` crosses 90%, in
    probes as the search runs them (6 s warm-up, then 60 s, from an empty queue), to 1%."""

    def share(rate: float) -> float:
        phases = [("warmup", rate, WARM_S), ("probe", rate, PROBE_S)]
        shares = []
        for seed in range(seeds):
            probe = [r for r in server.records(phases, 10_000 + seed) if r.phase == "probe"]
            shares.append(np.mean([(r.ttft_s or math.inf) <= limit_s for r in probe]))
        return float(np.mean(shares))

    low, high = 0.3 * server.throughput_rps, 1.5 * server.throughput_rps
    while high / low > 1.01:
        middle = math.sqrt(low * high)
        low, high = (middle, high) if share(middle) >= 0.9 else (low, middle)
    return math.sqrt(low * high)


def search(
    server: SlotServer,
    limit_s: float,
    seed: int,
    budget_s: float | None = None,
    span: tuple[float, float] = SPAN,
) -> CapacityResult:
    """The search over ``span`` times the capacity (by default a 30x range with its first
    probe at 82% of the capacity)."""
    goals = [objective("ttft", p=90, max=f"{limit_s:g}s")]
    probes = VirtualProbes(
        server.records, goals, warmup_s=WARM_S, probe_s=PROBE_S, seed=seed, drain_s=0.1 * PROBE_S
    )
    capacity = server.throughput_rps
    return search_capacity(
        probes,
        (span[0] * capacity, span[1] * capacity),
        probe_cost_s=WARM_S + 1.1 * PROBE_S,
        budget_s=budget_s or BUDGET_S,
        shortest_probe_s=WARM_S + 0.5 * PROBE_S,
    )


def replicates(
    server: SlotServer,
    limit_s: float,
    budget_s: float | None = None,
    span: tuple[float, float] = SPAN,
    seeds: int = REPLICATES,
) -> tuple[float, list[float], int]:
    """(the flip, each replicate's width, how many held the flip)."""
    truth = flip_rate(server, limit_s)
    widths, holds = [], 0
    for replicate in range(seeds):
        result = search(server, limit_s, 1000 * replicate, budget_s, span)
        assert result.spent_s <= (budget_s or BUDGET_S)
        passed, failed = result.passed_rps, result.failed_rps
        widths.append(math.inf if passed is None or failed is None else failed / passed)
        holds += passed is not None and failed is not None and passed <= truth <= failed
    return truth, widths, holds


@pytest.mark.slow
@pytest.mark.parametrize(
    ("limit_s", "within", "held"),
    [
        # The flip just over the capacity (27.2 req/s): measured 20 of 20 within 1.5x,
        # 20 of 20 held the flip. 14 and 20 before the search's rates lay on a lattice
        # (docs/capacity.md): its misses were 1.53x, a fail bisected 1.53x over the pass.
        (3.0, 18, 18),
        # The flip at 92% of the capacity (24.4 req/s): measured 16 of 20 within 1.5x,
        # 18 of 20 held it (15 and 18 before the lattice).
        (0.5, 14, 16),
    ],
    ids=["ttft-3s", "ttft-500ms"],
)
def test_a_six_minute_search_brackets_a_16_slot_server_within_1_5x(
    limit_s: float, within: int, held: int
) -> None:
    """The seeds are fixed, so the counts are exact; the thresholds sit 2 under what was
    measured, so that a change elsewhere (the verdicts' dependence estimate) moves them
    without failing, while a search that loses its lattice, its repeats or its step
    over the band (14, 6 and 4 of 20) fails."""
    server = slots(16)
    truth, widths, holds = replicates(server, limit_s)
    assert 0.9 * server.throughput_rps < truth < 1.1 * server.throughput_rps
    print(f"flip {truth:.2f}/s; within 1.5x {sum(w <= 1.5 for w in widths)}, held {holds}")
    assert sum(width <= 1.5 for width in widths) >= within, sorted(widths)
    assert holds >= held, (holds, truth)
    assert all(width <= 1.75 for width in widths if math.isfinite(width)), sorted(widths)


# Near a small server's capacity the evidence comes slowly (docs/capacity.md, "Why six
# minutes hardly bracket a 4-slot server"): a pass needs a rate at 79% of the capacity
# or more (a fail there within 1.5x lies at 118%), and there one 60 s probe holds ~10-50
# effective requests where a pass needs ~70-90, so it takes 2-4 pooled probes of the 5
# the budget holds. Measured 12 of 20 within 1.5x (8 before the lattice), 16 hold the
# flip, none wrong; over 100 seeds 44 within 1.5x, 73 held, 1 wrong.
@pytest.mark.slow
def test_a_six_minute_search_brackets_a_4_slot_server_within_1_5x_in_half_the_seeds() -> None:
    _, widths, holds = replicates(slots(4), 3.0)
    assert sum(width <= 1.5 for width in widths) >= REPLICATES // 2, sorted(widths)
    assert holds >= 14, sorted(widths)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("count", "budget_s", "within", "held"),
    [
        # 12 minutes: measured 19 of 20 within 1.5x, 20 held the flip, none wrong (16
        # and 20 before the lattice; 1 and 18 before a budget bought repeats at one
        # rate, with the queue check outside alpha: docs/capacity.md).
        (4, 720.0, 17, 18),
        # 12 minutes: measured 20 of 20 within 1.5x, 20 held it (17 and 20 before the
        # lattice; 6 and 20 before a budget bought repeats).
        (8, 720.0, 18, 18),
    ],
    ids=["4-slots-12m", "8-slots-12m"],
)
def test_a_longer_budget_brackets_a_small_server_within_1_5x(
    count: int, budget_s: float, within: int, held: int
) -> None:
    """Near a small server's capacity a pass takes minutes of pooled probes at one rate;
    a longer budget buys them (analysis/capacity_plan.py). Thresholds sit 2 under what
    was measured, as in the 16-slot test; the budget before bought rates it never
    probed, and fails them (1 and 6 of 20)."""
    server = slots(count)
    truth, widths, holds = replicates(server, 3.0, budget_s)
    print(f"flip {truth:.2f}/s; within 1.5x {sum(w <= 1.5 for w in widths)}, held {holds}")
    assert sum(width <= 1.5 for width in widths) >= within, sorted(widths)
    assert holds >= held, (holds, truth)


@pytest.mark.slow
@pytest.mark.parametrize("count", [4, 16])
def test_a_six_minute_search_brackets_wrongly_in_at_most_2_of_100_seeds(count: int) -> None:
    """The search's error control (docs/statistics.md, "Error control across a capacity
    search") at work over many seeds: a bracket that misses the flip needs a false
    verdict, and the search's alpha is 1%. Measured: 1 of 100 at 4 slots (a pass pooled
    at 0.99x the capacity, 1% over the flip), 0 of 100 at 16 (about a minute each)."""
    _, widths, holds = replicates(slots(count), 3.0, seeds=100)
    wrong = sum(math.isfinite(width) for width in widths) - holds
    assert wrong <= 2, sorted(widths)
