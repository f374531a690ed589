"""A steady phase whose queue ran away FAILs its waiting latencies, with known truth.

The slot servers of ``tests/helpers/slot_server.py`` serve ``slots`` requests at once for
0.6 s each: over their capacity the queue grows without bound (every TTFT limit fails
in time); under it the queue holds still. Before this rule, a steady phase at 2.3x its
server's capacity ended INCONCLUSIVE (TTFT p95 23 s against 1 s, bounds 0..inf,
effective n 4) and its test passed.
"""

from __future__ import annotations

import pytest

from pytest_latency.analysis.objectives import decide_objectives
from pytest_latency.analysis.runaway import runaway_phases
from pytest_latency.analysis.verdict import Verdict
from pytest_latency.spec.model import Phase, Workload, objective
from tests.helpers.slot_server import SlotServer

SERVER = SlotServer(slots=4, prefill_s=0.1, decode_s=0.025, output_tokens=20)  # 6.67/s
GOALS = (
    objective("ttft", p=95, max="1s"),
    objective("attainment", ttft="1s", min="90%"),
    objective("tpot", p=50, max="30ms"),  # 25 ms: decode speed does not grow with the queue
)


def run(rate: float, seconds: float, seed: int) -> tuple[Workload, list]:
    workload = Workload(phases=(Phase("steady", rate=rate, duration_s=seconds),))
    return workload, SERVER.records([("steady", rate, seconds)], seed)


def test_a_phase_at_twice_the_capacity_fails_its_waiting_latencies_on_the_runaway_queue():
    workload, records = run(2.0 * SERVER.throughput_rps, 30.0, seed=1)
    (queue,) = runaway_phases(records, workload, set()).values()
    # Arrivals at 13.3/s, service at 6.67/s: in flight grows by about 6.7/s.
    assert queue.growth_rps == pytest.approx(SERVER.throughput_rps, rel=0.25)
    results = decide_objectives(GOALS, records, confidence=0.99, workload=workload)
    ttft, attainment, tpot = results
    assert ttft.verdict is Verdict.FAIL and attainment.verdict is Verdict.FAIL
    # At twice the capacity the margin decides it first (sectioning, analysis/sectioning.py);
    # where the bounds leave it open the runaway rule does.
    assert ttft.reason.startswith(
        ("lower bound over the limit", "the queue ran away in phase steady: requests in flight")
    )
    assert tpot.verdict is Verdict.PASS


@pytest.mark.parametrize("load", [0.9, 0.95])
def test_a_queue_that_holds_still_near_capacity_is_never_called_runaway(load: float):
    """150 seeded 60 s phases each: a queue near capacity wanders (its relaxation time
    is about a minute with 4 slots) but does not run away."""
    called = 0
    for seed in range(150):
        workload, records = run(load * SERVER.throughput_rps, 60.0, seed)
        called += bool(runaway_phases(records, workload, set()))
    assert called == 0


def test_a_server_over_a_quarter_past_its_capacity_is_found_in_nearly_every_phase():
    """The price of the margin: at 1.5x the capacity (growth a third of the rate) the rule
    finds it in 49 of 50 seeded 30 s phases (the seeds are fixed: the count is exact)."""
    found = 0
    for seed in range(50):
        workload, records = run(1.5 * SERVER.throughput_rps, 30.0, seed)
        found += bool(runaway_phases(records, workload, set()))
    assert found >= 48


def test_only_an_estimate_past_the_limit_is_failed_and_a_burst_is_left_to_episodes():
    workload, records = run(2.0 * SERVER.throughput_rps, 30.0, seed=2)
    generous = objective("ttft", p=50, max="60s")  # over the limit in no request
    (result,) = decide_objectives([generous], records, confidence=0.99, workload=workload)
    assert result.verdict is not Verdict.FAIL
    assert runaway_phases(records, workload, bursts={"steady"}) == {}
