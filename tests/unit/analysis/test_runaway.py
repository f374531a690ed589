"""A phase whose queue ran away FAILs its waiting latencies, by a trend test whose false
calls are counted in the run's error budget; known-truth queues (analysis/runaway.py).

The slot servers of ``tests/helpers/slot_server.py`` serve ``slots`` requests at once for
0.6 s each; ``tests/helpers/mgc_queue.py`` gives M/G/c queues with variable service
times. Over capacity the queue grows without bound (every TTFT limit fails in time);
under it the queue holds still, however near capacity. The heavy replicate counts are
``slow``; docs/statistics.md "A queue that ran away" has the measured table
(``benchmarks/sim_runaway.py``).
"""

from __future__ import annotations

import dataclasses

import pytest

from pytest_latency.analysis.objectives import decide_objectives
from pytest_latency.analysis.runaway import (
    RUNAWAY_REASON,
    counted_tests,
    phase_trends,
    runaway_phases,
    saturation_stops,
)
from pytest_latency.analysis.verdict import Verdict, objective_confidence
from pytest_latency.records import STOPPED_EARLY, RequestRecord, Status
from pytest_latency.spec.model import Phase, Workload, objective
from tests.helpers.mgc_queue import MGcQueue
from tests.helpers.slot_server import SlotServer

SERVER = SlotServer(slots=4, prefill_s=0.1, decode_s=0.025, output_tokens=20)  # 6.67/s
GOALS = (
    objective("ttft", p=95, max="1s"),
    objective("attainment", ttft="1s", min="90%"),
    objective("tpot", p=50, max="30ms"),  # 25 ms: decode speed does not grow with the queue
)
ALPHA = 0.005  # the runaway check's share at 99% with one waiting objective (2 tests)


def run(rate: float, seconds: float, seed: int) -> tuple[Workload, list[RequestRecord]]:
    workload = Workload(phases=(Phase("steady", rate=rate, duration_s=seconds),))
    return workload, SERVER.records([("steady", rate, seconds)], seed)


def steady(seconds: float) -> Workload:
    return Workload(phases=(Phase("steady", rate=1.0, duration_s=seconds),))


def test_the_runaway_check_is_one_more_test_in_the_budget() -> None:
    assert counted_tests(GOALS) == 4  # three objectives and the check
    assert counted_tests(GOALS[2:]) == 1  # nothing waits in the queue: no check
    assert objective_confidence(counted_tests(GOALS[:1])) == pytest.approx(0.995)


def test_a_phase_at_twice_the_capacity_fails_its_waiting_latencies_on_the_runaway_queue():
    workload, records = run(2.0 * SERVER.throughput_rps, 30.0, seed=1)
    (queue,) = runaway_phases(records, workload, set(), ALPHA).values()
    # Arrivals at 13.3/s, service at 6.67/s: in flight grows by about 6.7/s.
    assert queue.growth_rps == pytest.approx(SERVER.throughput_rps, rel=0.25)
    assert queue.trend.p_value <= ALPHA and queue.alpha == ALPHA
    results = decide_objectives(GOALS, records, confidence=0.99, workload=workload)
    ttft, attainment, tpot = results
    assert ttft.verdict is Verdict.FAIL and attainment.verdict is Verdict.FAIL
    # At twice the capacity the margin decides it first (sectioning, analysis/sectioning.py);
    # where the bounds leave it open the runaway rule does.
    assert ttft.reason.startswith(
        ("lower bound over the limit", "the queue ran away in phase steady: requests in flight")
    )
    assert tpot.verdict is Verdict.PASS


def _false_calls(queue: MGcQueue, load: float, seconds: float, seeds: range) -> int:
    return sum(
        bool(runaway_phases(queue.records(load, seconds, seed), steady(seconds), set(), ALPHA))
        for seed in seeds
    )


