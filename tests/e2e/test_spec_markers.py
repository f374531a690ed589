"""Spec files as pytest items: ``markers:`` select them with -m like any test, every
latency test carries the ``latency`` marker, and bad files are collection errors that
name file, line and key."""

import textwrap

import pytest

SPEC = """\
workload:
  phases: [{{name: steady, rate: 5, duration: 20s}}]
objectives:
  - {{metric: ttft, p: 95, max: {limit}}}
{markers}"""

PYTHON_TESTS = """\
def test_with_the_fixture(latency):
    pass

def test_plain():
    pass
"""


def _spec(pytester, name, markers="", limit="700ms"):
    text = SPEC.format(limit=limit, markers=textwrap.dedent(markers))
    pytester.makefile(".slo.yaml", **{name: text})


@pytest.fixture
def suite(pytester):
    pytester.makeini("[pytest]\nmarkers =\n    slow: long runs\n    gpu: needs a GPU\n")
    _spec(pytester, "checkout", "markers: [slow, gpu]\n")
    _spec(pytester, "search")
    pytester.makepyfile(test_app=PYTHON_TESTS)
    return pytester


def _selected(pytester, *args):
    result = pytester.runpytest("--collect-only", "-q", "--strict-markers", *args)
    return sorted(line for line in result.outlines if "::" in line)


@pytest.mark.slow
def test_markers_select_spec_files_with_m(suite):
    assert _selected(suite, "-m", "slow") == ["checkout.slo.yaml::checkout"]
    assert _selected(suite, "-m", "gpu and not slow") == []
    assert _selected(suite, "-m", "not slow") == [
        "search.slo.yaml::search",
        "test_app.py::test_plain",
        "test_app.py::test_with_the_fixture",
    ]


@pytest.mark.slow
def test_every_latency_test_carries_the_latency_marker(suite):
    assert _selected(suite, "-m", "not latency") == ["test_app.py::test_plain"]
    assert _selected(suite, "-m", "latency") == [
        "checkout.slo.yaml::checkout",
        "search.slo.yaml::search",
        "test_app.py::test_with_the_fixture",
    ]


@pytest.mark.slow
def test_an_unregistered_marker_fails_under_strict_markers(pytester):
    _spec(pytester, "typo", "markers: [slwo]\n")
    result = pytester.runpytest("--collect-only", "--strict-markers")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert "'slwo' not found in `markers` configuration option" in result.stdout.str()


@pytest.mark.slow
@pytest.mark.parametrize(
    ("markers", "where"),
    [
        ("markers: [slow, not-a-name]\n", ":5: markers[1]: a marker is a name such as slow"),
        ("markers:\n  - slow\n  - 3\n", ":7: markers[1]: a marker is a name such as slow"),
        ("markers: [slow, class]\n", ":5: markers[1]: a marker is a name"),
        ("markers: slow\n", ":5: markers: expected a list of marker names"),
    ],
)
def test_a_bad_marker_is_a_collection_error_naming_file_line_and_key(pytester, markers, where):
    _spec(pytester, "bad", markers)
    result = pytester.runpytest("--collect-only")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    assert f"bad.slo.yaml{where}" in result.stdout.str()


@pytest.mark.slow
def test_a_bare_number_is_a_collection_error_naming_file_line_key_and_fix(pytester):
    _spec(pytester, "bare", limit="700")
    result = pytester.runpytest("--collect-only")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(
        ["*bare.slo.yaml:4: objectives[[]0[]].max: 700 needs a unit: did you mean 700ms?*"]
    )


@pytest.mark.slow
def test_an_unregistered_marker_warns_at_its_line_in_the_spec_file(pytester):
    pytester.makeini("[pytest]\nmarkers =\n    slow: long runs\n")
    _spec(pytester, "typo", "markers:\n  - slow\n  - slwo\n")
    result = pytester.runpytest("--collect-only", "-q")
    assert result.ret == pytest.ExitCode.OK
    out = result.stdout.str()
    # The file and the line of ``- slwo`` (line 7), not a line inside pytest.
    result.stdout.fnmatch_lines(
        ["*typo.slo.yaml:7: PytestUnknownMarkWarning: unknown marker 'slwo'*"]
    )
    assert "_pytest" not in out
    assert out.count("PytestUnknownMarkWarning") == 1  # pytest's own warning is not repeated
    selected = pytester.runpytest("--collect-only", "-q", "-m", "slwo")
    assert "typo.slo.yaml::typo" in selected.stdout.str()  # the marker is still there


@pytest.mark.slow
def test_under_strict_markers_the_error_names_the_spec_line(pytester):
    _spec(pytester, "typo", "markers: [slwo]\n")
    result = pytester.runpytest("--collect-only", "--strict-markers")
    assert result.ret == pytest.ExitCode.INTERRUPTED
    result.stdout.fnmatch_lines(["*typo.slo.yaml:5: markers[[]0[]]: 'slwo' not found*"])
