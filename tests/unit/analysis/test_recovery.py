"""Recovery after a burst: the pinned definition on known series, and the live sim against
the virtual-time truth of the same planned arrivals (the lesson's 5 -> 25 req/s spike)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from pytest_latency.analysis.objectives import decide_objectives
from pytest_latency.analysis.recovery import ROLLING_WINDOW, recoveries
from pytest_latency.analysis.verdict import Verdict
from pytest_latency.records import RequestRecord, Status, read_runs
from pytest_latency.sim.config import SimConfig
from pytest_latency.sim.virtual import Arrival, simulate
from pytest_latency.spec.model import Phase, SpecError, Workload, objective
from pytest_latency.workload import build_plan

WORKLOAD = Workload(
    phases=(Phase("steady", 5, 10.0), Phase("burst", 25, 5.0), Phase("recover", 5, 20.0)),
    seed=5,
    input_tokens=(20, 20),
    output_tokens=40,
)
# One replica of 16 slots: 40-token answers take ~1.2 s, so 5 req/s fits and 25 req/s
# queues ~60 requests, which drain over several seconds after the burst.
SIM = SimConfig(replicas=1, max_batch=16)
SPEC = """\
server: {kind: sim, options: {replicas: 1, max_batch: 16}}
workload:
  seed: 5
  input_tokens: 20
  output_tokens: 40
  phases:
    - {name: steady, rate: 5, duration: 10s}
    - {name: burst, rate: 25, duration: 5s}
    - {name: recover, rate: 5, duration: 20s}
objectives:
  - {metric: recovery, max: 15s, after: burst}
"""


def _records(ttfts: list[tuple[str, float]], gap: float = 0.2) -> list[RequestRecord]:
    records = []
    for index, (phase, ttft) in enumerate(ttfts):
        record = RequestRecord(index, phase, index * gap, 20, status=Status.OK)
        record.first_token_s = record.intended_s + ttft
        record.end_s = record.first_token_s + 0.5
        records.append(record)
    return records


def _lesson_like(slow_after: int, total_after: int = 100) -> list[RequestRecord]:
    """50 steady (0.2 s), 25 burst (3 s), then ``slow_after`` slow (3 s), the rest 0.1 s."""
    series = [("steady", 0.2)] * 50 + [("burst", 3.0)] * 25
    series += [("recover", 3.0 if i < slow_after else 0.1) for i in range(total_after)]
    return _records(series)


def _phases(names: tuple[str, ...], gap: float = 0.2, counts: tuple[int, ...] = ()) -> Workload:
    counts = counts or (50, 25, 100)
    return Workload(
        phases=tuple(Phase(n, 5, c * gap) for n, c in zip(names, counts, strict=True)), seed=1
    )


WORKLOAD_UNIT = _phases(("steady", "burst", "recover"))


def test_recovery_is_the_first_send_from_which_every_window_is_within() -> None:
    records = _lesson_like(slow_after=30)
    (found,), problem = recoveries(records, "burst", WORKLOAD_UNIT)
    assert problem is None and found.burst_end_s == pytest.approx(15.0)
    # A window's median is under the steady p95 once at most 4 of its 10 requests are
    # slow: from the window starting at request 26 after the burst (sent 26 x 0.2 s later).
    assert found.recovery_s == pytest.approx((30 - ROLLING_WINDOW // 2 + 1) * 0.2)


def test_no_lasting_effect_is_zero_and_never_recovering_is_inf() -> None:
    (quick,), _ = recoveries(_lesson_like(slow_after=0), "burst", WORKLOAD_UNIT)
    assert quick.recovery_s == 0.0
    (never,), _ = recoveries(_lesson_like(slow_after=100), "burst", WORKLOAD_UNIT)
    assert math.isinf(never.recovery_s) and never.watched_s == pytest.approx(18.0)


@pytest.mark.parametrize(
    ("slow_after", "limit", "verdict"),
    [(30, "10s", Verdict.PASS), (30, "2s", Verdict.FAIL), (100, "10s", Verdict.FAIL),
     (100, "30s", Verdict.INCONCLUSIVE)],
)  # fmt: skip
def test_verdicts(slow_after: int, limit: str, verdict: Verdict) -> None:
    goal = objective("recovery", max=limit, after="burst")
    (result,) = decide_objectives(
        [goal], _lesson_like(slow_after), confidence=0.99, workload=WORKLOAD_UNIT
    )
    assert result.verdict is verdict, result.reason
    if slow_after == 100:
        assert math.isinf(result.estimate_s) and "never" in result.reason


def test_a_burst_without_a_phase_after_it_is_inconclusive_and_says_why() -> None:
    records = _records([("steady", 0.1)] * 50 + [("burst", 3.0)] * 25)
    workload = _phases(("steady", "burst"), counts=(50, 25))
    goal = objective("recovery", max="10s", after="burst")
    (result,) = decide_objectives([goal], records, confidence=0.99, workload=workload)
    assert result.verdict is Verdict.INCONCLUSIVE and "recovery phase" in result.reason


def test_without_the_workload_the_burst_end_is_estimated_from_the_sends() -> None:
    (found,), _ = recoveries(_lesson_like(slow_after=30), "burst")
    assert found.burst_end_s == pytest.approx(15.0 - 0.1)


def test_python_form_needs_units_and_a_burst() -> None:
    assert objective("recovery", max_s=10, after="burst").label == "recovery after burst <= 10s"
    with pytest.raises(SpecError, match="needs a unit"):
        objective("recovery", max="10", after="burst")
    with pytest.raises(SpecError, match="after"):
        objective("recovery", max="10s")


def virtual_truth(workload: Workload, config: SimConfig) -> list[RequestRecord]:
    """The planned arrivals through the engine in virtual time, as records."""
    plan = build_plan(workload)
    arrivals = [Arrival(p.intended_s, p.input_tokens, p.output_tokens) for p in plan.requests]
    records = []
    for planned, result in zip(plan.requests, simulate(config, arrivals), strict=True):
        record = RequestRecord(planned.id, planned.phase, planned.intended_s, planned.input_tokens)
        if result.ttft_s is not None and result.e2e_s is not None:
            record.status = Status.OK
            record.first_token_s = planned.intended_s + result.ttft_s
            record.end_s = planned.intended_s + result.e2e_s
            record.queue_wait_s = result.queue_wait_s
        else:
            record.status = Status.REJECTED
        records.append(record)
    return records


@pytest.mark.slow
@pytest.mark.serial
def test_recovery_on_the_live_sim_matches_the_virtual_time_truth(pytester: pytest.Pytester) -> None:
    """35 s of load: the client's recovery is the engine's own within 1 s."""
    (truth,), problem = recoveries(virtual_truth(WORKLOAD, SIM), "burst", WORKLOAD)
    assert problem is None and 2.0 < truth.recovery_s < 12.0  # the spike does leave a queue
    (pytester.path / "spike.slo.yaml").write_text(SPEC)
    result = pytester.runpytest("--latency-json", "latency.json", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    (run,) = read_runs(Path(pytester.path / "latency.json"))
    (objective_row,) = run.document["objectives"]
    assert objective_row["metric"] == "recovery" and objective_row["after"] == "burst"
    assert objective_row["estimate_s"] == pytest.approx(truth.recovery_s, abs=1.0)
    (measured,), _ = recoveries(run.records, "burst", WORKLOAD)
    assert measured.recovery_s == pytest.approx(objective_row["estimate_s"])
