"""The held-out server's capacity search in virtual time, many seeds: the live search of
``tests/e2e/test_capacity.py`` (16 slots, 6x compressed: 10 s probes, a 60 s budget,
TTFT p90 <= 500 ms) with seeded arrivals through the same engine. The goal of issue 33:
the search brackets the server within 1.5x in its budget, and the bracket holds the
flip (the search's alpha of 1% bounds a wrong one)."""

from __future__ import annotations

import math

import pytest

from pytest_latency.analysis.capacity import search_capacity
from pytest_latency.spec.model import objective
from tests.helpers.held_out_slots import (
    BUDGET_S,
    CAPACITY_RPS,
    LIMIT_S,
    PROBE_S,
    RATES,
    WARMUP_S,
    flip_rate,
    serve,
)
from tests.helpers.virtual_capacity import VirtualProbes

DRAIN_S = 1.0  # the live probe's drain allowance: 10% of the probe, at least 1 s
SEEDS = 20


def width(seed: int, truth: float) -> tuple[float, bool]:
    """(the bracket's width, whether it holds the flip) of one seeded search."""
    goals = [objective("ttft", p=90, max=f"{LIMIT_S * 1000:.0f}ms")]
    probes = VirtualProbes(
        serve, goals, warmup_s=WARMUP_S, probe_s=PROBE_S, seed=seed, drain_s=DRAIN_S
    )
    result = search_capacity(
        probes,
        RATES,
        probe_cost_s=WARMUP_S + PROBE_S + DRAIN_S,
        budget_s=BUDGET_S,
        shortest_probe_s=WARMUP_S + 0.5 * PROBE_S,
    )
    assert result.spent_s <= BUDGET_S and not result.contradictions
    passed, failed = result.passed_rps, result.failed_rps
    if passed is None or failed is None:
        return math.inf, False
    return failed / passed, passed <= truth <= failed


@pytest.mark.slow
def test_the_held_out_server_is_bracketed_within_1_5x_in_its_budget() -> None:
    """Measured: 19 of 20 seeds within 1.5x (the 20th 1.73x), 20 hold the flip (162/s),
    none wrong. Before the lattice 7 of 20 (131..218/s, 1.65x, was the common width, as
    the live search found). The thresholds sit two under what was measured, so a change
    elsewhere moves them without failing."""
    truth = flip_rate()
    assert CAPACITY_RPS < truth < 1.1 * CAPACITY_RPS
    found = [width(seed, truth) for seed in range(SEEDS)]
    widths = sorted(w for w, _ in found)
    print(f"flip {truth:.1f}/s; widths {widths}")
    assert sum(w <= 1.5 for w in widths) >= 17, widths
    assert sum(held for _, held in found) >= 18, widths
    assert all(held for w, held in found if math.isfinite(w)), found  # no wrong bracket
