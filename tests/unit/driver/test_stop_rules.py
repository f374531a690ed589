"""Stop rules: a phase stops on its error rate or on over-saturation, and every request it
did not send is a cancelled record that says why."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_latency.driver.stops import PhaseStops
from pytest_latency.records import STOPPED_EARLY, RequestRecord, Status, read_runs
from pytest_latency.spec.model import Phase, StopRule, Workload
from pytest_latency.spec.slo_yaml import SpecFileError, load_slo_file
from pytest_latency.workload import build_plan


def _workload(rule: StopRule, rate: float = 10.0) -> Workload:
    return Workload(phases=(Phase("load", rate, 60.0, stop=rule),), seed=1)


def _ended(stops: PhaseStops, ok: bool) -> None:
    record = RequestRecord(0, "load", 0.0, 10, status=Status.OK if ok else Status.REJECTED)
    stops.ended(record)


def test_error_rate_stops_only_after_enough_requests_ended() -> None:
    stops = PhaseStops(_workload(StopRule(error_rate=0.2, after=10)))
    for index in range(9):
        stops.sent("load", index * 0.1)
        _ended(stops, ok=index % 2 == 0)  # 4 of 9 failed, but only 9 ended
    assert stops.reason("load") is None
    stops.sent("load", 1.0)
    _ended(stops, ok=False)
    reason = stops.reason("load")
    assert reason is not None and reason.startswith(STOPPED_EARLY) and "50% (5/10" in reason


def test_a_steady_in_flight_count_is_not_saturation_but_a_growing_one_is() -> None:
    steady = PhaseStops(_workload(StopRule(saturation=0.5, after=30)))
    for index in range(200):  # each request ends before the next is sent: flat
        steady.sent("load", index * 0.1)
        _ended(steady, ok=True)
    assert steady.reason("load") is None
    growing = PhaseStops(_workload(StopRule(saturation=0.5, after=30)))
    for index in range(29):  # nothing ends: in flight grows at the full 10/s
        growing.sent("load", index * 0.1)
        assert growing.reason("load") is None  # fewer than `after` sends seen
    growing.sent("load", 2.9)
    reason = growing.reason("load")
    assert reason is not None and "over-saturated" in reason and "30 in flight" in reason


def test_stop_in_yaml(tmp_path: Path) -> None:
    path = tmp_path / "stop.slo.yaml"
    body = (
        "workload:\n  phases:\n"
        "    - {name: load, rate: 5, duration: 10s, stop: {error_rate: 20%, after: 50}}\n"
        "objectives:\n  - {metric: error_rate, max: 1%}\n"
    )
    path.write_text(body)
    (phase,) = load_slo_file(path).workload.phases
    assert phase.stop == StopRule(error_rate=0.2, after=50)
    for wrong in ("{error_rate: 0.2}", "{errors: 20%}", "{after: 50}", "20%"):
        path.write_text(body.replace("{error_rate: 20%, after: 50}", wrong))
        with pytest.raises(SpecFileError, match=r":3: workload\.phases\[0\]\.stop"):
            load_slo_file(path)


SPEC = """\
server: {kind: sim, options: {replicas: 1, max_batch: 2, max_queue: 20}}
workload:
  seed: 2
  input_tokens: 20
  output_tokens: 20
  timeout: 20s
  phases:
    - {name: flood, rate: 40, duration: 4s, stop: {saturation: 50%, after: 30}}
    - {name: quiet, rate: 1, duration: 8s}
    - {name: errors, rate: 40, duration: 4s, stop: {error_rate: 30%, after: 20}}
objectives:
  - {metric: ttft, p: 50, max: 60s, phase: quiet}
"""


@pytest.mark.slow
def test_stopped_phases_leave_one_cancelled_record_per_unsent_request(
    pytester: pytest.Pytester,
) -> None:
    """2 slots of ~0.6 s against 40/s: the flood saturates, the second flood is refused."""
    (pytester.path / "stop.slo.yaml").write_text(SPEC)
    # 8 quiet requests cannot bound their p50 (inconclusive): this test is about the
    # stopped phases' records, so an inconclusive verdict passes with a warning here.
    args = ("--latency-json", "latency.json", "-p", "no:randomly")
    result = pytester.runpytest(*args, "--latency-inconclusive", "warn")
    result.assert_outcomes(passed=1)  # the stopped phases do not make the run invalid
    (run,) = read_runs(pytester.path / "latency.json")
    workload = load_slo_file(pytester.path / "stop.slo.yaml").workload
    planned = build_plan(workload).requests
    assert sorted(r.id for r in run.records) == sorted(p.id for p in planned)
    for phase, cause in (("flood", "over-saturated"), ("errors", "error rate")):
        records = [r for r in run.records if r.phase == phase]
        stopped = [r for r in records if (r.error or "").startswith(STOPPED_EARLY)]
        assert len(stopped) > len(records) // 2, phase  # stopped well before the end
        assert all(r.status is Status.CANCELLED and r.sent_s is None for r in stopped)
        assert all(r.trace_id == "" for r in stopped)  # prepared ones were withdrawn
        assert all(cause in (r.error or "") and repr(phase) in (r.error or "") for r in stopped)
    quiet = [r for r in run.records if r.phase == "quiet"]
    assert quiet and not any((r.error or "").startswith(STOPPED_EARLY) for r in quiet)
