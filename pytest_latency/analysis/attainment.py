"""SLO attainment and goodput: the share of offered requests that were good, with bounds.

A request is **good** when it completed (status ``ok``) and meets every threshold of the
objective: its TTFT, TPOT, median ITL and e2e (each from the planned send time) at or
under the limit. TPOT and ITL are undefined for a one-token answer; such a request has
no inter-token interval to be slow, so it meets those thresholds. Every other request is
a **miss**: errors, timeouts, rejections, requests cancelled before sending and streams
dropped midway. The denominator is every *offered* request, so dropping a request can
only turn a hit into a miss: attainment never rises by losing requests.

Attainment >= m is a quantile question: each request's **score** is its worst value
over threshold (the largest ``value / threshold``; a failed request scores ``inf``), and
attainment >= m exactly when the m-quantile of the scores is <= 1. The order-statistic
bound of that quantile and the Clopper-Pearson bound of the good share are the same
exact binomial bound read two ways, so the share is bounded with
:func:`~pytest_latency.analysis.verdict.proportion_bounds` at the dependence of the
scores' m-quantile (:func:`~pytest_latency.analysis.percentiles.quantile_dependence`):
the latencies carry the correlation, so a run with no misses still pays for the queue
its requests shared (the 0/1 miss series alone would look independent).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_latency.analysis.percentiles import quantile_dependence
from pytest_latency.analysis.samples import failure_series, record_value
from pytest_latency.analysis.verdict import (
    ObjectiveResult,
    Verdict,
    dependence_note,
    proportion_bounds,
)
from pytest_latency.records import RequestRecord
from pytest_latency.spec.model import Objective


def scores(records: Sequence[RequestRecord], thresholds: Sequence[tuple[str, float]]) -> np.ndarray:
    """Each request's worst ``value / threshold`` (in the order given); ``inf`` if it failed.

    A request is good exactly when its score is <= 1. A value undefined for a completed
    request (no inter-token gap) is no miss and adds nothing (score 0 if nothing else).
    """
    worst = np.zeros(len(records), dtype=np.float64)
    for metric, limit in thresholds:
        values = np.fromiter(
            (
                math.nan if (value := record_value(record, metric)) is None else value
                for record in records
            ),
            dtype=np.float64,
            count=len(records),
        )
        np.fmax(worst, values / limit, out=worst)  # fmax: NaN (undefined) never wins
    failed = np.fromiter((not record.ok for record in records), dtype=bool, count=len(records))
    worst[failed] = math.inf
    # Equal latencies read off different clock offsets differ in the last bits, and that
    # noise grows with the send time: ranked, it would look like a trend. A billionth of
    # the threshold is below any clock's resolution.
    rounded: np.ndarray = np.round(worst, 9)
    return rounded


def good_mask(
    records: Sequence[RequestRecord], thresholds: Sequence[tuple[str, float]]
) -> np.ndarray:
    """True for each request (in the order given) that completed and meets every threshold."""
    good: np.ndarray = scores(records, thresholds) <= 1.0
    return good


def attainment(records: Sequence[RequestRecord], thresholds: Sequence[tuple[str, float]]) -> float:
    """Good requests over offered requests (NaN when nothing was offered)."""
    if not records:
        return math.nan
    return float(good_mask(records, thresholds).mean())


def decide_attainment(
    objective: Objective, records: Sequence[RequestRecord], confidence: float
) -> ObjectiveResult:
    """PASS when the lower bound of attainment reaches ``min``, FAIL when the upper is under it.

    The bounds are the exact bounds of the scores' ``min``-quantile against 1, read as a
    share, at the correlation of the scores in send order (phases, episodes).
    """
    assert objective.min_value is not None  # validated by spec_gates
    in_order = sorted(records, key=lambda record: (record.episode, record.intended_s, record.id))
    ordered = failure_series(in_order)  # the send order's episodes and phases
    score = scores(in_order, objective.thresholds)
    offered, hits = score.size, int((score <= 1.0).sum())
    level = min(max(objective.min_value, 1e-9), 1.0 - 1e-9)
    dependence = quantile_dependence(score, level, ordered.episodes, ordered.phases)
    lower, upper = proportion_bounds(hits, offered, confidence, dependence)
    if lower >= objective.min_value:
        verdict, reason = Verdict.PASS, "lower bound at or above the minimum"
    elif upper < objective.min_value:
        verdict, reason = Verdict.FAIL, "upper bound under the minimum"
    else:
        verdict, reason = Verdict.INCONCLUSIVE, "the confidence interval straddles the minimum"
    reason = f"{hits}/{offered} offered requests good; {reason}"
    return ObjectiveResult(
        objective, verdict, hits / offered, lower, upper, offered, confidence,
        reason + dependence_note(dependence), n_effective=dependence.n_effective,
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class Goodput:
    """Good requests and their output tokens per second of one phase, for one objective."""

    label: str
    offered: int
    good: int
    good_rps: float
    good_output_tokens_per_s: float

    def to_json(self) -> dict[str, object]:
        return {
            "objective": self.label,
            "offered": self.offered,
            "good": self.good,
            "good_rps": self.good_rps,
            "good_output_tokens_per_s": self.good_output_tokens_per_s,
        }


def phase_goodput(
    records: Sequence[RequestRecord], objectives: Sequence[Objective], duration_s: float
) -> list[Goodput]:
    """Goodput of one phase's records for each attainment objective (none without one)."""
    rows = []
    for objective in objectives:
        if objective.metric != "attainment" or duration_s <= 0:
            continue
        good = good_mask(records, objective.thresholds)
        tokens = sum(
            record.output_tokens or 0 for record, hit in zip(records, good, strict=True) if hit
        )
        rows.append(
            Goodput(
                objective.label,
                len(records),
                int(good.sum()),
                float(good.sum()) / duration_s,
                tokens / duration_s,
            )
        )
    return rows


def goodput_lines(
    records: Sequence[RequestRecord], objectives: Sequence[Objective], duration_s: float
) -> list[str]:
    """The phase table's goodput lines, one per attainment objective."""
    return [
        f"    goodput {row.good_rps:.2f} good req/s, {row.good_output_tokens_per_s:.1f} good"
        f" output tok/s ({row.good}/{row.offered} good) for {row.label}"
        for row in phase_goodput(records, objectives, duration_s)
    ]
