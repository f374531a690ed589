"""Ramp arrivals (exact inhomogeneous Poisson), and the max_concurrency cap on the open loop."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from pytest_latency.records import RequestRecord, read_runs
from pytest_latency.spec.model import Phase, SpecError, Workload
from pytest_latency.spec.slo_yaml import SpecFileError, load_slo_file
from pytest_latency.workload import build_plan
from pytest_latency.workload.arrivals import arrival_times, ramp_times


def test_ramp_times_invert_the_cumulative_rate_rising_and_falling() -> None:
    for start, end in ((5.0, 25.0), (25.0, 5.0), (0.0, 10.0), (7.0, 7.0)):
        t = np.linspace(0.0, 30.0, 61)
        cumulative = start * t + (end - start) * t**2 / (2 * 30.0)
        assert ramp_times(start, end, 30.0, cumulative) == pytest.approx(t, abs=1e-9)


def test_ramp_counts_follow_the_linear_rate() -> None:
    """Over 400 seeded phases, the mean count in each 5 s bin is the rate's integral."""
    phase = Phase("ramp", 5.0, 30.0, arrival="ramp", rate_to=25.0)
    edges = np.arange(0.0, 31.0, 5.0)
    expected = 5.0 * edges[1:] + 20.0 * edges[1:] ** 2 / 60.0
    expected = np.diff(np.concatenate([[0.0], expected]))  # 33.3, 50, 66.7, ... 116.7
    counts = np.array(
        [
            np.histogram(arrival_times(phase, np.random.default_rng(seed)), edges)[0]
            for seed in range(400)
        ]
    )
    # Poisson counts: the mean of 400 has sd sqrt(mean / 400) <= 0.55; 4 sd of slack.
    assert counts.mean(axis=0) == pytest.approx(expected, abs=2.2)
    assert counts.var(axis=0) == pytest.approx(expected, rel=0.25)  # Poisson: var = mean


def test_ramp_in_yaml_and_its_mistakes(tmp_path: Path) -> None:
    path = tmp_path / "ramp.slo.yaml"
    body = (
        "workload:\n  phases:\n    - {name: up, arrival: ramp, from: 5, to: 25, duration: 30s}\n"
        "objectives:\n  - {metric: ttft, p: 95, max: 1s}\n"
    )
    path.write_text(body)
    (phase,) = load_slo_file(path).workload.phases
    assert (phase.rate, phase.rate_to, phase.mean_rate) == (5.0, 25.0, 15.0)
    for wrong, message in (
        ("from: 5, to: 25", "rate: 5, to: 25"),
        ("arrival: ramp, from: 5, to: 25", "arrival: ramp, rate: 5, to: 25"),
    ):
        path.write_text(body.replace(wrong, message))
        with pytest.raises(SpecFileError, match=r":3: workload\.phases\[0\]\.(rate|from)"):
            load_slo_file(path)
    with pytest.raises(SpecError, match="ramp needs"):
        Phase("up", 5.0, 30.0, arrival="ramp")
    with pytest.raises(SpecError, match="needs arrival: ramp"):
        Phase("up", 5.0, 30.0, rate_to=25.0)


def test_steps_are_phases_and_the_plan_follows_them() -> None:
    steps = Workload(
        phases=tuple(Phase(f"step{rate}", rate, 10.0, arrival="constant") for rate in (1, 2, 4)),
        seed=1,
    )
    plan = build_plan(steps)
    assert [plan.offered_in(f"step{rate}") for rate in (1, 2, 4)] == [10, 20, 40]


CAPPED = """\
server: {kind: sim}
workload:
  seed: 3
  input_tokens: 20
  output_tokens: 10
  max_concurrency: 2
  phases:
    - {name: steady, rate: 10, duration: 2s}
objectives:
  - {metric: error_rate, max: 50%}
"""


def _most_in_flight(records: list[RequestRecord]) -> int:
    events = sorted(
        [(r.sent_s, 1) for r in records if r.sent_s is not None]
        + [(r.end_s, -1) for r in records if r.end_s is not None],
        key=lambda event: (event[0], event[1]),  # an end before a send at the same instant
    )
    running = most = 0
    for _, step in events:
        running += step
        most = max(most, running)
    return most


@pytest.mark.slow
def test_max_concurrency_caps_in_flight_and_reports_the_wait(pytester: pytest.Pytester) -> None:
    """20 requests at 10/s against 2 slots of ~0.3 s each: most must wait, in the latency."""
    (pytester.path / "capped.slo.yaml").write_text(CAPPED)
    result = pytester.runpytest("--latency-json", "latency.json", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    (run,) = read_runs(pytester.path / "latency.json")
    records = run.records
    assert all(r.ok for r in records) and run.valid  # the cap's wait is not generator lag
    assert _most_in_flight(records) <= 2
    waits = [r.slot_wait_s or 0.0 for r in records]
    assert sum(wait > 0.05 for wait in waits) >= 10  # capacity ~6.7/s against 10/s offered
    for record, wait in zip(records, waits, strict=True):
        assert record.ttft_s is not None and record.ttft_s >= wait  # the wait is in the TTFT
    document = json.loads((pytester.path / "latency.json").read_text())
    (phase,) = document["runs"][0]["phases"]
    assert phase["slot_wait_s"]["max_s"] == pytest.approx(max(waits))
    assert document["runs"][0]["workload"]["max_concurrency"] == 2
