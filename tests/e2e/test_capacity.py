"""The capacity search end to end on the embedded server, against virtual-time truth.

The server is a slot server of known capacity, run 6 times faster than real time: 16
replicas of one slot each, and a one-token answer that holds its slot for one engine
step of 0.1 s (prefill and token), so the server tops out at 160 req/s. (One token: at
these rates the client and server work per stream chunk is what a shared machine can
spare; the capacity is the slots' either way.) The search is the
issue's "6-minute budget, 60 s probes" with every time divided by 6 and every rate
multiplied by 6 (10 s probes, a 60 s budget, TTFT p90 <= 500 ms for 3 s): the same
requests per probe, the same queues, statistically the same search. The truth is where
the objective flips in probes of the same engine in virtual time (``simulate()``).
"""

from __future__ import annotations

import math
import shutil
from pathlib import Path

import numpy as np
import pytest

from pytest_latency.sim.config import SimConfig
from pytest_latency.sim.virtual import Arrival, simulate
from pytest_latency.spec.model import Phase, Workload
from pytest_latency.workload import build_plan
from tests.helpers.json_schema import assert_valid_run_file

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "capacity.slo.yaml"
SPEEDUP = 6.0
SLOT_OPTIONS = {
    "replicas": 16, "max_batch": 1, "decode_base_s": 0.1 / SPEEDUP, "decode_per_seq_s": 0.0,
    "prefill_base_s": 0.5 / SPEEDUP, "prefill_per_token_s": 0.0, "prefix_cache_blocks": 0,
}  # fmt: skip
SLOTS = SimConfig(**SLOT_OPTIONS)  # type: ignore[arg-type]
CAPACITY_RPS = 16 / (0.6 / SPEEDUP)  # 16 slots, 0.1 s a request: 160/s
OUTPUT_TOKENS, LIMIT_S = 1, 3.0 / SPEEDUP
WARMUP_S, PROBE_S, BUDGET_S = 1.0, 60.0 / SPEEDUP, 360.0 / SPEEDUP
SEEDS = 12


def good_fraction(rate: float) -> float:
    """Mean share of probe requests with TTFT <= the limit in a probe as the search runs
    it (a 1 s warm-up, then 10 s, from an empty queue), over seeded arrivals, virtual time."""
    shares = []
    for seed in range(SEEDS):
        phases = (Phase("warmup", rate, WARMUP_S), Phase("probe", rate, PROBE_S))
        workload = Workload(
            phases=phases, seed=seed, input_tokens=(20, 20), output_tokens=OUTPUT_TOKENS
        )
        plan = build_plan(workload)
        arrivals = [Arrival(p.intended_s, p.input_tokens, p.output_tokens) for p in plan.requests]
        ttfts = np.array([
            math.inf if result.ttft_s is None else result.ttft_s
            for planned, result in zip(plan.requests, simulate(SLOTS, arrivals), strict=True)
            if planned.phase == "probe"
        ])  # fmt: skip
        shares.append(float(np.mean(ttfts <= LIMIT_S)))
    return float(np.mean(shares))


def flip_rate(low: float = 80.0, high: float = 320.0) -> float:
    """Where the probe's attainment(ttft <= 500 ms) crosses 90%, to 1% (about 165/s, just
    over the capacity: a 10 s probe 3% over it has not built a queue of 500 ms yet)."""
    while high / low > 1.01:
        middle = math.sqrt(low * high)
        low, high = (middle, high) if good_fraction(middle) >= 0.9 else (low, middle)
    return math.sqrt(low * high)


TEST_FILE = f"""
from pytest_latency import ServerSpec, objective

def test_capacity(latency):
    result = latency.capacity(
        objective("ttft", p=90, max="{LIMIT_S * 1000:.0f}ms"),
        rates=(48, 360), probe="{PROBE_S:g}s", budget="{BUDGET_S:g}s",
        server=ServerSpec(kind="sim", options={SLOT_OPTIONS!r}),
        seed=5, input_tokens=(20, 20), output_tokens={OUTPUT_TOKENS}, timeout_s=10.0,
    )
    result.assert_slo(objective("capacity", min=100))
"""


# Seed 5's arrivals, searched in virtual time with the same engine: 131/s undecided,
# 189/s failed (runaway queue), 131/s again passed on both probes pooled, 158/s twice
# undecided: 131..189/s, 1.44x (19 of 20 seeds within 1.5x, tests/unit/analysis/
# test_capacity_search.py measures the share). Live, each TTFT gains ~10 ms of HTTP and
# client time (2% of the limit; measured at 100 and 150 req/s), which moves no verdict
# of this seed in virtual time. So a wider bracket, a miss of the truth or an
# unfinished search here is the live path failing, not chance.
@pytest.mark.slow
@pytest.mark.serial
def test_a_live_search_brackets_a_slot_server_within_1_5x(pytester: pytest.Pytester) -> None:
    truth = flip_rate()
    assert CAPACITY_RPS < truth < 1.1 * CAPACITY_RPS
    pytester.makepyfile(test_capacity=TEST_FILE)
    result = pytester.runpytest("--latency-json", "latency.json")
    result.assert_outcomes(passed=1)
    (run,) = assert_valid_run_file(pytester.path / "latency.json")["runs"]
    search = run["capacity"]
    passed, failed = search["passed_rps"], search["failed_rps"]
    rows = [(p["rate"], p["outcome"], p["stopped_early"]) for p in search["probes"]]
    assert passed is not None and failed is not None, rows
    assert passed <= truth <= failed, (truth, rows)
    print(f"truth {truth:.1f}/s, bracket {passed:.1f}..{failed:.1f}/s, {failed / passed:.2f}x")
    # Issue 33 counted the probe's queue check inside its alpha (it had called 8-33% of
    # healthy probes near capacity runaway), so over-capacity probes decide later: this
    # live search came out 131..218/s (1.65x), 169/s and 149/s undecided. Within 1.5x
    # is the goal again once probes decide by their objectives' looks (issue 33 item 8).
    assert failed / passed <= 1.75, (truth, rows)
    assert search["spent_s"] <= BUDGET_S and not search["contradictions"]
    pooled = [item["pooled"] for p in search["probes"] for item in p["objectives"]]
    assert max(pooled) >= 2, rows  # the pass rests on a repeat pooled with its first probe
    (gate,) = run["objectives"]
    assert (gate["metric"], gate["verdict"], gate["unit"]) == ("capacity", "pass", "rps")


@pytest.mark.slow
@pytest.mark.serial
def test_the_example_runs_on_the_embedded_server_within_its_budget(
    pytester: pytest.Pytester,
) -> None:
    shutil.copy(EXAMPLE, pytester.path / EXAMPLE.name)
    result = pytester.runpytest("--latency-json", "latency.json")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*capacity search: rates 10..160 req/s*", "*capacity: passed at*"])
    (run,) = assert_valid_run_file(pytester.path / "latency.json")["runs"]
    search = run["capacity"]
    assert search["spent_s"] <= search["budget_s"] == 30.0
    assert {"rate", "offered", "verdicts", "stopped_early"} <= set(search["probes"][0])
    assert [row["metric"] for row in run["objectives"]] == ["capacity"]
    phases = {phase["name"]: phase["offered"] for phase in run["phases"]}
    assert sum(phases.values()) == len(run["requests"])  # one record per offered request
    for request in run["requests"]:
        if request["status"] == "cancelled":
            assert request["error"].startswith("stopped early: ")
