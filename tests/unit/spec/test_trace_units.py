"""A trace's timestamp unit: ``time_unit: s|ms``, and seconds mistaken for milliseconds."""

from __future__ import annotations

import textwrap
from pathlib import Path

import pytest

from pytest_latency.spec.files import DataFileError
from pytest_latency.spec.slo_yaml import SpecFileError, load_slo_file
from pytest_latency.spec.trace import load_trace, trace_phase


def _csv(tmp_path: Path, instants: list[float]) -> Path:
    path = tmp_path / "trace.csv"
    lines = ["timestamp,input_length,output_length"]
    lines += [f"{instant:g},100,20" for instant in instants]
    path.write_text("\n".join(lines) + "\n")
    return path


# 10 requests 66 ms apart, written in seconds: the trace.
SECONDS = [round(0.066 * index, 3) for index in range(10)]


def test_a_seconds_trace_under_the_default_unit_is_refused_with_the_unit_hint(tmp_path):
    with pytest.raises(DataFileError) as caught:
        load_trace(_csv(tmp_path, SECONDS))
    message = str(caught.value)
    assert "timestamp" in message and "looks like seconds" in message
    assert "time_unit: s" in message
    assert caught.value.line == 2  # the first request's line


def test_declared_seconds_place_the_requests_in_seconds(tmp_path):
    trace = load_trace(_csv(tmp_path, SECONDS), time_unit="s")
    offsets = [request.offset_s for request in trace.requests]
    assert offsets == pytest.approx([0.066 * index for index in range(10)])
    assert trace.to_json()["time_unit"] == "s"


def test_a_trace_far_beyond_any_plausible_rate_is_refused(tmp_path):
    # 50 requests 0.1 ms apart after an ordinary start: a 10,000/s plan
    instants = [index * 0.1 + 1000 for index in range(50)]
    with pytest.raises(DataFileError, match="time_unit: s"):
        load_trace(_csv(tmp_path, instants))


def test_milliseconds_declared_are_taken_as_written(tmp_path):
    phase = trace_phase(_csv(tmp_path, SECONDS), time_unit="ms")
    assert phase.trace is not None
    assert phase.trace.requests[-1].offset_s == pytest.approx(0.000594)  # 0.594 ms


def test_ordinary_millisecond_traces_pass_the_unit_check(tmp_path):
    trace = load_trace(_csv(tmp_path, [0, 120, 250, 400, 1800]))
    assert [r.offset_s for r in trace.requests] == pytest.approx([0, 0.12, 0.25, 0.4, 1.8])


def test_an_unknown_unit_is_refused_with_a_suggestion(tmp_path):
    with pytest.raises(ValueError, match="did you mean 'ms'"):
        load_trace(_csv(tmp_path, SECONDS), time_unit="msec")


def _spec(tmp_path: Path, unit: str) -> Path:
    _csv(tmp_path, SECONDS)
    path = tmp_path / "replay.slo.yaml"
    path.write_text(
        textwrap.dedent(
            f"""\
            workload:
              phases:
                - {{name: replay, arrival: trace, file: trace.csv{unit}}}
            objectives:
              - {{metric: error_rate, max: 5%}}
            """
        )
    )
    return path


def test_a_yaml_trace_phase_takes_time_unit(tmp_path):
    spec = load_slo_file(_spec(tmp_path, ", time_unit: s"))
    assert spec.workload.phases[0].duration_s == pytest.approx(0.066 * 10)


def test_a_yaml_seconds_trace_names_the_file_key_column_and_time_unit(tmp_path):
    with pytest.raises(SpecFileError) as caught:
        load_slo_file(_spec(tmp_path, ""))
    assert (caught.value.line, caught.value.key) == (3, "workload.phases[0].file")
    assert "trace.csv:2: timestamp:" in caught.value.problem
    assert "time_unit: s" in caught.value.problem


def test_a_trace_phase_cohort_is_not_checked_against_the_workload_caps(tmp_path):
    # The trace's lines carry their own lengths (100 in, 20 out), not the workload's.
    from pytest_latency.spec.model import Workload, objective
    from pytest_latency.spec.plan_scope import scope_problems

    phase = trace_phase(_csv(tmp_path, SECONDS), time_unit="s")
    workload = Workload(phases=(phase,), input_tokens=(500, 600), output_tokens=4)
    goal = objective("ttft", p=50, max="1s", input_tokens=(50, 150), output_tokens=(10, 30))
    assert scope_problems(workload, [goal]) == []
