"""Strict units: a duration needs a unit and a fraction a % (or an explicit key), in YAML
and in Python, and a bare number is an error that shows the fix."""

import textwrap

import pytest

from pytest_latency.spec.model import SpecError, objective
from pytest_latency.spec.slo_yaml import SpecFileError, load_slo_file

SPEC = """\
workload:
  timeout: 30s
  cooldown: 5s
  repeat: 2
  phases:
    - {name: steady, rate: 5, duration: 20s}
objectives:
  - {metric: ttft, p: 95, max: 700ms}
  - {metric: error_rate, max: 1%}
  - {metric: e2e, p: 50, max_regression: 10%, min_change: 2ms}
"""


def _load(tmp_path, text):
    path = tmp_path / "units.slo.yaml"
    path.write_text(textwrap.dedent(text))
    return load_slo_file(path)


def test_values_with_units_load(tmp_path):
    spec = _load(tmp_path, SPEC)
    ttft, errors, e2e = spec.objectives
    assert ttft.max_s == pytest.approx(0.7) and errors.max_s == pytest.approx(0.01)
    assert e2e.max_regression == pytest.approx(0.1) and e2e.min_change_s == pytest.approx(0.002)
    assert spec.workload.timeout_s == 30 and spec.workload.cooldown_s == 5
    assert spec.workload.phases[0].duration_s == 20


@pytest.mark.parametrize(
    ("old", "new", "line", "key", "problem"),
    [
        ("max: 700ms", "max: 700", 8, "objectives[0].max", "700 needs a unit: did you mean 700ms?"),
        ("max: 700ms", "max: 0.7", 8, "objectives[0].max", "0.7 needs a unit: did you mean 0.7s?"),
        ("max: 700ms", "max: 3", 8, "objectives[0].max", "did you mean 3ms or 3s?"),
        ("max: 700ms", "max: '700'", 8, "objectives[0].max", "700 needs a unit"),
        (
            "max: 1%",
            "max: 1",
            9,
            "objectives[1].max",
            "1 needs a unit: write 1%, or 100% (max_fraction: 1) if you meant a fraction",
        ),
        ("max: 1%", "max: 5", 9, "objectives[1].max", "write 5% (or max_fraction: 0.05)"),
        (
            "max_regression: 10%",
            "max_regression: 0.1",
            10,
            "objectives[2].max_regression",
            "0.1 needs a unit: write 0.1%, or 10% if you meant a fraction",
        ),
        ("min_change: 2ms", "min_change: 2", 10, "objectives[2].min_change", "2ms or 2s?"),
        ("duration: 20s", "duration: 20", 6, "workload.phases[0].duration", "did you mean 20s?"),
        (
            "timeout: 30s",
            "timeout: 30",
            2,
            "workload.timeout",
            "30 needs a unit: did you mean 30s?",
        ),
        ("cooldown: 5s", "cooldown: 5", 3, "workload.cooldown", "5 needs a unit: did you mean 5s?"),
        ("max: 1%", "max_fraction: 1.5", 9, "objectives[1].max_fraction", "<= 1"),
        ("max: 700ms", "max_fraction: 0.1", 8, "objectives[0].max_fraction", "is for error_rate"),
        ("max: 1%", "max: 1%, max_fraction: 0.01", 9, "objectives[1].max_fraction", "exactly one"),
    ],
)
def test_a_bare_number_names_file_line_key_and_the_fix(tmp_path, old, new, line, key, problem):
    assert old in SPEC
    with pytest.raises(SpecFileError) as caught:
        _load(tmp_path, SPEC.replace(old, new, 1))
    error = caught.value
    assert (error.line, error.key) == (line, key), str(error)
    assert problem in error.problem
    assert str(error).startswith(f"{error.path}:{line}: {key}: ")