@pytest.mark.parametrize("slots", [1, 4])
def test_a_queue_near_capacity_with_variable_service_is_not_called_runaway(slots: int):
    """M/G/1 and M/G/4 at 95% load, lognormal service with CV 2, 60 s phases from an
    empty queue (still climbing: it relaxes over minutes): 100 seeds each, at most one
    call (the seeds are fixed: the count is exact; 0.0-1.0% measured at 400)."""
    queue = MGcQueue(slots=slots, capacity_rps=6.67, cv=2.0, kind="lognormal")
    assert _false_calls(queue, 0.95, 60.0, range(100)) <= 1


@pytest.mark.slow
@pytest.mark.parametrize("seconds", [60.0, 120.0])
@pytest.mark.parametrize("load", [0.9, 0.95])
@pytest.mark.parametrize("kind", ["lognormal", "hyperexponential"])
@pytest.mark.parametrize("slots", [1, 4])
def test_false_runaway_calls_stay_under_one_percent(
    slots: int, kind: str, load: float, seconds: float
):
    """The issue's goal (<= 1% false calls on M/G/1 and M/G/4 at 0.9-0.95 with CV up to
    2), 400 seeds a cell: at most 4 calls (the test's nominal rate is 0.5%)."""
    queue = MGcQueue(slots=slots, capacity_rps=6.67, cv=2.0, kind=kind)
    assert _false_calls(queue, load, seconds, range(1000, 1400)) <= 4


def test_a_server_half_again_over_its_capacity_is_found_in_nearly_every_phase():
    """At 1.5x the capacity (in flight grows 3.3/s) the trend test finds it in 60 s
    phases nearly always: 50 seeds, at most two missed (measured 0 of 300)."""
    found = 0
    for seed in range(50):
        workload, records = run(1.5 * SERVER.throughput_rps, 60.0, seed)
        found += bool(runaway_phases(records, workload, set(), ALPHA))
    assert found >= 48


def test_the_rule_changes_no_verdict_of_a_healthy_server_near_capacity():
    """A 4-slot server at 90% of its capacity: the objectives decide as they would with
    no runaway rule (the rule can only turn an inconclusive over-the-limit into a FAIL,
    and it found no growth), so a healthy run stays as PASS-able as its bounds allow."""
    queue = MGcQueue(slots=4, capacity_rps=6.67, cv=2.0, kind="lognormal")
    goals = [objective("ttft", p=95, max="20s"), objective("ttft", p=50, max="100ms")]
    for seed in range(20):
        records = queue.records(0.9, 60.0, seed)
        ruled = decide_objectives(goals, records, confidence=0.995, workload=steady(60.0))
        bare = decide_objectives(goals, records, confidence=0.995)
        assert [r.verdict for r in ruled] == [r.verdict for r in bare]
        assert not any(r.reason.startswith(RUNAWAY_REASON) for r in ruled)


def test_a_queue_a_tenth_over_capacity_for_two_minutes_fails_its_ttft_p95():
    """The issue's row: M/M/1 at 1.1x its capacity (2 req/s offered) for 120 s, TTFT p95
    <= 1 s (the true p95 is many seconds): FAIL in at least 90% of 50 seeds (97% of 200).
    The in-flight trend alone finds ~5% (it grows 0.18/s against a random walk of sd
    ~2/s^0.5); sectioning's lower side at the window's cap finds the rest."""
    queue = MGcQueue(slots=1, capacity_rps=2.0 / 1.1)
    workload = Workload(phases=(Phase("steady", rate=2.0, duration_s=120.0),))
    goal = objective("ttft", p=95, max="1s")
    failed = 0
    for seed in range(50):
        records = queue.records(1.1, 120.0, seed)
        (result,) = decide_objectives([goal], records, confidence=0.995, workload=workload)
        failed += result.verdict is Verdict.FAIL
    assert failed >= 45


