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
attainment >= m exactly when the m-quantile of the scores is <= 1. That quantile is
bounded like any latency percentile, by order statistics at the dependence of the
scores in send order (:func:`~pytest_latency.analysis.percentiles.quantile_dependence`):
the latencies carry the correlation, so a run with no misses still pays for the queue
its requests shared (the 0/1 miss series alone would look independent). The printed
bounds on the share are the same ranks read as shares.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_latency.analysis.dependence import Dependence
from pytest_latency.analysis.percentiles import dependent_ranks, quantile_dependence
from pytest_latency.analysis.samples import failure_series, record_value
from pytest_latency.analysis.sectioning import NO_SECTIONS, SectionBounds, section_bounds
from pytest_latency.analysis.verdict import (
    ObjectiveResult,
    Verdict,
    dependence_note,
    sections_note,
)
from pytest_latency.records import RequestRecord
from pytest_latency.spec.model import Objective

# Halvings of the search for the printed attainment bounds: 2^-20, about one in a million.
BISECTION_STEPS = 20


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
    """PASS when the scores' ``min``-quantile is bounded at or under 1, FAIL when over it.

    The bounds are :func:`~pytest_latency.analysis.percentiles.dependent_ranks` at the
    correlation of the scores in send order (phases, episodes); the printed attainment
    bounds are the same ranks read as shares (:func:`share_bounds`), so they agree.
    """
    assert objective.min_value is not None  # validated by spec_gates
    in_order = sorted(records, key=lambda record: (record.episode, record.intended_s, record.id))
    ordered = failure_series(in_order)  # the send order's episodes and phases
    score = scores(in_order, objective.thresholds)
    offered, hits = score.size, int((score <= 1.0).sum())
    level = min(max(objective.min_value, 1e-9), 1.0 - 1e-9)
    dependence = quantile_dependence(score, level, ordered.episodes, ordered.phases)
    decision = ShareDecision.of(score, hits, confidence, dependence, ordered.episodes)
    passed, failed = decision.passes(level), decision.fails(level)
    lower, upper = share_bounds(decision, (level, passed, failed))
    if passed:
        verdict, reason = Verdict.PASS, "lower bound at or above the minimum"
    elif failed:
        verdict, reason = Verdict.FAIL, "upper bound under the minimum"
    else:
        verdict, reason = Verdict.INCONCLUSIVE, "the confidence interval straddles the minimum"
    reason = f"{hits}/{offered} offered requests good; {reason}"
    return ObjectiveResult(
        objective, verdict, hits / offered, lower, upper, offered, confidence,
        reason + decision.note(level, passed, failed), n_effective=decision.n_effective(level),
    )  # fmt: skip


@dataclass(frozen=True, slots=True)
class ShareDecision:
    """The m-quantile test of the scores at any share m, as the verdict makes it.

    Independent scores (or several episodes) get the order-statistic ranks at the whole
    confidence. Otherwise a share passes (fails) when the ranks at half the error do, or
    when sectioning (:mod:`.sectioning`) at the other half bounds the scores' m-quantile
    under (over) 1: one union bound, as for latency percentiles.
    """

    scores: np.ndarray
    hits: int
    confidence: float
    dependence: Dependence
    sectioned: bool

    @classmethod
    def of(
        cls,
        scores: np.ndarray,
        hits: int,
        confidence: float,
        dependence: Dependence,
        episodes: np.ndarray | None,
    ) -> ShareDecision:
        several = episodes is not None and np.unique(episodes).size >= 2
        sectioned = not (dependence.independent or several)
        return cls(scores, hits, confidence, dependence, sectioned)

    @property
    def _rank_confidence(self) -> float:
        return 1.0 - (1.0 - self.confidence) / 2.0 if self.sectioned else self.confidence

    def _sections(self, m: float) -> SectionBounds:
        if not self.sectioned:
            return NO_SECTIONS
        return section_bounds(self.scores, m, self._rank_confidence, self.dependence.window)

    def passes(self, m: float) -> bool:
        upper_rank = dependent_ranks(self.scores.size, m, self._rank_confidence, self.dependence)[1]
        if upper_rank is not None and upper_rank <= self.hits:
            return True
        return self._sections(m).upper <= 1.0

    def fails(self, m: float) -> bool:
        lower_rank = dependent_ranks(self.scores.size, m, self._rank_confidence, self.dependence)[0]
        if lower_rank is not None and lower_rank > self.hits:
            return True
        return self._sections(m).lower > 1.0

    def n_effective(self, m: float) -> float:
        sectioned = self._sections(m).n_effective
        if math.isfinite(sectioned):
            return max(sectioned, self.dependence.n_effective)
        return self.dependence.n_effective

    def note(self, m: float, passed: bool, failed: bool) -> str:
        sections = self._sections(m)
        verdict = Verdict.PASS if passed else Verdict.FAIL if failed else Verdict.INCONCLUSIVE
        return sections_note(sections, verdict) or dependence_note(self.dependence)


def share_bounds(
    decision: ShareDecision, known: tuple[float, bool, bool] | None = None
) -> tuple[float, float]:
    """Bounds on the good share: the shares m whose m-quantile test the scores decide.

    lower = the largest m whose quantile bound passes; upper = the smallest m whose
    quantile bound fails. Both grow with m, so bisection finds them. ``known`` = (m,
    passed, failed) at one share already decided, which seeds the search so the printed
    bounds agree with that verdict.
    """
    low, high = 0.0, 1.0  # passes(low) or low == 0; not passes(high)
    fail_low, fail_high = 0.0, 1.0  # not fails(fail_low); fails(fail_high) or it is 1
    if known is not None:
        m, passed, failed = known
        low, high = (m, high) if passed else (low, m)
        fail_low, fail_high = (fail_low, m) if failed else (m, fail_high)
    for _ in range(BISECTION_STEPS):
        middle = (low + high) / 2.0
        low, high = (middle, high) if decision.passes(middle) else (low, middle)
        middle = (fail_low + fail_high) / 2.0
        fail_low, fail_high = (fail_low, middle) if decision.fails(middle) else (middle, fail_high)
    return low, fail_high


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
        scoped = [r for r in records if objective.service_class in (None, r.service_class)]
        good = good_mask(scoped, objective.thresholds)
        tokens = sum(
            record.output_tokens or 0 for record, hit in zip(scoped, good, strict=True) if hit
        )
        rows.append(
            Goodput(
                objective.label,
                len(scoped),
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