def test_an_explicit_fraction_key_and_zero_need_no_unit(tmp_path):
    text = SPEC.replace("max: 1%", "max_fraction: 0.01")
    assert _load(tmp_path, text).objectives[1].max_s == pytest.approx(0.01)
    zero = SPEC.replace("max: 1%", "max: 0").replace("min_change: 2ms", "min_change: 0")
    spec = _load(tmp_path, zero)
    assert spec.objectives[1].max_s == 0.0 and spec.objectives[2].min_change_s == 0.0


def test_python_takes_units_in_the_value_or_in_the_keyword():
    assert objective("ttft", p=95, max="700ms").max_s == pytest.approx(0.7)
    assert objective("ttft", p=95, max_s=0.7).max_s == pytest.approx(0.7)
    assert objective("ttft", p=95, max_ms=700).max_s == pytest.approx(0.7)
    assert objective("error_rate", max="1%").max_s == pytest.approx(0.01)
    assert objective("error_rate", max_fraction=0.01).max_s == pytest.approx(0.01)
    relative = objective("e2e", p=50, max_regression="10%", min_change_s=0.002)
    assert relative.max_regression == pytest.approx(0.1) and relative.min_change_s == 0.002
    assert objective("e2e", p=50, max_regression="10%", min_change="2ms").min_change_s == 0.002


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"p": 95, "max": 0.7}, "objective ttft max: 0.7 needs a unit: did you mean 0.7s?"),
        ({"p": 95, "max": 700}, "objective ttft max: 700 needs a unit: did you mean 700ms?"),
        ({"p": 95, "max": "700"}, "did you mean 700ms?"),
        ({"p": 95, "max_regression": 0.1}, "0.1 needs a unit: write 0.1%, or 10% if you meant"),
        ({"p": 95, "max_regression": "10%", "min_change": 2}, "2 needs a unit"),
        ({"p": 95, "max": "1s", "max_s": 1}, "give exactly one of max, max_s, max_ms"),
        ({"p": 95}, "give exactly one of"),
        ({"p": 95, "max_fraction": 0.1}, "max_fraction does not apply"),
        ({"p": 95, "max_ms": "700"}, "max_ms must be a number"),
        ({"p": 95, "max_regression": "10%", "min_change": "2ms", "min_change_s": 1}, "not both"),
    ],
)
def test_python_refuses_a_bare_number_with_the_fix(kwargs, message):
    with pytest.raises(SpecError) as error:
        objective("ttft", **kwargs)
    assert message in str(error.value)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max": 1}, "error_rate max: 1 needs a unit: write 1%, or 100% (max_fraction=1)"),
        ({"max": 0.05}, "write 0.05%, or 5% (max_fraction=0.05) if you meant a fraction"),
        ({"max": 5}, "error_rate max: 5 needs a unit: write 5% (or max_fraction=0.05)"),
        ({"max_s": 0.1}, "max_s does not apply"),
        ({"max_fraction": 2}, "<= 1"),
    ],
)
def test_python_error_rate_needs_a_percent_or_max_fraction(kwargs, message):
    with pytest.raises(SpecError) as error:
        objective("error_rate", **kwargs)
    assert message in str(error.value)


@pytest.mark.slow
def test_command_line_durations_need_a_unit_too(pytester):
    result = pytester.runpytest("--latency-max-lag", "0.05")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--latency-max-lag '0.05': 0.05 needs a unit: did you mean 0.05s?" in (
        result.stderr.str()
    )
    assert pytester.runpytest("--latency-metrics-interval", "0").ret == (
        pytest.ExitCode.NO_TESTS_COLLECTED
    )


def test_a_server_startup_timeout_needs_a_unit():
    from pytest_latency.servers import ServerStartError
    from pytest_latency.servers.container import startup_timeout
    from pytest_latency.spec.model import ServerSpec

    spec = ServerSpec(kind="llamacpp", options={"startup_timeout": "10m"})
    assert startup_timeout(spec, 120.0) == 600.0
    bare = ServerSpec(kind="llamacpp", options={"startup_timeout": 600})
    with pytest.raises(ServerStartError, match=r"startup_timeout: 600 needs a unit: .* 600s\?"):
        startup_timeout(bare, 120.0)
