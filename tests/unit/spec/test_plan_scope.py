"""Objectives are checked against the plan before any request is sent."""

import textwrap

import pytest

from pytest_latency.errors import SpecError
from pytest_latency.plugin.fixtures import LatencyFixture
from pytest_latency.spec.model import Workload, objective, steady
from pytest_latency.spec.plan_scope import scope_problems
from pytest_latency.spec.slo_yaml import SpecFileError, load_slo_file


class _NoLoad:
    """A session that fails the test if the fixture asks it to send anything."""

    def run(self, *args, **kwargs):
        raise AssertionError("the load started")

    def check_plan(self, *args, **kwargs):
        raise AssertionError("the power check ran before the scope check")


def test_a_phase_typo_given_to_run_up_front_errors_before_the_load_with_a_suggestion():
    latency = LatencyFixture(_NoLoad(), "test_x.py::test_x")
    with pytest.raises(SpecError) as caught:
        latency.run(
            steady(5, 20),
            objectives=[objective("ttft", p=95, max="700ms", phase="stedy")],
        )
    message = str(caught.value)
    assert message.startswith("latency.run: nothing was sent:")
    assert "ttft p95 <= 700ms [stedy]: unknown phase 'stedy'; the workload has: steady;" in message
    assert message.endswith("did you mean 'steady'?")


def test_plan_checks_phases_before_the_power_check():
    latency = LatencyFixture(_NoLoad(), "test_x.py::test_x")
    with pytest.raises(SpecError, match=r"latency\.plan: nothing was sent"):
        latency.plan(steady(5, 20), objectives=[objective("e2e", p=95, max="2s", phase="burst")])


def test_every_objective_the_plan_cannot_decide_is_named():
    workload = Workload(phases=(steady(5, 20),), input_tokens=(100, 200), output_tokens=1)
    goals = [
        objective("ttft", p=95, max="1s", input_tokens=(500, 900)),
        objective("itl", p=95, max="50ms"),
        objective("ttft", p=95, max="1s", input_tokens=(150, 900)),  # overlaps: fine
        objective("e2e", p=95, max="1s", output_tokens=(2, 5)),
    ]
    problems = scope_problems(workload, goals)
    assert [(p.number, p.key) for p in problems] == [
        (0, "input_tokens"),
        (1, "metric"),
        (3, "output_tokens"),
    ]
    assert "the workload's input_tokens are [100, 200]" in problems[0].problem
    assert "ask for 2 or more" in problems[1].problem


def test_a_yaml_cohort_outside_the_plan_is_an_error_at_its_line(tmp_path):
    path = tmp_path / "cohort.slo.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            workload:
              input_tokens: [100, 200]
              phases: [{name: steady, rate: 5, duration: 20s}]
            objectives:
              - {metric: ttft, p: 95, max: 1s}
              - {metric: ttft, p: 95, max: 1s, input_tokens: [1000, 2000]}
            """
        )
    )
    with pytest.raises(SpecFileError) as caught:
        load_slo_file(path)
    assert (caught.value.line, caught.value.key) == (6, "objectives[1].input_tokens")
    assert "matches no planned request" in caught.value.problem
