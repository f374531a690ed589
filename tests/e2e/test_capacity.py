"""The capacity search end to end on the embedded server, against virtual-time truth.

The truth is where the objective flips in long virtual runs of the same engine
(``simulate()``); the live search must bracket it, at most 1.5x wide, in its budget.
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
SIM = SimConfig(replicas=1, max_batch=32)  # as in the example
BUDGET_S = 60.0


WARMUP_S, PROBE_S, SEEDS = 1.0, 8.0, 30


def good_fraction(rate: float) -> float:
    """Mean share of probe requests with TTFT <= 500 ms in a probe as the search runs it
    (a 1 s warm-up, then 8 s, from an empty queue), over seeded arrivals, virtual time."""
    shares = []
    for seed in range(SEEDS):
        phases = (Phase("warmup", rate, WARMUP_S), Phase("probe", rate, PROBE_S))
        workload = Workload(phases=phases, seed=seed, input_tokens=(20, 20), output_tokens=20)
        plan = build_plan(workload)
        arrivals = [Arrival(p.intended_s, p.input_tokens, p.output_tokens) for p in plan.requests]
        ttfts = np.array([
            math.inf if result.ttft_s is None else result.ttft_s
            for planned, result in zip(plan.requests, simulate(SIM, arrivals), strict=True)
            if planned.phase == "probe"
        ])  # fmt: skip
        shares.append(float(np.mean(ttfts <= 0.5)))
    return float(np.mean(shares))


def flip_rate(low: float = 20.0, high: float = 80.0) -> float:
    """Where the probe's attainment(ttft <= 500ms) crosses 90%, to 0.2 req/s (about 43/s;
    in long runs it flips lower, near 41/s: a probe measures what it offers, and a queue
    that builds slowly needs longer probes to show; docs/capacity.md)."""
    while high - low > 0.2:
        middle = (low + high) / 2.0
        low, high = (middle, high) if good_fraction(middle) >= 0.9 else (low, middle)
    return (low + high) / 2.0


# The test file; {goal} is the objective each probe decides.
TEST_FILE = f"""
from pytest_latency import ServerSpec, objective

def test_capacity(latency):
    result = latency.capacity(
        {{goal}},
        rates=(10, 160), probe="{PROBE_S:g}s", budget="{BUDGET_S:g}s",
        server=ServerSpec(kind="sim", options={{"replicas": 1, "max_batch": 32}}),
        seed=5, input_tokens=(20, 20), output_tokens=20, timeout_s=10.0,
    )
    result.assert_slo(objective("capacity", min=20))
"""


# Both say "90% of TTFTs within 500 ms": one flip, decided as a proportion either way.
GOALS = ['objective("attainment", ttft="500ms", min="90%")', 'objective("ttft", p=90, max="500ms")']


# Issue 22: since attainment and percentiles pay for the latencies' send-order
# dependence, a probe near capacity holds too few effective requests to decide.
WIDER_THAN_TARGET = (
    "the bracket is wider than 1.5x (2.07x measured): probes near capacity hold too few"
    " effective requests once attainment pays for the latencies' dependence (issue 22)"
)


@pytest.mark.slow
@pytest.mark.serial
@pytest.mark.xfail(strict=False, reason=WIDER_THAN_TARGET)
@pytest.mark.parametrize("goal", GOALS, ids=["attainment", "percentile"])
def test_the_bracket_contains_the_true_flip_and_is_at_most_1_5x_wide(pytester, goal):
    truth = flip_rate()
    pytester.makepyfile(test_capacity=TEST_FILE.replace("{goal}", goal))
    result = pytester.runpytest("--latency-json", "latency.json")
    result.assert_outcomes(passed=1)
    (run,) = assert_valid_run_file(pytester.path / "latency.json")["runs"]
    search = run["capacity"]
    passed, failed = search["passed_rps"], search["failed_rps"]
    assert passed is not None and failed is not None, search
    assert passed <= truth <= failed, (truth, search)
    width = failed / passed
    print(f"truth {truth:.1f}/s, bracket {passed:.1f}..{failed:.1f}/s, {width:.2f}x wide")
    assert width <= 1.5, (truth, search)
    assert search["spent_s"] <= BUDGET_S and not search["contradictions"]
    (gate,) = run["objectives"]
    assert (gate["metric"], gate["verdict"], gate["unit"]) == ("capacity", "pass", "rps")


@pytest.mark.slow
@pytest.mark.serial
def test_the_example_runs_on_the_embedded_server_within_its_budget(pytester):
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
