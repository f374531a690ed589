"""Relative objectives: the candidate run against the same scope of stored baseline runs."""

from __future__ import annotations

import math
from collections.abc import Sequence

from pytest_latency.analysis.cohorts import cohort_counts
from pytest_latency.analysis.compare import mix_shift
from pytest_latency.analysis.samples import metric_series
from pytest_latency.analysis.stored import JOB_NOISE, compare_to_baseline
from pytest_latency.analysis.verdict import ObjectiveResult, Verdict
from pytest_latency.records import RequestRecord
from pytest_latency.spec.model import Objective

MIX_SHIFT_WARNING = 0.10  # total-variation distance between cohort mixes worth a warning


# A relative objective's reason when the run has nothing to compare with.
NO_BASELINE = "no baseline for this test (pass --latency-baseline PATH)"


def decide_relative(
    objective: Objective,
    candidate: Sequence[RequestRecord],
    baseline: Sequence[Sequence[RequestRecord]] | None,
    confidence: float,
) -> ObjectiveResult:
    """Ratio of the candidate's percentile to the baseline's (see :mod:`.stored`).

    ``baseline`` holds the records of each stored run of this test, in the objective's
    scope, oldest first; several runs let the verdict estimate between-run noise.
    ``estimate_s``, ``lower_s`` and ``upper_s`` hold the ratio (candidate / baseline).
    """
    assert objective.p is not None and objective.max_regression is not None
    if not baseline:
        return ObjectiveResult(
            objective, Verdict.INCONCLUSIVE, math.nan, 0.0, math.inf, len(candidate),
            confidence, NO_BASELINE,
        )  # fmt: skip
    result, effective = compare_to_baseline(
        [metric_series(run, objective.metric) for run in baseline],
        metric_series(candidate, objective.metric),
        objective.p / 100.0,
        objective.max_regression,
        min_change_s=objective.min_change_s,
        confidence=confidence,
    )
    warnings: tuple[str, ...] = ()
    if len(baseline) == 1:
        warnings += (
            f"{objective.label}: the baseline holds one run, so between-run noise is"
            f" assumed ({JOB_NOISE:.1%} a run); save several runs (--latency-baseline-history)",
        )
    pooled = [record for run in baseline for record in run]
    shift = mix_shift(cohort_counts(pooled), cohort_counts(candidate))
    if shift > MIX_SHIFT_WARNING:
        warnings += (
            f"{objective.label}: the cohort mix changed since the baseline (total variation "
            f"{shift:.2f} > {MIX_SHIFT_WARNING}): compare like with like",
        )
    return ObjectiveResult(
        objective, result.verdict, result.ratio_estimate, result.ratio_lower,
        result.ratio_upper, result.n_candidate, confidence, result.reason, warnings,
        n_effective=None if math.isnan(effective) else effective,
    )  # fmt: skip
