"""The session's files: paths checked at configure time, saving merges, failures are clear."""

from __future__ import annotations

import dataclasses
import importlib.metadata
import json
from pathlib import Path

import pytest

from pytest_latency.analysis.result import LatencyResult
from pytest_latency.records import RequestRecord, Status, read_runs
from pytest_latency.report.json_report import save_baseline, write_json
from pytest_latency.servers.base import ServerInfo
from pytest_latency.sim import Arrival, SimConfig, simulate
from pytest_latency.spec.model import Phase, Workload
from pytest_latency.workload import build_plan
from tests.helpers.json_schema import assert_valid_run_file

SERVER = (
    "{kind: sim, options: {decode_base_s: 0.003, decode_per_seq_s: 0.0001,"
    " prefill_per_token_s: 0.00001}}"
)


def spec(objective: str, rate: int = 40, duration: str = "2s") -> str:
    """A Poisson steady phase; 40/s for 2 s is ~80 requests, a scope that can decide."""
    return f"""\
server: {SERVER}
workload:
  seed: 2
  input_tokens: [20, 40]
  output_tokens: 10
  phases: [{{name: steady, arrival: poisson, rate: {rate}, duration: {duration}}}]
objectives:
  - {objective}
"""


PASSES = spec("{metric: ttft, p: 50, max: 2s}")
FAILS = spec("{metric: ttft, p: 50, max: 1ms}")
UNDECIDED = spec("{metric: ttft, p: 99, max: 2s}", rate=10, duration="1s")  # 10 requests


@pytest.fixture(autouse=True)
def patient_generator(request: pytest.FixtureRequest) -> None:
    """These tests are about files and keys, not timing: on a busy 2-core machine the
    generator's schedule lag can pass the 50 ms default and turn a run invalid (an
    error), so the inner pytest runs allow 1 s. An option, not a path: the rootdir
    stays. Set after ``pytester``, which clears PYTEST_ADDOPTS."""
    if "pytester" in request.fixturenames:
        request.getfixturevalue("pytester")
        monkeypatch = request.getfixturevalue("monkeypatch")
        monkeypatch.setenv("PYTEST_ADDOPTS", "--latency-max-lag=1s")


def keys_in(path: Path) -> list[str]:
    return [run["baseline_key"] for run in assert_valid_run_file(path)["runs"]]


