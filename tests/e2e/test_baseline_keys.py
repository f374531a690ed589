"""Baseline keys that do not move with pytest's rootdir, and a workflow that fails closed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_latency.errors import BaselineKeyError
from pytest_latency.keys import key_for_test, match_key, project_root
from tests.helpers.json_schema import assert_valid_run_file

SPEC = """\
{id}server: {{kind: sim, options: {{decode_base_s: 0.003, decode_per_seq_s: 0.0001,
          prefill_per_token_s: 0.00001}}}}
workload:
  seed: 1
  input_tokens: [20, 40]
  output_tokens: 10
  phases: [{{name: steady, arrival: poisson, rate: 20, duration: 2s}}]
objectives:
  - {{metric: e2e, p: 50, max_regression: 50%}}
"""


def write_spec(path: Path, spec_id: str | None = None) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(SPEC.format(id=f"id: {spec_id}\n" if spec_id else ""))
    return path


def stored_keys(path: Path) -> list[str]:
    assert_valid_run_file(path)
    return [run["baseline_key"] for run in json.loads(path.read_text())["runs"]]


def compared(result: pytest.RunResult, json_path: Path) -> dict[str, object]:
    """The relative objective of the one run in ``json_path``: it met its baseline."""
    assert "holds no run" not in result.stdout.str()
    (run,) = json.loads(json_path.read_text())["runs"]
    (objective,) = run["objectives"]
    assert objective["estimate_s"] is not None, objective  # a ratio: the baseline was used
    return objective


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


# --- keys, without pytest -------------------------------------------------------------


def test_the_project_root_is_the_config_folder_else_the_nearest_marker(tmp_path: Path) -> None:
    project = tmp_path / "proj"
    spec = write_spec(project / "tests" / "a.slo.yaml")
    (project / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    assert project_root(spec, None, tmp_path) == project
    (tmp_path / "pytest.ini").write_text("[pytest]\n")
    assert project_root(spec, tmp_path / "pytest.ini", project) == tmp_path
    elsewhere = tmp_path / "other" / "pytest.ini"  # a config the test file is not under
    assert project_root(spec, elsewhere, tmp_path) == project
    (project / "pyproject.toml").unlink()
    assert project_root(spec, None, tmp_path / "rootdir") == tmp_path  # its pytest.ini
    assert key_for_test(project, spec, "proj/tests/a.slo.yaml::a") == "tests/a.slo.yaml::a"
    assert key_for_test(project, spec, "x::a", explicit_id="checkout") == "checkout"


def test_test_names_keep_classes_and_parameters(tmp_path: Path) -> None:
    test_file = tmp_path / "tests" / "test_chat.py"
    key = key_for_test(tmp_path, test_file, "../tests/test_chat.py::TestChat::test_steady[8-a::b]")
    assert key == "tests/test_chat.py::TestChat::test_steady[8-a::b]"


def test_keys_from_another_rootdir_match_only_when_unambiguous() -> None:
    stored = ["tests/a.slo.yaml::a", "tests/b.slo.yaml::b", "tests/b.slo.yaml::b#2"]
    assert match_key("tests/a.slo.yaml::a", stored, "base.json") == "tests/a.slo.yaml::a"
    # Saved with the parent folder as rootdir, or read with it: either way round.
    assert match_key("proj/tests/a.slo.yaml::a", stored, "b") == "tests/a.slo.yaml::a"
    assert match_key("a.slo.yaml::a", stored, "b") == "tests/a.slo.yaml::a"
    assert match_key("x/tests/b.slo.yaml::b#2", stored, "b") == "tests/b.slo.yaml::b#2"
    with pytest.raises(BaselineKeyError, match=r"holds no run for 'ests/a\.slo\.yaml::a'"):
        match_key("ests/a.slo.yaml::a", stored, "b")  # a suffix of a name is not a folder
    ambiguous = ["one/tests/a.slo.yaml::a", "two/tests/a.slo.yaml::a"]
    with pytest.raises(BaselineKeyError, match="several runs that could be"):
        match_key("tests/a.slo.yaml::a", ambiguous, "base.json")
    with pytest.raises(BaselineKeyError, match=r"holds no run for 'checkout' \(it holds: tests/a"):
        match_key("checkout", stored, "base.json")


# --- through pytest ------------------------------------------------------------------


def rootdir_of(result: pytest.RunResult) -> Path:
    (line,) = [line for line in result.stdout.lines if line.startswith("rootdir: ")]
    return Path(line.removeprefix("rootdir: ").split(",")[0])


@pytest.mark.slow
def test_keys_survive_a_space_form_flag_that_moves_the_rootdir(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = pytester.path / "proj"
    write_spec(project / "tests" / "gate.slo.yaml")
    (project / ".git").mkdir()  # a checkout, without pytest configuration
    monkeypatch.chdir(project)
    saved = pytester.runpytest("tests", "--latency-save-baseline", "../x/base.json")
    saved.assert_outcomes(passed=1)
    assert rootdir_of(saved) == project  # ../x/base.json did not exist yet
    base = pytester.path / "x" / "base.json"
    assert stored_keys(base) == ["tests/gate.slo.yaml::gate"]
    # Now that it exists, ``../x/base.json`` after a space is a path to pytest's rootdir
    # search, which picks the parent folder: node ids become proj/tests/... (the issue's
    # "no baseline for this test" although one was passed). The key does not move.
    for flag, rootdir in (
        (["--latency-baseline", "../x/base.json"], pytester.path),
        (["--latency-baseline=../x/base.json"], project),
    ):
        result = pytester.runpytest(
            "tests", *flag, "--latency-json=run.json", "--latency-inconclusive", "warn"
        )
        result.assert_outcomes(passed=1)
        assert rootdir_of(result) == rootdir
        compared(result, project / "run.json")
        assert stored_keys(project / "run.json") == ["tests/gate.slo.yaml::gate"]


@pytest.mark.slow
def test_an_older_file_keyed_by_another_rootdirs_test_id_still_matches(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    project = pytester.path / "proj"
    write_spec(project / "tests" / "gate.slo.yaml")  # no marker file: the rootdir decides
    monkeypatch.chdir(project)
    pytester.runpytest("tests", "--latency-save-baseline=base.json").assert_outcomes(passed=1)
    assert stored_keys(project / "base.json") == ["tests/gate.slo.yaml::gate"]
    monkeypatch.chdir(pytester.path)  # now the rootdir is the parent: proj/tests/...
    result = pytester.runpytest(
        "proj/tests",
        "--latency-baseline=proj/base.json",
        "--latency-json=r.json",
        "--latency-inconclusive",
        "warn",
    )
    result.assert_outcomes(passed=1)
    assert rootdir_of(result) == pytester.path
    compared(result, pytester.path / "r.json")  # found under the other rootdir's key
    assert stored_keys(pytester.path / "r.json") == ["proj/tests/gate.slo.yaml::gate"]


@pytest.mark.slow
def test_a_spec_id_keeps_the_baseline_when_the_file_moves(pytester: pytest.Pytester) -> None:
    write_spec(pytester.path / "checkout.slo.yaml", spec_id="checkout")
    pytester.runpytest("--latency-save-baseline=base.json").assert_outcomes(passed=1)
    assert stored_keys(pytester.path / "base.json") == ["checkout"]
    (pytester.path / "moved").mkdir()
    (pytester.path / "checkout.slo.yaml").rename(pytester.path / "moved" / "renamed.slo.yaml")
    result = pytester.runpytest(
        "--latency-baseline=base.json", "--latency-json=run.json", "--latency-inconclusive", "warn"
    )
    result.assert_outcomes(passed=1)
    compared(result, pytester.path / "run.json")


@pytest.mark.slow
def test_two_specs_with_one_id_are_an_error(pytester: pytest.Pytester) -> None:
    write_spec(pytester.path / "a.slo.yaml", spec_id="checkout")
    write_spec(pytester.path / "b.slo.yaml", spec_id="checkout")
    result = pytester.runpytest("--latency-save-baseline=base.json", "-p", "no:randomly")
    result.assert_outcomes(passed=1, errors=1)
    assert "baseline key 'checkout' is used by two tests, a.slo.yaml::a and b.slo.yaml::b" in (
        result.stdout.str()
    )


PYTHON_TEST = """\
from pytest_latency import objective
from pytest_latency.spec.model import ServerSpec, steady

