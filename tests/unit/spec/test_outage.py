"""``outage:`` on an error_rate objective (YAML) and ``outage_s=`` / ``outage=`` (Python):
the longest unseen outage a verdict allows for, a duration with its unit."""

import textwrap

import pytest

from pytest_latency.spec.model import Objective, SpecError, objective
from pytest_latency.spec.slo_yaml import SpecFileError, load_slo_file

SPEC = """\
workload:
  seed: 7
  input_tokens: 100
  output_tokens: 16
  phases:
    - name: steady
      rate: 5
      duration: 20s
objectives:
  - metric: error_rate
    max: 1%
    outage: 2s
"""


def _load(tmp_path, text):
    path = tmp_path / "case.slo.yaml"
    path.write_text(textwrap.dedent(text))
    return load_slo_file(path)


def test_outage_in_yaml_is_seconds_on_the_error_rate_objective(tmp_path):
    (only,) = _load(tmp_path, SPEC).objectives
    assert only.metric == "error_rate" and only.outage_s == 2.0
    (fast,) = _load(tmp_path, SPEC.replace("outage: 2s", "outage: 250ms")).objectives
    assert fast.outage_s == 0.25


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        ("2", "2 needs a unit: did you mean 2s?"),
        ("0.5", "0.5 needs a unit: did you mean 0.5s?"),
        ("soon", "expected a duration such as 700ms or 30s"),
        ("0s", "> 0"),
        ("-2s", "expected a duration"),
        ("25h", "<= 86400"),
        (".inf", "finite"),
    ],
)
def test_a_bad_outage_names_file_line_and_key(tmp_path, value, problem):
    with pytest.raises(SpecFileError) as caught:
        _load(tmp_path, SPEC.replace("outage: 2s", f"outage: {value}"))
    error = caught.value
    assert (error.line, error.key) == (12, "objectives[0].outage"), str(error)
    assert problem in error.problem
    assert str(error).startswith(f"{error.path}:12: objectives[0].outage: ")


def test_outage_on_a_latency_objective_is_refused_at_its_line(tmp_path):
    text = SPEC.replace("metric: error_rate\n    max: 1%", "metric: ttft\n    p: 95\n    max: 1s")
    with pytest.raises(SpecFileError) as caught:
        _load(tmp_path, text)
    assert caught.value.key == "objectives[0].outage" and caught.value.line == 13
    assert "outage is for error_rate" in caught.value.problem


def test_outage_s_in_python_is_seconds_and_outage_takes_a_unit():
    assert objective("error_rate", max="1%", outage_s=2.0).outage_s == 2.0
    assert objective("error_rate", max="1%", outage="1.5s").outage_s == 1.5
    assert objective("error_rate", max="1%").outage_s is None
    assert Objective("error_rate", max_s=0.01, outage_s=0.5).outage_s == 0.5


@pytest.mark.parametrize(
    ("keywords", "problem"),
    [
        ({"outage": "2"}, "2 needs a unit: did you mean 2s?"),
        ({"outage": 2}, "2 needs a unit: did you mean 2s?"),
        ({"outage_s": 0}, "> 0"),
        ({"outage_s": -1.0}, "> 0"),
        ({"outage_s": float("inf")}, "finite"),
        ({"outage_s": "2s"}, "must be a number"),
        ({"outage": "2s", "outage_s": 2.0}, "give outage or outage_s, not both"),
    ],
)
def test_a_bad_outage_in_python_is_a_spec_error_with_the_fix(keywords, problem):
    with pytest.raises(SpecError, match="outage") as caught:
        objective("error_rate", max="1%", **keywords)
    assert problem in str(caught.value)


def test_outage_on_a_latency_objective_is_refused_in_python():
    with pytest.raises(SpecError, match="outage is for error_rate"):
        objective("ttft", p=95, max="1s", outage_s=2.0)
    with pytest.raises(SpecError, match="outage is for error_rate"):
        Objective("ttft", p=95, max_s=1.0, outage_s=2.0)