def test_only_an_estimate_past_the_limit_is_failed_and_a_burst_is_left_to_episodes():
    workload, records = run(2.0 * SERVER.throughput_rps, 30.0, seed=2)
    generous = objective("ttft", p=50, max="60s")  # over the limit in no request
    (result,) = decide_objectives([generous], records, confidence=0.99, workload=workload)
    assert result.verdict is not Verdict.FAIL
    assert runaway_phases(records, workload, {"steady"}, ALPHA) == {}


STOP = f"{STOPPED_EARLY}phase 'steady': over-saturated: in flight grew 3.1/s over the last 50"


def _stopped(records: list[RequestRecord], after: int) -> list[RequestRecord]:
    """The requests from ``after`` on kept back by a saturation stop: never sent."""
    kept = [dataclasses.replace(record) for record in records[:after]]
    for record in records[after:]:
        unsent = RequestRecord(record.id, record.phase, record.intended_s, 20, error=STOP)
        unsent.status = Status.CANCELLED
        kept.append(unsent)
    return kept


def test_a_saturation_stop_fails_the_waiting_objectives_with_the_stop_as_reason():
    """At 1.5x the capacity a saturation stop kept back most of the phase; what was sent
    looks fine (the queue had barely built), yet the phase is overloaded by the user's
    own rule: its waiting objectives FAIL with the stop as the reason, never
    INCONCLUSIVE or PASS on the requests it let through. Decode speed keeps its verdict."""
    workload, records = run(1.5 * SERVER.throughput_rps, 60.0, seed=4)
    stopped = _stopped(records, after=60)
    assert saturation_stops(stopped) == {
        "steady": "the queue ran away in phase steady: its saturation stop rule stopped it"
        " (phase 'steady': over-saturated: in flight grew 3.1/s over the last 50)"
    }
    goals = [*GOALS, objective("e2e", p=99, max="60s")]
    ttft, attainment, tpot, e2e = decide_objectives(
        goals, stopped, confidence=0.99, workload=workload
    )
    for result in (ttft, attainment, e2e):
        assert result.verdict is Verdict.FAIL, result.reason
        assert result.reason.startswith(f"{RUNAWAY_REASON} in phase steady: its saturation stop")
        assert "a stop for saturation is overload, not a way out" in result.reason
    assert tpot.verdict is not Verdict.FAIL


def test_a_stop_for_errors_is_no_overload_evidence():
    _, records = run(0.5 * SERVER.throughput_rps, 60.0, seed=5)
    stopped = _stopped(records, after=60)
    for record in stopped[60:]:
        record.error = f"{STOPPED_EARLY}phase 'steady': error rate 30% (15/50 ended) over 20%"
    assert saturation_stops(stopped) == {}


def test_a_growing_queue_gets_no_advice_to_run_longer():
    """M/M/1 at 1.1x for 120 s, left inconclusive: a longer run does not tighten the
    bounds of a growing queue (its design effect grows with n), so where the run shows
    the queue growing (trend t >= 1) and the design effect of the whole run is 1.5x its
    first half's or more, the advice is the trend's, never "a run about Nx as long"."""
    queue = MGcQueue(slots=1, capacity_rps=2.0 / 1.1)
    workload = Workload(phases=(Phase("steady", rate=2.0, duration_s=120.0),))
    # At 1 s nearly every run FAILs now (sectioning at the window's cap); at 5 s, a few
    # times the estimate's spread under it, some stay undecided with the queue growing.
    goal = objective("ttft", p=95, max="5s")
    advised = 0
    for seed in range(40):
        records = queue.records(1.1, 120.0, seed)
        (result,) = decide_objectives([goal], records, confidence=0.995, workload=workload)
        grew = phase_trends(records, workload, set(), ALPHA)["steady"].trend.t >= 1.0
        if result.verdict is Verdict.INCONCLUSIVE and grew:
            assert "x as long" not in result.reason and "until_decided" not in result.reason
            assert "the bounds of a growing queue do not tighten with a longer run" in result.reason
            advised += "a phase about" in result.reason
    # A few stay undecided with the queue visibly growing (9 of 40 when measured), and
    # each of those gets a length.
    assert advised >= 2