# --- paths checked before anything runs ---------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize("flag", ["--latency-json", "--latency-save-baseline", "--latency-html"])
def test_a_path_under_a_file_is_a_usage_error_naming_the_flag(
    pytester: pytest.Pytester, flag: str
) -> None:
    pytester.makefile(".slo.yaml", passes=PASSES)
    (pytester.path / "reports").write_text("a file, not a folder")
    result = pytester.runpytest(f"{flag}=reports/deep/out.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    error = result.stderr.str()
    assert f"{flag} reports/deep/out.json:" in error and "is not a folder" in error
    assert "Traceback" not in error and "latency summary" not in result.stdout.str()


@pytest.mark.slow
def test_a_folder_given_as_the_file_is_a_usage_error(pytester: pytest.Pytester) -> None:
    (pytester.path / "reports").mkdir()
    result = pytester.runpytest("--latency-json", "reports")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--latency-json reports: reports is a folder; give a file name" in result.stderr.str()


@pytest.mark.slow
def test_a_missing_folder_that_can_be_created_is_fine(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain():\n    pass\n")
    result = pytester.runpytest("--latency-json=new/deeper/run.json")
    result.assert_outcomes(passed=1)
    assert assert_valid_run_file(pytester.path / "new" / "deeper" / "run.json")["runs"] == []


@pytest.mark.slow
def test_an_existing_save_target_that_is_not_a_run_file_is_refused_before_running(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".slo.yaml", passes=PASSES)
    (pytester.path / "base.json").write_text('{"not": "a run file"}')
    result = pytester.runpytest("--latency-save-baseline=base.json")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--latency-save-baseline: base.json: not a pytest-latency file" in result.stderr.str()
    assert (pytester.path / "base.json").read_text() == '{"not": "a run file"}'


# --- writing at the end -------------------------------------------------------------

SABOTAGE = """\
import shutil
from pathlib import Path


def test_replaces_the_report_folder_by_a_file():
    shutil.rmtree("out")
    Path("out").write_text("no longer a folder")
"""


@pytest.mark.slow
def test_a_failed_write_at_the_end_is_reported_and_fails_the_session(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".slo.yaml", a_passes=PASSES)
    pytester.makepyfile(test_z_sabotage=SABOTAGE)
    (pytester.path / "out").mkdir()
    result = pytester.runpytest(
        "--latency-json=out/run.json", "--latency-save-baseline=out/base.json", "-p", "no:randomly"
    )
    result.assert_outcomes(passed=2)  # every test passed, yet the reports are lost
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    text = result.stdout.str() + result.stderr.str()
    assert "latency JSON: could not write out/run.json (" in text
    assert "latency baseline out/base.json: could not write (" in text
    assert "the session fails" in text
    assert "Traceback" not in text and "INTERNALERROR" not in text


@pytest.mark.slow
def test_saving_with_no_latency_run_says_so(pytester: pytest.Pytester) -> None:
    pytester.makepyfile("def test_plain():\n    pass\n")
    result = pytester.runpytest("--latency-save-baseline=base.json")
    result.assert_outcomes(passed=1)
    assert "latency baseline base.json: not written: no latency test ran in this session" in (
        result.stdout.str()
    )
    assert not (pytester.path / "base.json").exists()


@pytest.mark.slow
def test_saving_a_k_subset_merges_and_lists_what_it_wrote(pytester: pytest.Pytester) -> None:
    pytester.makefile(".slo.yaml", alpha=PASSES, beta=PASSES.replace("seed: 2", "seed: 3"))
    first = pytester.runpytest("--latency-save-baseline=base.json", "-p", "no:randomly")
    first.assert_outcomes(passed=2)
    base = pytester.path / "base.json"
    assert keys_in(base) == ["alpha.slo.yaml::alpha", "beta.slo.yaml::beta"]
    assert f"latency baseline saved to {base}: 2 new, 0 updated, 0 other key(s)" in (
        " ".join(first.stdout.str().split())  # wrapped at the width
    )
    beta_before = [run for run in read_runs(base) if run.test == "beta.slo.yaml::beta"]

    again = pytester.runpytest("-k", "alpha", "--latency-save-baseline=base.json")
    again.assert_outcomes(passed=1)
    text = " ".join(again.stdout.str().split())  # wrapped at the width
    assert f"latency baseline saved to {base}: 0 new, 1 updated, 1 other key(s) kept" in text
    assert "updated alpha.slo.yaml::alpha (1 run(s) of history)" in text
    assert sorted(keys_in(base)) == ["alpha.slo.yaml::alpha", "beta.slo.yaml::beta"]
    beta_after = [run for run in read_runs(base) if run.test == "beta.slo.yaml::beta"]
    assert beta_after[0].document == beta_before[0].document  # untouched


@pytest.mark.slow
def test_each_run_records_its_outcome_policy_and_the_plugin_version(
    pytester: pytest.Pytester,
) -> None:
    pytester.makefile(".slo.yaml", a=PASSES, b=FAILS, c=UNDECIDED)
    result = pytester.runpytest(
        "--latency-json=run.json", "--latency-inconclusive=skip", "-p", "no:randomly",
        "--latency-allow-undecidable",  # c is undecidable on purpose: it must come out skipped
    )  # fmt: skip
    result.assert_outcomes(passed=1, failed=1, skipped=1)
    document = assert_valid_run_file(pytester.path / "run.json")
    version = importlib.metadata.version("pytest-latency")
    assert document["plugin_version"] == version
    runs = document["runs"]
    assert [run["outcome"] for run in runs] == ["passed", "failed", "inconclusive"]
    assert {run["inconclusive_policy"] for run in runs} == {"skip"}
    assert {run["plugin_version"] for run in runs} == {version}
    assert runs[0]["workload"]["phases"] == [
        {"name": "steady", "arrival": "poisson", "rate": 40.0, "duration_s": 2.0, "burstiness": 1.0}
    ]


# --- compact baselines --------------------------------------------------------------


def simulated_run(requests: int, output_tokens: int) -> LatencyResult:
    """A run of the embedded server's engine in virtual time: exact, no sockets."""
    workload = Workload(
        phases=(Phase("steady", rate=20, duration_s=requests / 20),),
        output_tokens=output_tokens,
        seed=5,
    )
    plan = build_plan(workload)
    arrivals = [Arrival(r.intended_s, r.input_tokens, r.output_tokens) for r in plan.requests]
    simulated = simulate(SimConfig(replicas=4), arrivals)
    records = []
    for request, result in zip(plan.requests, simulated, strict=True):
        record = RequestRecord(request.id, request.phase, request.intended_s, request.input_tokens)
        record.status, record.sent_s = Status.OK, request.intended_s
        record.first_token_s = request.intended_s + (result.ttft_s or 0.0)
        record.end_s = request.intended_s + (result.e2e_s or 0.0)
        record.itl_s, record.output_tokens = list(result.itl_s), output_tokens
        records.append(record)
    server = ServerInfo("sim", "http://127.0.0.1:1", "sim-tiny")
    return LatencyResult("t.py::test_steady", server, workload, records, 0.0, 1.0)


@pytest.mark.slow
def test_a_saved_baseline_keeps_gap_summaries_not_gaps(tmp_path: Path) -> None:
    # 1,000 requests of 100 tokens: the gaps are 99% of a full --latency-json file.
    run = simulated_run(1000, 100)
    full, base, packed = tmp_path / "run.json", tmp_path / "base.json", tmp_path / "base.json.gz"
    write_json(full, [run])
    save_baseline(base, [run])
    save_baseline(packed, [run])
    for path in (full, base, packed):
        assert_valid_run_file(path)
    per_request = base.stat().st_size / len(run.records)
    # A row is ~25 fields (ids, times to the ns, tokens, the gap summary): ~400 bytes,
    # where the full row's 99 gaps alone take ~2 KB. 10,000 requests: about 4 MB.
    assert per_request < 600, per_request
    assert base.stat().st_size < full.stat().st_size / 4
    assert packed.stat().st_size < base.stat().st_size / 4
    for stored in (read_runs(base)[0], read_runs(packed)[0]):
        for before, after in zip(run.records, stored.records, strict=True):
            assert after.itl_summary is not None and len(after.itl_s) == 0
            assert after.itl_summary.count == len(before.itl_s)
            assert after.itl_summary.max_s == pytest.approx(max(before.itl_s), abs=1e-9)
    # Saving again into the file (merge) keeps it compact and readable.
    save_baseline(base, [dataclasses.replace(run, test="t.py::test_other")])
    assert keys_in(base) == ["t.py::test_steady", "t.py::test_other"]
    assert json.loads(base.read_text())["runs"][0]["requests"][0].get("itl_s") is None


def test_the_file_layout_puts_each_request_on_one_line_and_round_trips(tmp_path: Path) -> None:
    from pytest_latency.file_format import decode, encode

    document = {
        "schema": "pytest-latency/1",
        "runs": [
            {"test": "empty", "requests": []},
            {"test": "two", "requests": [{"id": 0, "s": "@requests-x-1"}, {"id": 1}]},
            {"test": "judged", "objectives": []},
        ],
    }
    text = encode(document).decode()
    assert '\n{"id":0,"s":"@requests-x-1"},\n{"id":1}\n]' in text
    assert decode(text.encode()) == document
    assert decode(encode(document, gzipped=True)) == document
    # A non-finite value is written as null: strict JSON, and the file is still written.
    absurd = encode({"runs": [{"requests": [{"upper_s": float("inf")}, {"upper_s": 1.0}]}]})
    assert decode(absurd) == {"runs": [{"requests": [{"upper_s": None}, {"upper_s": 1.0}]}]}


def test_a_runs_outcome_comes_from_its_verdicts_else_from_its_test() -> None:
    from pytest_latency.analysis.verdict import ObjectiveResult, Verdict
    from pytest_latency.report.json_report import run_outcome
    from pytest_latency.spec.model import objective

    run = simulated_run(20, 4)
    assert [run_outcome(run, test) for test in ("passed", "failed", "error")] == [
        "passed", "failed", "error",
    ]  # fmt: skip
    assert run_outcome(run, "inconclusive") == "inconclusive"  # a skipped test
    assert run_outcome(run) == "error"  # nothing decided and no test outcome: unknown
    goal = objective("ttft", p=50, max="1s")
    for verdicts, test, expected in [
        ([Verdict.PASS], "failed", "passed"),  # the test failed on its own assertion
        ([Verdict.PASS, Verdict.INCONCLUSIVE], "passed", "inconclusive"),
        ([Verdict.INCONCLUSIVE, Verdict.FAIL], "failed", "failed"),
        ([Verdict.PASS], "error", "error"),
        ([Verdict.INVALID], "failed", "error"),
    ]:
        run.objective_results[:] = [
            ObjectiveResult(goal, verdict, 0.1, 0.0, 0.2, 20, 0.99, "") for verdict in verdicts
        ]
        assert run_outcome(run, test) == expected, verdicts
    run.interrupted = "interrupted (Ctrl-C)"
    assert run_outcome(run, "passed") == "interrupted"
