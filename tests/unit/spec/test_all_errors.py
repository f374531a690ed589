"""A spec file's errors come all at once, each at its line and key, with "did you mean"."""

import textwrap
import traceback
from pathlib import Path

import pytest

from pytest_latency.errors import SpecError
from pytest_latency.spec.model import objective
from pytest_latency.spec.slo_yaml import SpecFileError, load_objectives, load_slo_file

FIVE_MISTAKES = """\
server: {url: "http://127.0.0.1:8000", model: tiny, api: chat}
workload:
  seed: 7
  timeout: 30
  phases:
    - {name: steady, arrival: poisson, rate: 5, duration: 20}
    - {name: burst, arival: poisson, rate: 25, duration: 5s}
objectives:
  - {metric: ttft, p: 95, max: 700, phase: steady}
  - {metric: queue_wait, p: 95, max: 200ms, phase: stedy}
  - {metric: error_rate, max: 1%}
"""


def _errors(tmp_path: Path, text: str) -> SpecFileError:
    path = tmp_path / "case.slo.yaml"
    path.write_text(textwrap.dedent(text))
    with pytest.raises(SpecFileError) as caught:
        load_slo_file(path)
    return caught.value


def test_five_mistakes_are_reported_in_one_run_each_at_its_line_and_key(tmp_path):
    error = _errors(tmp_path, FIVE_MISTAKES)
    assert [(each.line, each.key) for each in error.errors] == [
        (4, "workload.timeout"),
        (6, "workload.phases[0].duration"),
        (7, "workload.phases[1].arival"),
        (9, "objectives[0].max"),
        (10, "objectives[1].phase"),
    ]
    lines = str(error).splitlines()
    assert len(lines) == 5
    assert all(line.startswith(f"{tmp_path / 'case.slo.yaml'}:") for line in lines)
    assert "did you mean 30s?" in lines[0] and "did you mean 20s?" in lines[1]
    assert lines[2].endswith("did you mean 'arrival'?")
    assert "did you mean 700ms?" in lines[3]
    assert lines[4].endswith(
        "unknown phase 'stedy'; the workload has: burst, steady; did you mean 'steady'?"
    )
    # The first error's fields, for code that reads one
    assert (error.line, error.key) == (4, "workload.timeout")


def test_two_mistakes_on_one_line_are_both_reported(tmp_path):
    # A bad metric used to stop the objective's build, hiding the percentile beside it.
    text = FIVE_MISTAKES.replace(
        "metric: ttft, p: 95, max: 700,", "metric: ttfb, p: 0.95, max: 700ms,"
    )
    error = _errors(tmp_path, text)
    on_line_nine = {each.key: each.problem for each in error.errors if each.line == 9}
    assert set(on_line_nine) == {"objectives[0].metric", "objectives[0].p"}
    assert on_line_nine["objectives[0].metric"].endswith("did you mean 'ttft'?")
    assert on_line_nine["objectives[0].p"].endswith("p is a percentile: use 95, not 0.95")


@pytest.mark.parametrize(
    ("old", "new", "key", "suggestion"),
    [
        ("phase: steady}", "phse: steady}", "objectives[0].phse", "did you mean 'phase'?"),
        ("  seed: 7", "  sede: 7", "workload.sede", "did you mean 'seed'?"),
        ("metric: ttft", "metric: tfft", "objectives[0].metric", "did you mean 'ttft'?"),
        ("phase: steady}", "phase: Steady}", "objectives[0].phase", "did you mean 'steady'?"),
        ("model: tiny", "modle: tiny", "server.modle", "did you mean 'model'?"),
        (
            "arrival: poisson, rate: 5",
            "arrival: poison, rate: 5",
            "workload.phases[0].arrival",
            "did you mean 'poisson'?",
        ),
    ],
)
def test_typos_in_keys_and_names_get_the_right_suggestion(tmp_path, old, new, key, suggestion):
    good = FIVE_MISTAKES.replace("timeout: 30\n", "timeout: 30s\n")
    good = good.replace("duration: 20}", "duration: 20s}").replace("arival", "arrival")
    good = good.replace("max: 700,", "max: 700ms,").replace("stedy", "steady")
    assert old in good
    error = _errors(tmp_path, good.replace(old, new, 1))
    assert [each.key for each in error.errors] == [key]
    assert error.problem.endswith(suggestion)


def test_a_typo_far_from_every_key_gets_no_suggestion(tmp_path):
    error = _errors(tmp_path, FIVE_MISTAKES.replace("  seed: 7", "  zzzzzz: 7"))
    (unknown,) = [each for each in error.errors if each.key == "workload.zzzzzz"]
    assert "did you mean" not in unknown.problem


def test_load_objectives_reports_every_bad_objective(tmp_path):
    path = tmp_path / "objectives.yaml"
    path.write_text(
        "objectives:\n"
        "  - {metric: ttft, p: 0.95, max: 700ms}\n"
        "  - {metric: e2e, p: 95, max: 2}\n"
        "  - {metric: itl, p: 95, max: 50ms}\n"
    )
    with pytest.raises(SpecFileError) as caught:
        load_objectives(path)
    assert [(each.line, each.key) for each in caught.value.errors] == [
        (2, "objectives[0].p"),
        (3, "objectives[1].max"),
    ]


def test_a_python_objective_error_shows_no_internal_frame():
    with pytest.raises(SpecError) as caught:
        objective("ttft", p=95, max=700)
    assert "did you mean 700ms?" in str(caught.value)
    frames = traceback.extract_tb(caught.value.__traceback__)
    internal = [
        f"{frame.filename}:{frame.name}"
        for frame in frames
        if "pytest_latency" in frame.filename and frame.name != "objective"
    ]
    assert internal == []
    assert caught.value.__cause__ is None and caught.value.__suppress_context__


def test_limits_are_echoed_as_written(tmp_path):
    assert objective("ttft", p=95, max="1s").label == "ttft p95 <= 1s"
    assert (
        objective("e2e", p=99, max=" 1500ms ", phase="burst").label == "e2e p99 <= 1500ms [burst]"
    )
    assert objective("error_rate", max="0.5%").label == "error_rate <= 0.5%"
    # Numbers in unit-named keywords have no text: the label says milliseconds.
    assert objective("ttft", p=95, max_s=1.0).label == "ttft p95 <= 1000ms"
    assert objective("ttft", p=95, max="1s") == objective("ttft", p=95, max_s=1.0)
    path = tmp_path / "echo.slo.yaml"
    path.write_text(
        "workload: {phases: [{name: steady, rate: 5, duration: 30s}]}\n"
        "objectives:\n  - {metric: ttft, p: 95, max: 1s}\n  - {metric: error_rate, max: 1%}\n"
    )
    labels = [goal.label for goal in load_slo_file(path).objectives]
    assert labels == ["ttft p95 <= 1s", "error_rate <= 1%"]
