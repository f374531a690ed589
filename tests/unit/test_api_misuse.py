"""API misuse gets a clear LatencyError saying what to write, never numpy's or a silent
wrong answer: percentiles, assert_slo() with nothing to assert, empty cohorts."""

import math
import textwrap

import pytest

from pytest_latency import LatencyError, LatencyResult, ServerInfo, SpecError, Verdict
from pytest_latency.records import RequestRecord, Status
from pytest_latency.spec.model import Objective, Phase, Workload, objective
from pytest_latency.spec.slo_yaml import SpecFileError, load_slo_file

WORKLOAD = Workload(phases=(Phase("steady", rate=10, duration_s=4), Phase("burst", 20, 1)))


def _records(count: int = 40, phase: str = "steady") -> list[RequestRecord]:
    """``count`` completed requests with TTFTs 10, 20, ... ms and 100 input tokens."""
    records = []
    for index in range(count):
        record = RequestRecord(id=index, phase=phase, intended_s=index * 0.1, input_tokens=100)
        record.status, record.sent_s = Status.OK, record.intended_s
        record.first_token_s = record.intended_s + (index + 1) * 0.01
        record.end_s = record.first_token_s + 0.5
        records.append(record)
    return records


def _result(records: list[RequestRecord]) -> LatencyResult:
    return LatencyResult(
        test="t::a", server=ServerInfo("sim", "http://127.0.0.1:1", "sim-tiny"),
        workload=WORKLOAD, records=records, started_at_unix=0.0, elapsed_s=5.0,
    )  # fmt: skip


@pytest.mark.parametrize(
    ("p", "message"),
    [
        (0.95, "use 95, not 0.95"),
        (0.5, "use 50, not 0.5"),
        (1, "p=1 reads as a fraction (100%)"),
        (100, "must be below 100: the maximum cannot be bounded"),
        (150, "between 1 and 100 (exclusive), got 150"),
        (0, "between 1 and 100 (exclusive), got 0"),
        (-5, "between 1 and 100 (exclusive), got -5"),
        (math.nan, "finite"),
        ("95", "must be a number"),
    ],
)
def test_a_bad_percentile_says_what_to_write(p, message):
    with pytest.raises(SpecError) as in_objective:
        objective("ttft", p=p, max="700ms")
    assert message in str(in_objective.value)
    with pytest.raises(SpecError) as in_dataclass:
        Objective("ttft", max_s=0.7, p=p)
    assert message in str(in_dataclass.value)
    with pytest.raises(SpecError) as in_result:
        _result(_records()).percentile("ttft", p)
    assert message in str(in_result.value)
    assert str(in_result.value).startswith("percentile p")


def test_percentile_answers_for_valid_input_and_names_a_bad_metric():
    result = _result(_records())  # TTFTs 10..400 ms
    assert result.percentile("ttft", 50) == pytest.approx(0.205)
    assert result.percentile("ttft", 99.9, "steady") == pytest.approx(0.4, abs=1e-3)
    assert math.isnan(result.percentile("ttft", 50, "burst"))  # no requests: NaN
    with pytest.raises(SpecError, match="percentile metric must be one of ttft"):
        result.percentile("ttfx", 95)
    with pytest.raises(SpecError, match="unknown phase 'stedy'"):
        result.percentile("ttft", 95, "stedy")


def test_a_yaml_percentile_error_names_file_line_and_key(tmp_path):
    path = tmp_path / "p.slo.yaml"
    path.write_text(
        textwrap.dedent("""\
        workload:
          phases: [{name: steady, rate: 5, duration: 20s}]
        objectives:
          - {metric: ttft, p: 95, max: 700ms}
          - {metric: ttft, p: 0.99, max: 700ms}
        """)
    )
    with pytest.raises(SpecFileError) as error:
        load_slo_file(path)
    assert str(error.value) == (
        f"{path}:5: objectives[1].p: objective ttft: p is a percentile: use 99, not 0.99"
    )


def test_assert_slo_with_nothing_to_assert_is_an_error():
    result = _result(_records())
    with pytest.raises(LatencyError, match=r"assert_slo\(\) was given no objectives") as error:
        result.assert_slo()
    assert isinstance(error.value, SpecError)
    assert result.objective_results == []  # nothing was decided


def test_assert_slo_given_a_list_says_to_unpack_it():
    goals = [objective("ttft", p=50, max="1s")]
    with pytest.raises(SpecError, match=r"separate arguments, e.g. assert_slo\(\*objectives\)"):
        _result(_records()).assert_slo(goals)  # type: ignore[arg-type]


def test_a_spec_file_with_an_empty_objective_list_is_an_error(tmp_path):
    path = tmp_path / "nothing.slo.yaml"
    path.write_text(
        "workload:\n  phases: [{name: steady, rate: 5, duration: 20s}]\nobjectives: []\n"
    )
    with pytest.raises(
        SpecFileError, match=r"nothing.slo.yaml:3: objectives: expected a non-empty"
    ):
        load_slo_file(path)


@pytest.mark.parametrize(
    ("goal", "cohort"),
    [
        (objective("ttft", p=50, max="1ms", phase="burst"), "[burst]"),  # a phase that sent none
        (objective("ttft", p=50, max="1ms", input_tokens=(5000, 8000)), "[input 5000-8000]"),
        (objective("error_rate", max="1%", output_tokens=(1, 10)), "[output 1-10]"),
    ],
)
def test_an_empty_cohort_says_so_and_is_not_a_failure(goal, cohort):
    # A 1 ms limit that every request in the run misses: a verdict on the wrong
    # requests would FAIL the server; there are none in the cohort, so nothing is decided.
    result = _result(_records())
    (decided,) = result.assert_slo(goal)  # the default policy (warn) passes it
    assert decided.verdict is Verdict.INCONCLUSIVE and decided.n == 0
    assert decided.reason.startswith(f"no requests in cohort {cohort} in this run")
    assert "40 requests offered" in decided.reason
    assert "server" not in decided.reason


def test_an_empty_cohort_in_the_baseline_says_so():
    goal = objective("ttft", p=50, max_regression="10%", phase="steady")
    result = _result(_records())
    result.baseline_runs = [_records(phase="burst")]  # the baseline never ran "steady"
    (decided,) = result.evaluate([goal])
    assert decided.verdict is Verdict.INCONCLUSIVE
    assert decided.reason.startswith("no requests in cohort [steady] in the baseline")


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"timeout": "30s"}, "unknown workload option 'timeout'; did you mean timeout_s?"),
        ({"input_token": 5}, "unknown workload option 'input_token'; did you mean input_tokens?"),
        ({"zzz": 1}, "unknown workload option 'zzz' (known: seed, "),
    ],
)
def test_an_unknown_run_keyword_is_a_spec_error_naming_the_one_meant(options, message):
    from pytest_latency.plugin.fixtures import _workload

    with pytest.raises(SpecError) as raised:
        _workload((Phase("steady", rate=1, duration_s=1),), None, options)
    assert str(raised.value) == f"latency.run: {message}" or message in str(raised.value)
