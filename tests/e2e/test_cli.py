"""``python -m pytest_latency judge``: real subprocess runs on files written here."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from pytest_latency.analysis.result import LatencyResult
from pytest_latency.analysis.verdict import ObjectiveResult, Verdict
from pytest_latency.records import RequestRecord, Status, write_runs
from pytest_latency.report import json_report
from pytest_latency.servers.base import ServerInfo
from pytest_latency.spec.model import Phase, Workload
from pytest_latency.spec.model import objective as make_objective
from tests.helpers.json_schema import assert_valid_run_file

# every test runs the command in a subprocess (1-15 s each on a busy machine)
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
TEST = "tests/test_serving.py::test_chat"
WORKLOAD_SPEC = Workload(
    phases=(Phase("steady", rate=20, duration_s=20),),
    seed=7,
    input_tokens=(20, 40),
    output_tokens=8,
    timeout_s=10,
)
WORKLOAD = WORKLOAD_SPEC.to_json()
SERVER = ServerInfo("url", "http://127.0.0.1:8000", "tiny")
TTFT_P95_UNDER_1S = "objectives:\n  - {metric: ttft, p: 95, max: 1s, phase: steady}\n"


def make_records(median_ttft_s: float, count: int = 400, seed: int = 1) -> list[RequestRecord]:
    """``count`` ok requests 50 ms apart with lognormal TTFT (sigma 0.3) around the median."""
    rng = np.random.default_rng(seed)
    ttfts = rng.lognormal(np.log(median_ttft_s), 0.3, count)
    records = []
    for index, ttft in enumerate(ttfts):
        gaps = rng.lognormal(np.log(0.02), 0.2, 7)
        intended = index * 0.05
        records.append(
            RequestRecord(
                id=index,
                phase="steady",
                intended_s=intended,
                input_tokens=30,
                sent_s=intended + 0.0005,
                first_token_s=intended + float(ttft),
                end_s=intended + float(ttft) + float(gaps.sum()),
                itl_s=gaps,
                status=Status.OK,
                http_status=200,
                output_tokens=8,
                output_tokens_source="usage",
            )
        )
    return records


def run_dict(records: list[RequestRecord], **changes: Any) -> dict[str, Any]:
    """A ``--latency-json`` run as the plugin writes it, whose stored objective claims a
    pass (judge never trusts it)."""
    test = changes.pop("test", TEST)
    result = LatencyResult(
        test=test, server=SERVER, workload=WORKLOAD_SPEC, records=records,
        started_at_unix=0.0, elapsed_s=20.0, baseline_key=test,
    )  # fmt: skip
    claim = ObjectiveResult(
        make_objective("ttft", p=95, max="1s"), Verdict.PASS, 0.1, 0.0, 0.2, 1, 0.99, ""
    )
    result.objective_results.append(claim)
    run = json_report.run_dict(result)
    run.update(changes)
    return run


def write_file(path: Path, *runs: dict[str, Any], valid: bool = True) -> Path:
    """The runs as the plugin writes them (checked against the schema), or, with
    ``valid=False``, a hand-made file for the judge to refuse."""
    if valid:
        write_runs(path, runs)
        assert_valid_run_file(path)
    else:
        path.write_text(json.dumps({"schema": "pytest-latency/1", "runs": list(runs)}))
    return path


def judge(*args: str | Path, cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pytest_latency", "judge", *map(str, args)],
        capture_output=True,
        text=True,
        check=False,
        cwd=cwd,
        timeout=120,
    )


@pytest.fixture
def objectives(tmp_path: Path) -> Path:
    path = tmp_path / "objectives.yaml"
    # 400 requests without a failure bound the error rate under 1.4% (the exact binomial
    # bound: failures count as independent unless the run shows them clustered).
    path.write_text(TTFT_P95_UNDER_1S + "  - {metric: error_rate, max: 5%}\n")
    return path


def test_a_fast_run_passes_and_out_json_has_every_objective_field(
    tmp_path: Path, objectives: Path
) -> None:
    runs = write_file(tmp_path / "run.json", run_dict(make_records(0.1)))
    out = tmp_path / "verdicts" / "out.json"
    result = judge(runs, "--objectives", objectives, "--json", out)
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[:2] == [TEST, "  PASS         ttft p95 <= 1s [steady]"]
    assert all(len(line) <= 100 for line in result.stdout.splitlines())
    document = json.loads(out.read_text())
    assert document["schema"] == "pytest-latency/1"
    (run,) = assert_valid_run_file(out)["runs"]
    assert set(run) == {
        "test", "baseline_key", "outcome", "inconclusive_policy", "workload", "objectives"
    }  # fmt: skip
    assert run["test"] == TEST and run["outcome"] == "passed" and run["workload"] == WORKLOAD
    ttft, errors = run["objectives"]
    assert ttft["metric"] == "ttft" and ttft["p"] == 95 and ttft["phase"] == "steady"
    assert ttft["verdict"] == "pass" and ttft["max_s"] == 1.0 and ttft["n"] == 400
    assert 0.1 < ttft["estimate_s"] < ttft["upper_s"] <= 1.0 and ttft["lower_s"] > 0.1
    assert ttft["n_effective"] == pytest.approx(400, rel=0.05)
    # 0.99 shared by two objectives and the runaway check their waiting TTFT brings
    assert ttft["confidence"] == pytest.approx(1 - 0.01 / 3)
    for field in ("max_regression", "unit", "reason", "warnings", "input_tokens"):
        assert field in ttft
    assert errors["metric"] == "error_rate" and errors["verdict"] == "pass"
    assert errors["estimate_s"] == 0.0 and errors["n"] == 400


def test_a_slow_run_fails_with_exit_1_whatever_its_stored_verdict_says(
    tmp_path: Path, objectives: Path
) -> None:
    runs = write_file(tmp_path / "run.json", run_dict(make_records(2.0)))
    out = tmp_path / "out.json"
    result = judge(runs, "--objectives", objectives, "--json", out)
    assert result.returncode == 1, result.stderr
    (ttft, errors) = json.loads(out.read_text())["runs"][0]["objectives"]
    assert ttft["verdict"] == "fail" and ttft["lower_s"] > 1.0
    assert errors["verdict"] == "pass"
    assert "  FAIL         ttft p95 <= 1s [steady]" in result.stdout
    assert "lower bound over the limit" in result.stdout
    assert "judged 1 run(s): 1 pass, 1 fail, 0 inconclusive, 0 invalid" in result.stdout


def test_inconclusive_does_not_fail_the_command(tmp_path: Path) -> None:
    objectives = tmp_path / "objectives.yaml"
    objectives.write_text("objectives:\n  - {metric: ttft, p: 99, max: 1s}\n")
    runs = write_file(tmp_path / "run.json", run_dict(make_records(0.1, count=40)))
    result = judge(runs, "--objectives", objectives)
    assert result.returncode == 0, result.stderr
    assert "  INCONCLUSIVE ttft p99" in result.stdout and "too few samples" in result.stdout


def test_an_invalid_run_is_judged_invalid_with_the_generator_reason_and_exits_1(
    tmp_path: Path, objectives: Path
) -> None:
    behind = {
        "valid": False,
        "reasons": ["schedule lag p99 80ms exceeds 50ms"],
        "schedule_lag_p99_s": 0.08,
        "shortfall": {"steady": 0.0},
    }
    runs = write_file(
        tmp_path / "run.json",
        run_dict(make_records(2.0), generator=behind),
        run_dict(make_records(2.0), test=TEST + "_cut", interrupted=True),
    )
    out = tmp_path / "out.json"
    result = judge(runs, "--objectives", objectives, "--json", out)
    assert result.returncode == 1, result.stderr  # nothing invalid reads as green
    generator_behind, cut_short = json.loads(out.read_text())["runs"]
    for objective in generator_behind["objectives"]:
        assert objective["verdict"] == "invalid"
        assert objective["reason"] == "schedule lag p99 80ms exceeds 50ms"
    assert [objective["verdict"] for objective in cut_short["objectives"]] == ["invalid"] * 2
    assert all(o["reason"] == "interrupted" for o in cut_short["objectives"])


def server_gone_at(records: list[RequestRecord], index: int) -> list[RequestRecord]:
    """``records`` with every request from ``index`` on refused: the server went away."""
    for record in records[index:]:
        record.status, record.error = Status.CONNECTION_ERROR, "ConnectError: [Errno 111]"
        record.first_token_s = record.end_s = None
        record.itl_s, record.http_status, record.output_tokens = [], None, None
    return records


def test_a_run_whose_server_went_away_is_invalid_with_the_infrastructure_headline(
    tmp_path: Path, objectives: Path
) -> None:
    runs = write_file(tmp_path / "run.json", run_dict(server_gone_at(make_records(0.1), 300)))
    out = tmp_path / "out.json"
    result = judge(runs, "--objectives", objectives, "--json", out)
    assert result.returncode == 1, result.stderr
    (run,) = json.loads(out.read_text())["runs"]
    assert run["outcome"] == "error"
    headline = (
        "infrastructure: 100 of 400 requests failed with connection refused, from request"
        " #300 (15.00s) to the end of the run — the server went away?"
    )
    assert [(o["verdict"], o["reason"]) for o in run["objectives"]] == [("invalid", headline)] * 2


def test_fail_on_inconclusive_makes_an_inconclusive_verdict_exit_1(tmp_path: Path) -> None:
    objectives = tmp_path / "objectives.yaml"
    objectives.write_text("objectives:\n  - {metric: ttft, p: 99, max: 1s}\n")
    runs = write_file(tmp_path / "run.json", run_dict(make_records(0.1, count=40)))
    out = tmp_path / "out.json"
    result = judge(runs, "--objectives", objectives, "--fail-on", "inconclusive", "--json", out)
    assert result.returncode == 1, result.stderr
    assert "  INCONCLUSIVE ttft p99" in result.stdout
    assert json.loads(out.read_text())["runs"][0]["inconclusive_policy"] == "fail"
    passing = tmp_path / "passing.yaml"
    passing.write_text(TTFT_P95_UNDER_1S)
    decided = write_file(tmp_path / "decided.json", run_dict(make_records(0.1)))
    assert judge(decided, "--objectives", passing, "--fail-on", "inconclusive").returncode == 0
    wrong = judge(runs, "--objectives", objectives, "--fail-on", "pass")
    assert wrong.returncode == 2 and "invalid choice: 'pass'" in wrong.stderr


RELATIVE = "objectives:\n  - {metric: ttft, p: 50, max_regression: 25%}\n"


@pytest.mark.parametrize(
    ("candidate_median_s", "code", "verdict"), [(0.1, 0, "pass"), (0.3, 1, "fail")]
)
def test_a_relative_objective_uses_the_matched_baseline_run(
    tmp_path: Path, candidate_median_s: float, code: int, verdict: str
) -> None:
    objectives = tmp_path / "relative.yaml"
    objectives.write_text(RELATIVE)
    baseline = write_file(tmp_path / "base.json", run_dict(make_records(0.1, seed=2)))
    runs = write_file(tmp_path / "run.json", run_dict(make_records(candidate_median_s)))
    out = tmp_path / "out.json"
    result = judge(runs, "--objectives", objectives, "--baseline", baseline, "--json", out)
    assert result.returncode == code, result.stderr
    (objective,) = json.loads(out.read_text())["runs"][0]["objectives"]
    assert objective["verdict"] == verdict and objective["unit"] == "ratio"
    assert objective["estimate_s"] == pytest.approx(candidate_median_s / 0.1, rel=0.15)


def test_a_baseline_of_another_workload_is_a_usage_error_naming_the_field(tmp_path: Path) -> None:
    objectives = tmp_path / "relative.yaml"
    objectives.write_text(RELATIVE)
    other = {**WORKLOAD, "seed": 8}
    baseline = write_file(tmp_path / "base.json", run_dict(make_records(0.1), workload=other))
    runs = write_file(tmp_path / "run.json", run_dict(make_records(0.1)))
    result = judge(runs, "--objectives", objectives, "--baseline", baseline)
    assert result.returncode == 2
    assert "workload.seed: baseline 8, this run 7" in result.stderr
    assert "Traceback" not in result.stderr
    allowed = judge(
        runs, "--objectives", objectives, "--baseline", baseline, "--allow-baseline-mismatch"
    )
    assert allowed.returncode == 0, allowed.stderr


def test_a_baseline_without_the_test_lists_the_keys_it_holds(tmp_path: Path) -> None:
    objectives = tmp_path / "relative.yaml"
    objectives.write_text(RELATIVE)
    baseline = write_file(
        tmp_path / "base.json",
        run_dict(make_records(0.1), test="tests/a.py::test_one"),
        run_dict(make_records(0.1), test="tests/a.py::test_two"),
    )
    runs = write_file(tmp_path / "run.json", run_dict(make_records(0.1)))
    result = judge(runs, "--objectives", objectives, "--baseline", baseline)
    assert result.returncode == 2
    assert f"holds no run for {TEST!r}" in result.stderr
    assert "tests/a.py::test_one, tests/a.py::test_two" in result.stderr
    without = judge(runs, "--objectives", objectives)
    assert without.returncode == 2 and "need --baseline" in without.stderr


def test_an_objective_on_a_phase_the_run_lacks_is_a_usage_error(tmp_path: Path) -> None:
    objectives = tmp_path / "objectives.yaml"
    objectives.write_text("objectives:\n  - {metric: ttft, p: 95, max: 1s, phase: burst}\n")
    runs = write_file(tmp_path / "run.json", run_dict(make_records(0.1)))
    result = judge(runs, "--objectives", objectives)
    assert result.returncode == 2
    assert "unknown phase 'burst'" in result.stderr and "has: steady" in result.stderr
    assert result.stdout == ""


def test_bad_yaml_and_bad_run_files_are_usage_errors_naming_the_place(tmp_path: Path) -> None:
    runs = write_file(tmp_path / "run.json", run_dict(make_records(0.1)))
    broken = tmp_path / "broken.yaml"
    broken.write_text("objectives:\n  - {metric: ttft, p: 95, max: 1s}\n  - {metric: [\n")
    unknown_key = tmp_path / "unknown.yaml"
    unknown_key.write_text(
        "objectives:\n  - {metric: ttft, p: 95, max: 1s}\n  - {metric: ttft, q: 1}\n"
    )
    not_json = tmp_path / "not.json"
    not_json.write_text("{")
    cases = [
        (judge(runs, "--objectives", broken), f"{broken}:4: (yaml)"),
        (judge(runs, "--objectives", unknown_key), f"{unknown_key}:3: objectives[1].q"),
        (judge(not_json, "--objectives", unknown_key), ""),  # the YAML is read first
        (judge(not_json, "--objectives", tmp_path / "missing.yaml"), "missing.yaml:1"),
    ]
    for result, message in cases:
        assert result.returncode == 2, result.stdout
        assert message in result.stderr and "Traceback" not in result.stderr
    objectives = tmp_path / "ok.yaml"
    objectives.write_text(TTFT_P95_UNDER_1S)
    bad_run = judge(not_json, "--objectives", objectives)
    assert bad_run.returncode == 2 and "not a readable JSON file" in bad_run.stderr


def test_a_malformed_request_is_a_usage_error_naming_it(tmp_path: Path) -> None:
    run = run_dict(make_records(0.1))
    run["requests"][3]["itl_s"] = [0.01, True]  # validation survives the fast gap check
    objectives = tmp_path / "objectives.yaml"
    objectives.write_text(TTFT_P95_UNDER_1S)
    run_file = write_file(tmp_path / "run.json", run, valid=False)
    result = judge(run_file, "--objectives", objectives)
    assert result.returncode == 2
    assert "requests[3]: itl_s must be a list of numbers" in result.stderr


def test_judging_never_imports_pytest(tmp_path: Path) -> None:
    objectives = tmp_path / "objectives.yaml"
    objectives.write_text(TTFT_P95_UNDER_1S)
    runs = write_file(tmp_path / "run.json", run_dict(make_records(0.1, count=50)))
    script = (
        "import sys; from pytest_latency.cli.main import main;"
        f" code = main(['judge', {str(runs)!r}, '--objectives', {str(objectives)!r}]);"
        " print('pytest loaded:', 'pytest' in sys.modules or '_pytest' in sys.modules)"
    )
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=False, timeout=120
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.splitlines()[-1] == "pytest loaded: False"


def test_the_console_script_is_declared_and_installed() -> None:
    from importlib.metadata import entry_points

    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["scripts"]["pytest-latency"] == "pytest_latency.cli:main"
    (script,) = entry_points(group="console_scripts", name="pytest-latency")
    assert script.value == "pytest_latency.cli:main"


E2E_SPEC = textwrap.dedent(
    """\
    server: {kind: sim, options: {decode_base_s: 0.003, prefill_per_token_s: 0.00001}}
    workload:
      seed: 5
      input_tokens: [20, 40]
      output_tokens: 8
      timeout: 10s
      phases:
        # 100 steady requests: a scope under 64 is never taken as independent, and
        # 40 of them left both TTFT verdicts undecided in about a run of three.
        - {name: steady, arrival: poisson, rate: 20, duration: 5s}
        - {name: burst, arrival: constant, rate: 40, duration: 1s}
    objectives:
      - {metric: ttft, p: 50, max: 2s, phase: steady}
      - {metric: ttft, p: 50, max: 1ms, phase: steady}
      - {metric: itl, p: 50, max: 1s}
      - {metric: error_rate, max: 100%}  # 140 requests cannot bound it lower
    """
)


def test_judge_repeats_the_plugins_verdicts_on_its_json(pytester: pytest.Pytester) -> None:
    spec = pytester.makefile(".slo.yaml", chat=E2E_SPEC)
    outcome = pytester.runpytest("--latency-json", "latency.json", "-p", "no:randomly")
    outcome.assert_outcomes(failed=1)  # a TTFT under 1 ms cannot hold
    (stored,) = assert_valid_run_file(pytester.path / "latency.json")["runs"]
    verdicts = [objective["verdict"] for objective in stored["objectives"]]
    assert verdicts[:2] == ["pass", "fail"] and len(verdicts) == 4
    out = pytester.path / "judged.json"
    result = judge("latency.json", "--objectives", spec, "--json", out, cwd=pytester.path)
    assert result.returncode == 1, result.stderr
    (judged,) = assert_valid_run_file(out)["runs"]
    assert judged["test"] == stored["test"] and judged["outcome"] == stored["outcome"] == "failed"
    assert judged["objectives"] == stored["objectives"]  # the same numbers and reasons
