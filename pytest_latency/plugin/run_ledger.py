"""What the session keeps of each run besides its records: its baseline and outcome.

The stored runs a run is compared with (or why none can be), and each test's outcome
for the runs that decided no objective of their own. Pure bookkeeping over the options
and the loaded baseline; the session calls it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pytest_latency.analysis.baseline import Baseline
    from pytest_latency.analysis.result import LatencyResult
    from pytest_latency.plugin.options import LatencyOptions

#: Outcomes from best to worst: a test's is the worst of its phases'.
OUTCOME_ORDER = ("passed", "inconclusive", "failed", "error")


def worst_outcome(earlier: str, outcome: str) -> str:
    """The worse of two outcomes (:data:`OUTCOME_ORDER`)."""
    return max(earlier, outcome, key=OUTCOME_ORDER.index)


def baseline_problem(baseline: Baseline | None, options: LatencyOptions, key: str) -> str | None:
    """Why relative objectives of the run keyed ``key`` cannot be decided, if so."""
    if baseline is None:
        if options.save_baseline is not None:
            return None  # the first run of a baseline: inconclusive, and saved
        return (
            "relative objectives (max_regression) need a baseline: pass"
            " --latency-baseline PATH (create one with --latency-save-baseline PATH)"
        )
    from pytest_latency.errors import BaselineKeyError

    try:
        baseline.lookup(key)
    except BaselineKeyError as error:
        return str(error)
    return None


def attach_baseline(
    baseline: Baseline | None, options: LatencyOptions, result: LatencyResult
) -> None:
    """Give ``result`` its stored runs, or the reason they are not comparable."""
    # Saving a first baseline: relative objectives have nothing yet (not a doubt).
    result.establishing_baseline = options.save_baseline is not None and options.baseline is None
    result.baseline_problem = baseline_problem(baseline, options, result.baseline_key)
    if baseline is None or result.baseline_problem:
        return
    from pytest_latency.analysis.baseline import mismatches

    key = result.baseline_key
    stored = baseline.lookup(key)
    server = result.server
    identity = {"kind": server.kind, "model": server.model, "api": server.api}
    differing = mismatches(stored[-1], result.workload.to_json(), identity)
    if differing and not options.allow_baseline_mismatch:
        result.baseline_problem = (
            f"{baseline.path}: the baseline of {key!r} ran another workload or server"
            f" ({'; '.join(differing)}); pass --latency-allow-baseline-mismatch to"
            " compare anyway"
        )
        return
    result.baseline_runs = [run.records for run in stored]


def phase_outcome(report: pytest.TestReport, call: pytest.CallInfo[None]) -> str:
    """One phase's outcome for :meth:`pytest_latency.plugin.session.LatencySession.note_outcome`.

    A failure in setup or teardown, or a latency error other than failed objectives (a
    bad spec, a missing baseline, a server that did not start), is an error.
    """
    from pytest_latency.errors import LatencyError, LatencyObjectiveError

    if report.skipped:
        return "inconclusive"
    if not report.failed:
        return "passed"
    error = call.excinfo.value if call.excinfo is not None else None
    if report.when != "call" or (
        isinstance(error, LatencyError) and not isinstance(error, LatencyObjectiveError)
    ):
        return "error"
    return "failed"
