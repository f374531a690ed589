"""The capacity search end to end on the embedded server, against virtual-time truth.

The server is the held-out slot server of known capacity (``tests/helpers/
held_out_slots.py``): 16 slots, run 6 times faster than real time, 160 req/s at most.
The search is the issue's "6-minute budget, 60 s probes" with every time divided by 6
and every rate multiplied by 6. The truth is where the objective flips in probes of the
same engine in virtual time (``simulate()``).
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from tests.helpers.held_out_slots import (
    BUDGET_S,
    CAPACITY_RPS,
    LIMIT_S,
    OUTPUT_TOKENS,
    PROBE_S,
    RATES,
    SLOT_OPTIONS,
    flip_rate,
)
from tests.helpers.json_schema import assert_valid_run_file

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "capacity.slo.yaml"

TEST_FILE = f"""
from pytest_latency import ServerSpec, objective

def test_capacity(latency):
    result = latency.capacity(
        objective("ttft", p=90, max="{LIMIT_S * 1000:.0f}ms"),
        rates={RATES!r}, probe="{PROBE_S:g}s", budget="{BUDGET_S:g}s",
        server=ServerSpec(kind="sim", options={SLOT_OPTIONS!r}),
        seed=5, input_tokens=(20, 20), output_tokens={OUTPUT_TOKENS}, timeout_s=10.0,
    )
    result.assert_slo(objective("capacity", min=100))
"""


# Seed 5's arrivals, searched in virtual time with the same engine: 131/s passed, 227/s
# failed (runaway queue), 158/s undecided, 189/s undecided and then failed pooled with
# it: 131..189/s, 1.44x (19 of 20 seeds within 1.5x, tests/unit/analysis/
# test_capacity_held_out.py). Live, each TTFT gains ~10 ms of HTTP and client time (2%
# of the limit; measured at 100 and 150 req/s), which moves no verdict of this seed in
# virtual time. So a wider bracket, a miss of the truth or an unfinished search here is
# the live path failing, not chance.
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
    # Before the search's rates lay on a lattice (issue 33) this live search came out
    # 131..218/s (1.65x): plain bisection of the range put its fail 1.65x over the pass.
    assert failed / passed <= 1.5, (truth, rows)
    assert search["spent_s"] <= BUDGET_S and not search["contradictions"]
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
