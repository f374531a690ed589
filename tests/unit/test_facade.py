"""The public facade: a small, stable, importable surface."""

import subprocess
import sys

import pytest

import pytest_latency

EXPECTED = {
    "LatencyComparisonWarning",
    "LatencyError",
    "LatencyFixture",
    "PairedComparison",
    "RunFileError",
    "ServerStartError",
    "ServiceClass",
    "LatencyInconclusiveWarning",
    "LatencyInfrastructureError",
    "LatencyObjectiveError",
    "LatencyResult",
    "LatencyRunInvalid",
    "LatencyUndecidableWarning",
    "Objective",
    "Prefix",
    "Sessions",
    "ObjectiveResult",
    "Phase",
    "RequestRecord",
    "Retry",
    "ServerInfo",
    "ServerNotReady",
    "ServerSpec",
    "SpecError",
    "Status",
    "UndecidablePlan",
    "Verdict",
    "Workload",
    "__version__",
    "burst",
    "objective",
    "prompt_dataset",
    "quantile_bounds",
    "steady",
    "trace_phase",
}


def test_all_is_a_sorted_tuple_of_exactly_the_public_names():
    assert isinstance(pytest_latency.__all__, tuple)
    assert set(pytest_latency.__all__) == EXPECTED
    assert list(pytest_latency.__all__) == sorted(pytest_latency.__all__)
    for name in pytest_latency.__all__:
        assert hasattr(pytest_latency, name), name


def test_version_matches_the_distribution():
    from importlib.metadata import version

    assert pytest_latency.__version__ == version("pytest-latency")


@pytest.mark.slow
def test_import_has_no_side_effects():
    # Importing must not start servers, threads or event loops, nor print anything.
    code = (
        "import threading, pytest_latency; "
        "assert threading.active_count() == 1, threading.enumerate()"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout == "" and done.stderr == ""


def test_every_error_users_receive_is_a_latency_error_and_keeps_its_builtin_base():
    from pytest_latency import (
        LatencyError,
        LatencyObjectiveError,
        LatencyRunInvalid,
        RunFileError,
        ServerStartError,
        SpecError,
    )
    from pytest_latency.spec.slo_yaml import SpecFileError
    from pytest_latency.telemetry.hub import ReceiverUnavailable

    for error, builtin in (
        (SpecError, ValueError),
        (SpecFileError, ValueError),
        (RunFileError, ValueError),
        (ServerStartError, RuntimeError),
        (LatencyRunInvalid, RuntimeError),
        (LatencyObjectiveError, AssertionError),
        (ReceiverUnavailable, Exception),
    ):
        assert issubclass(error, LatencyError) and issubclass(error, builtin), error
