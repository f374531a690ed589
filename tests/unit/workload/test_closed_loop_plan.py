"""Closed-loop (``arrival: concurrent``) phases: the spec, YAML and the plan's user pools."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_latency.spec.model import Phase, SpecError, Workload, concurrent, steady
from pytest_latency.spec.phase import POOL_REQUESTS_PER_USER_S, StopRule
from pytest_latency.spec.slo_yaml import SpecFileError, load_slo_file
from pytest_latency.workload import arrival_times, build_plan


def test_a_closed_loop_plan_holds_a_pool_per_user_numbered_round_by_round() -> None:
    workload = Workload(phases=(steady(2, 1.0), concurrent(3, 2.0, think_time_s=0.1)))
    plan = build_plan(workload)
    pool = [request for request in plan.requests if request.phase == "users"]
    per_user = int(2.0 * POOL_REQUESTS_PER_USER_S)
    assert len(pool) == 3 * per_user
    assert {request.intended_s for request in pool} == {1.0}  # the phase start
    assert [request.user for request in pool[:6]] == [0, 1, 2, 0, 1, 2]
    assert all(request.user is None for request in plan.requests if request.phase == "steady")
    assert workload.to_json()["phases"][1]["users"] == 3  # type: ignore[index]


def test_repeated_closed_loops_have_distinct_users() -> None:
    workload = Workload(phases=(concurrent(2, 1.0),), repeat=2, cooldown_s=1.0)
    users = {request.user for request in build_plan(workload).requests}
    assert users == {0, 1, 2, 3}


def test_a_closed_loop_has_no_planned_send_times() -> None:
    with pytest.raises(ValueError, match="closed loop"):
        arrival_times(concurrent(2, 1.0), None)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"users": None}, "needs users"),
        ({"users": 0}, "users"),
        ({"rate": 5.0}, "rate"),
        ({"think_time_s": -1.0}, "think_time"),
        ({"stop": StopRule(saturation=0.5)}, "cannot saturate"),
    ],
)
def test_bad_closed_loops_are_refused_with_the_fix(kwargs: dict[str, object], message: str) -> None:
    fields: dict[str, object] = {
        "name": "users",
        "rate": 0.0,
        "duration_s": 5.0,
        "arrival": "concurrent",
        "users": 4,
    }
    fields.update(kwargs)
    with pytest.raises(SpecError, match=message):
        Phase(**fields)  # type: ignore[arg-type]


def test_users_need_arrival_concurrent() -> None:
    with pytest.raises(SpecError, match="need arrival: concurrent"):
        Phase("steady", rate=5, duration_s=5, users=4)


def test_the_yaml_phase_reads_users_duration_and_think_time(tmp_path: Path) -> None:
    spec = tmp_path / "closed.slo.yaml"
    spec.write_text(
        "workload:\n"
        "  phases:\n"
        "    - {name: users, arrival: concurrent, users: 4, duration: 10s, think_time: 250ms}\n"
        "objectives:\n"
        "  - {metric: error_rate, max: 5%}\n"
    )
    (phase,) = load_slo_file(spec).workload.phases
    assert (phase.users, phase.duration_s, phase.think_time_s) == (4, 10.0, 0.25)
    assert phase.closed_loop


def test_a_yaml_closed_loop_with_a_rate_is_refused_at_its_line(tmp_path: Path) -> None:
    spec = tmp_path / "closed.slo.yaml"
    spec.write_text(
        "workload:\n"
        "  phases:\n"
        "    - name: users\n"
        "      arrival: concurrent\n"
        "      users: 4\n"
        "      rate: 5\n"
        "      duration: 10s\n"
        "objectives:\n"
        "  - {metric: error_rate, max: 5%}\n"
    )
    with pytest.raises(SpecFileError, match=r":6.*not a rate"):
        load_slo_file(spec)


def test_a_closed_loop_too_short_to_decide_says_to_add_users_or_time() -> None:
    from pytest_latency.analysis.planning import plan_power
    from pytest_latency.spec.model import objective

    plan = build_plan(Workload(phases=(concurrent(1, 1.0),)))
    (power,) = plan_power(plan, [objective("ttft", p=99, max="1s")], [0.99])
    assert not power.decidable
    assert "closed loop" in power.describe() and "more users" in power.describe()
