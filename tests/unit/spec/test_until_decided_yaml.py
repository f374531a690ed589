"""``until_decided: {max: DURATION}`` in a spec file: loads, and every mistake names file,
line and key with the fix."""

import textwrap

import pytest

from pytest_latency.spec.model import Phase, SpecError, Workload
from pytest_latency.spec.slo_yaml import SpecFileError, load_slo_file

SPEC = """\
workload:
  seed: 7
  phases:
    - {{name: steady, arrival: constant, rate: 5, duration: 30s}}
    - {{name: burst, arrival: poisson, rate: 60, duration: 5s}}
  until_decided: {value}
objectives:
  - {{metric: ttft, p: 95, max: 700ms, phase: burst}}
"""


def _load(tmp_path, value):
    path = tmp_path / "burst.slo.yaml"
    path.write_text(textwrap.dedent(SPEC.format(value=value)))
    return load_slo_file(path)


def test_a_budget_loads_in_seconds_and_goes_into_the_workloads_json(tmp_path):
    workload = _load(tmp_path, "{max: 3m}").workload
    assert workload.until_decided_s == 180.0
    assert workload.to_json()["until_decided"] == {"max_s": 180.0}
    assert "until_decided" not in Workload(phases=workload.phases).to_json()


@pytest.mark.parametrize(
    ("value", "key", "problem"),
    [
        ("{max: soon}", "workload.until_decided.max", "expected a duration such as 700ms"),
        ("{max: 180}", "workload.until_decided.max", "180"),
        ("{maximum: 3m}", "workload.until_decided.maximum", "unknown key; allowed: max"),
        ("{}", "workload.until_decided.max", "missing: give the budget, e.g. {max: 3m}"),
        ("3m", "workload.until_decided", "expected a mapping such as {max: 3m}, got '3m'"),
        ("{max: 10s}", "workload.until_decided", "shorter than one pass of the phases (35s)"),
    ],
)
def test_a_bad_budget_names_file_line_and_key(tmp_path, value, key, problem):
    with pytest.raises(SpecFileError) as caught:
        _load(tmp_path, value)
    error = caught.value
    assert error.path.name == "burst.slo.yaml" and error.line == 6
    assert error.key == key and problem in error.problem
    assert str(error).startswith(f"{error.path}:6: {key}: ")


def test_python_takes_until_decided_s_and_checks_it():
    phases = (Phase("steady", rate=5, duration_s=30),)
    assert Workload(phases=phases, until_decided_s=180).until_decided_s == 180
    with pytest.raises(SpecError, match="until_decided max 5s is shorter than one pass"):
        Workload(phases=phases, until_decided_s=5)
    with pytest.raises(SpecError, match=r"until_decided max .* must be a finite number"):
        Workload(phases=phases, until_decided_s=float("inf"))
