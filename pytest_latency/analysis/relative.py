"""Relative objectives: the candidate run against the same scope of a baseline run."""

from __future__ import annotations

import math
from collections.abc import Sequence

from pytest_latency.analysis.cohorts import cohort_counts
from pytest_latency.analysis.compare import compare_quantiles, mix_shift
from pytest_latency.analysis.samples import metric_samples
from pytest_latency.analysis.verdict import ObjectiveResult, Verdict
from pytest_latency.records import RequestRecord
from pytest_latency.spec import Objective

MIX_SHIFT_WARNING = 0.10  # total-variation distance between cohort mixes worth a warning


def decide_relative(
    objective: Objective,
    candidate: Sequence[RequestRecord],
    baseline: Sequence[RequestRecord] | None,
    confidence: float,
) -> ObjectiveResult:
    """Ratio of the candidate's percentile to the baseline's, with distribution-free bounds.

    ``estimate_s``, ``lower_s`` and ``upper_s`` hold the ratio (candidate / baseline).
    """
    assert objective.p is not None and objective.max_regression is not None
    if baseline is None:
        return ObjectiveResult(
            objective, Verdict.INCONCLUSIVE, math.nan, 0.0, math.inf, len(candidate),
            confidence, "no baseline for this test (pass --latency-baseline PATH)",
        )  # fmt: skip
    result = compare_quantiles(
        metric_samples(baseline, objective.metric),
        metric_samples(candidate, objective.metric),
        objective.p / 100.0,
        objective.max_regression,
        confidence=confidence,
    )
    warnings: tuple[str, ...] = ()
    shift = mix_shift(cohort_counts(baseline), cohort_counts(candidate))
    if shift > MIX_SHIFT_WARNING:
        warnings = (
            f"{objective.label}: the cohort mix changed since the baseline (total variation "
            f"{shift:.2f} > {MIX_SHIFT_WARNING}): compare like with like",
        )
    return ObjectiveResult(
        objective, result.verdict, result.ratio_estimate, result.ratio_lower,
        result.ratio_upper, result.n_candidate, confidence, result.reason, warnings,
    )  # fmt: skip
