"""SLO attainment and goodput: the share of offered requests that were good, with bounds.

A request is **good** when it completed (status ``ok``) and meets every threshold of the
objective: its TTFT, TPOT, median ITL and e2e (each from the planned send time) at or
under the limit. TPOT and ITL are undefined for a one-token answer; such a request has
no inter-token interval to be slow, so it meets those thresholds. Every other request is
a **miss**: errors, timeouts, rejections, requests cancelled before sending and streams
dropped midway. The denominator is every *offered* request, so dropping a request can
only turn a hit into a miss: attainment never rises by losing requests.

The bound is the correlation-aware Clopper-Pearson bound of the error rate
(:func:`~pytest_latency.analysis.verdict.proportion_bounds`) on the 0/1 miss series in
send order: phases are strata and repeated episodes are clusters (:mod:`.dependence`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_latency.analysis.dependence import count_dependence
from pytest_latency.analysis.samples import failure_series, record_value
from pytest_latency.analysis.verdict import (
    ObjectiveResult,
    Verdict,
    dependence_note,
    proportion_bounds,
)
from pytest_latency.records import RequestRecord
from pytest_latency.spec.model import Objective


def good_mask(
    records: Sequence[RequestRecord], thresholds: Sequence[tuple[str, float]]
) -> np.ndarray:
    """True for each request (in the order given) that completed and meets every threshold."""
    good = np.fromiter((record.ok for record in records), dtype=bool, count=len(records))
    for metric, limit in thresholds:
        values = np.fromiter(
            (
                math.nan if (value := record_value(record, metric)) is None else value
                for record in records
            ),
            dtype=np.float64,
            count=len(records),
        )
        # NaN: undefined for a completed request (no inter-token gap), not a miss.
        good &= np.isnan(values) | (values <= limit)
    return good


def attainment(records: Sequence[RequestRecord], thresholds: Sequence[tuple[str, float]]) -> float:
    """Good requests over offered requests (NaN when nothing was offered)."""
    if not records:
        return math.nan
    return float(good_mask(records, thresholds).mean())


def decide_attainment(
    objective: Objective, records: Sequence[RequestRecord], confidence: float
) -> ObjectiveResult:
    """PASS when the lower bound of attainment reaches ``min``, FAIL when the upper is under it."""
    assert objective.min_value is not None  # validated by spec_gates
    in_order = sorted(records, key=lambda record: (record.episode, record.intended_s, record.id))
    ordered = failure_series(in_order)  # the send order's episodes and phases
    good = good_mask(in_order, objective.thresholds)
    offered, hits = good.size, int(good.sum())
    misses = (~good).astype(np.float64)
    dependence = count_dependence(misses, ordered.episodes, None, ordered.phases)
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
