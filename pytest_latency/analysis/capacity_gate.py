"""The gate on a capacity search: ``{metric: capacity, min: R}`` decided on its bracket."""

from __future__ import annotations

import math

from pytest_latency.analysis.capacity_result import CapacityResult
from pytest_latency.analysis.verdict import ObjectiveResult, Verdict
from pytest_latency.spec.model import Objective


def decide_capacity(result: CapacityResult | None, least: float) -> tuple[str, float, str]:
    """(verdict, estimate, reason) of ``{metric: capacity, min: least}`` on a search result.

    PASS when every objective passed at a rate >= ``least`` (by monotonicity they pass at
    ``least`` too), FAIL when one failed at a rate <= ``least`` (so it fails at ``least``
    too), INCONCLUSIVE otherwise: ``least`` lies in the band between, or above every
    pass with no fail probed (the search did not reach it), or monotonicity was
    contradicted (then neither end of the bracket can be trusted). Both come from probe
    verdicts whose error shares add up to at most the search's alpha.
    """
    if result is None:
        return "inconclusive", math.nan, "no capacity search ran in this test"
    passed, failed = result.passed_rps, result.failed_rps
    if result.contradictions:
        return "inconclusive", math.nan, result.stopped
    if passed is not None and passed >= least:
        return "pass", passed, f"every objective passed at {passed:g}/s >= {least:g}/s"
    if failed is not None and failed <= least:
        return "fail", failed, f"an objective failed at {failed:g}/s <= {least:g}/s"
    return "inconclusive", passed or math.nan, f"the search did not decide {least:g}/s"


def capacity_objective_result(
    objective: Objective, result: CapacityResult | None, confidence: float
) -> ObjectiveResult:
    """``{metric: capacity, min: R}`` as an objective result: the estimate is the highest
    passing rate, the bounds the bracket (req/s; null ends are unknown)."""
    verdict, estimate, reason = decide_capacity(result, objective.min_value or 0.0)
    passed = None if result is None else result.passed_rps
    failed = None if result is None else result.failed_rps
    return ObjectiveResult(
        objective,
        Verdict(verdict),
        estimate,
        math.nan if passed is None else passed,
        math.inf if failed is None else failed,
        0 if result is None else len(result.probes),
        confidence,
        reason,
    )
