"""``*.slo.yaml`` parsing: the documented shape loads; every error names file, line and key."""

import textwrap

import pytest

from pytest_latency.spec.slo_yaml import SpecFileError, load_objectives, load_slo_file

GOOD = """\
server: {url: "http://127.0.0.1:8000", model: tiny, api: chat}
workload:
  seed: 7
  input_tokens: [200, 400]
  output_tokens: 200
  timeout: 30s
  phases:
    - {name: steady, arrival: poisson, rate: 5, duration: 20s}
    - {name: burst, arrival: poisson, rate: 25, duration: 5s}
objectives:
  - {metric: ttft, p: 95, max: 700ms, phase: steady}
  - {metric: queue_wait, p: 95, max: 200ms}
  - {metric: error_rate, max: 1%}
"""


def _write(tmp_path, text):
    path = tmp_path / "case.slo.yaml"
    path.write_text(textwrap.dedent(text))
    return path


def test_design_example_loads(tmp_path):
    spec = load_slo_file(_write(tmp_path, GOOD))
    assert spec.server is not None and spec.server.url == "http://127.0.0.1:8000"
    assert spec.server.kind == "url" and spec.server.model == "tiny"
    assert spec.workload.seed == 7 and spec.workload.input_tokens == (200, 400)
    assert spec.workload.timeout_s == 30.0
    assert [(p.name, p.rate, p.duration_s) for p in spec.workload.phases] == [
        ("steady", 5.0, 20.0),
        ("burst", 25.0, 5.0),
    ]
    ttft, queue, errors = spec.objectives
    assert (ttft.metric, ttft.p, ttft.max_s, ttft.phase) == ("ttft", 95.0, 0.7, "steady")
    assert queue.phase is None and queue.max_s == pytest.approx(0.2)
    assert errors.metric == "error_rate" and errors.max_s == pytest.approx(0.01)


def _error(tmp_path, text) -> SpecFileError:
    with pytest.raises(SpecFileError) as caught:
        load_slo_file(_write(tmp_path, text))
    return caught.value


@pytest.mark.parametrize(
    ("old", "new", "line", "key", "problem"),
    [
        ("rate: 25,", "rate: -25,", 9, "workload.phases[1].rate", "must be > 0"),
        ("duration: 20s", "duration: soon", 8, "workload.phases[0].duration", "duration"),
        ("max: 700ms", "max: fast", 11, "objectives[0].max", "duration"),
        ("phase: steady}", "phase: stedy}", 11, "objectives[0].phase", "unknown phase 'stedy'"),
        (
            "metric: queue_wait",
            "metric: queue_age",
            12,
            "objectives[1].metric",
            "metric must be one of",
        ),
        ("max: 1%", "max: 150%", 13, "objectives[2].max", "between 0% and 100%"),
        ("  seed: 7", "  sed: 7", 3, "workload.sed", "unknown key"),
        ("api: chat", "api: grpc", 1, "server.api", "api must be one of"),
        (
            "arrival: poisson, rate: 5",
            "arrival: uniform, rate: 5",
            8,
            "workload.phases[0].arrival",
            "arrival must be one of",
        ),
        (
            "  output_tokens: 200",
            "  output_tokens: lots",
            5,
            "workload.output_tokens",
            "whole number",
        ),
    ],
)
def test_errors_name_file_line_and_key(tmp_path, old, new, line, key, problem):
    assert old in GOOD
    error = _error(tmp_path, GOOD.replace(old, new))
    assert (error.line, error.key) == (line, key)
    assert problem in error.problem
    assert str(error).startswith(f"{error.path}:{line}: {key}: ")


def test_missing_workload_and_bad_yaml(tmp_path):
    assert _error(tmp_path, "objectives: []\n").key == "workload"
    broken = _error(tmp_path, "workload:\n  phases: [\n")
    assert broken.key == "(yaml)" and broken.line >= 2


def test_duplicate_keys_are_refused(tmp_path):
    error = _error(tmp_path, GOOD.replace("  seed: 7\n", "  seed: 7\n  seed: 8\n"))
    assert error.line == 4 and "duplicate key 'seed'" in error.problem


def test_no_phases_is_an_error(tmp_path):
    error = _error(tmp_path, "workload: {seed: 1, phases: []}\n")
    assert error.key == "workload.phases"


def test_error_rate_with_percentile_is_refused(tmp_path):
    error = _error(
        tmp_path,
        GOOD.replace("{metric: error_rate, max: 1%}", "{metric: error_rate, p: 99, max: 1%}"),
    )
    assert error.line == 13 and "no percentile" in error.problem


def test_load_objectives_reads_a_bare_list_without_checking_phases(tmp_path):
    path = _write(tmp_path, "objectives:\n  - {metric: ttft, p: 95, max: 700ms, phase: any}\n")
    (objective,) = load_objectives(path)
    assert objective.metric == "ttft" and objective.max_s == 0.7 and objective.phase == "any"


def test_load_objectives_reads_a_whole_spec_and_checks_its_phases(tmp_path):
    assert len(load_objectives(_write(tmp_path, GOOD))) == 3
    unknown = GOOD.replace("phase: steady}", "phase: warm}")
    with pytest.raises(SpecFileError, match=r"case.slo.yaml:11: objectives\[0\].phase: unknown"):
        load_objectives(_write(tmp_path, unknown))


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ("description: no objectives\n", ":1: objectives: expected a non-empty list"),
        ("objectives: []\n", ":1: objectives: expected a non-empty list"),
        ("objectives:\n  - {metric: ttft, p: 95}\n", ":2: objectives[0].max: give exactly"),
        ("objectives: [\n", ":2: (yaml)"),
    ],
)
def test_load_objectives_errors_name_file_line_and_key(tmp_path, text, where):
    with pytest.raises(SpecFileError) as error:
        load_objectives(_write(tmp_path, text))
    assert str(error.value).startswith(str(tmp_path / "case.slo.yaml")) and where in str(
        error.value
    )


def test_a_missing_spec_file_is_a_spec_error(tmp_path):
    with pytest.raises(SpecFileError, match=r"missing.yaml:1: \(file\): no such file"):
        load_objectives(tmp_path / "missing.yaml")
