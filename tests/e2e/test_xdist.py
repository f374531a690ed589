"""pytest-xdist: latency tests are refused under -n, with a message saying what to do."""

import pytest

pytest.importorskip("xdist")

PYTHON_TESTS = """\
def test_plain():
    pass

def test_measures(latency):
    raise AssertionError("must not run under -n")
"""

SPEC = """\
workload:
  phases: [{name: steady, rate: 1, duration: 1s}]
objectives: [{metric: error_rate, max: 1%}]
"""


def _run(pytester, *args):
    return pytester.runpytest_subprocess("-p", "no:cacheprovider", *args)


@pytest.mark.slow
@pytest.mark.parametrize("kind", ["fixture", "yaml"])
def test_latency_tests_under_xdist_are_refused_with_the_way_out(pytester, kind):
    if kind == "fixture":
        pytester.makepyfile(test_mixed=PYTHON_TESTS)
    else:
        pytester.makepyfile(test_mixed="def test_plain():\n    pass\n")
        (pytester.path / "steady.slo.yaml").write_text(SPEC)
    result = _run(pytester, "-n", "2")
    assert result.ret == pytest.ExitCode.TESTS_FAILED  # a collection error: nothing ran
    text = result.stdout.str()
    assert "pytest-latency runs latency tests in one process: run them without -n" in text
    assert "-p no:xdist" in text and "-m 'not latency'" in text
    assert "must not run under -n" not in text  # nothing ran
    result.assert_outcomes(errors=1)


@pytest.mark.slow
def test_deselecting_latency_tests_lets_the_rest_run_under_xdist(pytester):
    pytester.makepyfile(test_mixed=PYTHON_TESTS)
    (pytester.path / "steady.slo.yaml").write_text(SPEC)
    result = _run(pytester, "-n", "2", "-m", "not latency")
    result.assert_outcomes(passed=1)  # xdist does not count deselected items


@pytest.mark.slow
def test_suites_without_latency_tests_run_under_xdist(pytester):
    pytester.makepyfile(test_plain="def test_a():\n    pass\n\ndef test_b():\n    pass\n")
    _run(pytester, "-n", "2").assert_outcomes(passed=2)


@pytest.mark.slow
def test_no_xdist_runs_latency_tests_in_one_process(pytester):
    pytester.makepyfile(test_mixed=PYTHON_TESTS.replace("raise AssertionError", "print"))
    result = _run(pytester, "-p", "no:xdist", "-k", "test_plain or test_measures")
    result.assert_outcomes(passed=2)