FAST = ServerSpec(kind="sim", options={"decode_base_s": 0.003, "prefill_per_token_s": 0.00001})


def test_checkout(latency):
    result = latency.run(steady(20, 2), server=FAST, output_tokens=10, seed=1, id="checkout")
    result.assert_slo(objective("e2e", p=50, max_regression="50%"))


def test_search(latency):
    result = latency.run(steady(20, 2), server=FAST, output_tokens=10, seed=1)
    result.assert_slo(objective("e2e", p=50, max_regression="50%"))
"""


@pytest.mark.slow
def test_python_tests_are_keyed_by_file_and_name_or_their_id(pytester: pytest.Pytester) -> None:
    (pytester.path / "tests").mkdir()
    (pytester.path / "tests" / "test_api.py").write_text(PYTHON_TEST)
    pytester.makefile(".toml", pyproject="[project]\nname = 'x'\n")
    saved = pytester.runpytest("tests", "--latency-save-baseline=base.json", "-p", "no:randomly")
    saved.assert_outcomes(passed=2)
    keys = stored_keys(pytester.path / "base.json")
    assert keys == ["checkout", "tests/test_api.py::test_search"]
    result = pytester.runpytest(
        "tests",
        "--latency-baseline=base.json",
        "--latency-json=r.json",
        "--latency-inconclusive",
        "warn",
    )
    result.assert_outcomes(passed=2)
    runs = json.loads((pytester.path / "r.json").read_text())["runs"]
    assert [run["baseline_key"] for run in runs] == keys
    assert all(run["objectives"][0]["estimate_s"] is not None for run in runs)


@pytest.mark.slow
def test_a_missing_baseline_entry_is_an_error_before_any_load(pytester: pytest.Pytester) -> None:
    write_spec(pytester.path / "gate.slo.yaml")
    pytester.runpytest("--latency-save-baseline=base.json").assert_outcomes(passed=1)
    (pytester.path / "gate.slo.yaml").rename(pytester.path / "other.slo.yaml")
    missing = pytester.runpytest("--latency-baseline", "base.json", "--latency-json=run.json")
    missing.assert_outcomes(errors=1)
    text = missing.stdout.str()
    assert "e2e p50 <= baseline +50%: base.json holds no run for 'other.slo.yaml::other'" in text
    assert "(it holds: gate.slo.yaml::gate)" in text
    assert json.loads((pytester.path / "run.json").read_text())["runs"] == []  # nothing sent


@pytest.mark.slow
def test_relative_objectives_without_any_baseline_are_an_error(pytester: pytest.Pytester) -> None:
    write_spec(pytester.path / "gate.slo.yaml")
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    assert "relative objectives (max_regression) need a baseline: pass --latency-baseline" in (
        result.stdout.str()
    )


@pytest.mark.slow
def test_a_python_test_without_its_baseline_entry_errors_and_says_so_in_the_json(
    pytester: pytest.Pytester,
) -> None:
    (pytester.path / "test_api.py").write_text(PYTHON_TEST)
    write_spec(pytester.path / "gate.slo.yaml")
    pytester.runpytest("gate.slo.yaml", "--latency-save-baseline=base.json").assert_outcomes(
        passed=1
    )
    result = pytester.runpytest(
        "test_api.py",
        "--latency-baseline=base.json",
        "--latency-json=run.json",
        "-p",
        "no:randomly",
    )
    result.assert_outcomes(failed=2)
    assert "holds no run for 'checkout' (it holds: gate.slo.yaml::gate)" in result.stdout.str()
    runs = json.loads((pytester.path / "run.json").read_text())["runs"]
    assert [run["outcome"] for run in runs] == ["error", "error"]
