"""Turning objective results into a test outcome, by the ``--latency-inconclusive`` policy."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import TYPE_CHECKING

import pytest

from pytest_latency.analysis.diagnosis import CAVEAT, format_findings
from pytest_latency.analysis.infrastructure import infrastructure_headline
from pytest_latency.analysis.verdict import ObjectiveResult, Verdict
from pytest_latency.errors import LatencyComparisonWarning as LatencyComparisonWarning
from pytest_latency.errors import LatencyInconclusiveWarning as LatencyInconclusiveWarning
from pytest_latency.errors import LatencyObjectiveError as LatencyObjectiveError
from pytest_latency.errors import LatencyRunInvalid as LatencyRunInvalid
from pytest_latency.report.evidence import describe

if TYPE_CHECKING:
    from pytest_latency.result import LatencyResult


def enforce(run: LatencyResult, results: Sequence[ObjectiveResult]) -> None:
    """Raise on failed objectives; warn, fail or skip on inconclusive ones."""
    __tracebackhide__ = True
    check_valid(run)
    for result in results:
        for caveat in result.warnings:
            warnings.warn(LatencyComparisonWarning(caveat), stacklevel=2)
    failed = [result for result in results if result.verdict is Verdict.FAIL]
    undecided = [result for result in results if result.verdict is Verdict.INCONCLUSIVE]
    policy = run.inconclusive_policy
    if policy == "fail":
        failed += undecided
    if failed:
        raise LatencyObjectiveError(_message(run, failed, "latency objectives not met"))
    if undecided and policy == "skip":
        pytest.skip(_message(run, undecided, "latency objectives inconclusive"))
    for result in undecided:
        records = run.scoped(result.objective)
        warnings.warn(
            LatencyInconclusiveWarning(describe(result, records, run.trace_url_template, 0)),
            stacklevel=2,
        )


def check_valid(run: LatencyResult) -> None:
    """Raise LatencyRunInvalid, with the reasons, when the generator fell behind."""
    __tracebackhide__ = True
    if run.health is not None and not run.health.valid:
        raise LatencyRunInvalid(
            f"latency run invalid ({run.test}): "
            + "; ".join(run.health.reasons)
            + ". Lower the rate, use more workers, or run on a quieter machine."
        )


def _message(run: LatencyResult, results: Sequence[ObjectiveResult], headline: str) -> str:
    parts = [f"{headline} ({run.test}, server {run.server.kind} {run.server.url}):"]
    infrastructure = infrastructure_headline(run.records)
    if infrastructure:  # before the objectives: they failed on a broken setup, not latency
        parts.append(f"  {infrastructure}")
    if run.server_exit:
        parts.append(f"  the server exited during the run: {run.server_exit}")
    for result in results:
        records = run.scoped(result.objective)
        parts.append(describe(result, records, run.trace_url_template))
    findings = run.diagnosis()
    if findings:
        parts.append("diagnosis (" + CAVEAT + "):")
        parts.extend(f"    {line}" for line in format_findings(findings))
    return "\n".join(parts)
