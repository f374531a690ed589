"""Per-request samples of one metric, taken from records (per request first, summary second).

**The request is the unit.** Every metric has one value per request, so ``n`` is a count
of requests: inter-token latency is summarised per request first (``itl``: the
request's median gap, what a reader sees as its streaming pace; ``itl_max``: its worst
gap, a stall) and never pooled, because the gaps of one request share its batch.

**Failures count the same way everywhere.** A request that failed (any status but ok)
never delivered what the metric measures, so it enters every latency sample as ``inf``:
the verdicts, the phase tables and ``LatencyResult.percentile`` all see the same
values. A completed request without the value (a one-token answer has no gap; the
server reported no queue wait) is left out. When no completed request has a value at
all (the server reports no queue wait), the sample is empty rather than all ``inf``.
A completed request that streamed reasoning but never an answer token has no end to
its ``ttfo`` or ``reasoning``: those enter as ``inf``, not left out.

**A request never sent was never offered.** One a stop rule, a decided capacity probe,
the run's end or a lost generator kept back (``cancelled`` without a send instant,
:attr:`RequestRecord.never_sent`) is counted as planned but is neither a sample nor an
error: it is left out of every series here and of the error rate's denominator. A
request sent and then cancelled (cut off mid-stream) was offered and did not complete:
it fails like any other.

Samples are in send order (``intended_s``), with each request's episode, because the
bounds measure correlation along that order.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import pairwise

import numpy as np

from pytest_latency.analysis.token_gaps import token_gaps
from pytest_latency.gaps import GapStatistic, gap_statistics
from pytest_latency.records import RequestRecord
from pytest_latency.spec.gates import GATE_METRICS
from pytest_latency.spec.model import METRICS

LATENCY_METRICS: tuple[str, ...] = tuple(
    metric for metric in METRICS if metric != "error_rate" and metric not in GATE_METRICS
)

# Reported by the server (or derived from its reports), not measured by the client.
SERVER_METRICS = frozenset({"queue_wait", "prefill", "decode", "after_queue", "unattributed"})
# Per-request values, by the record attribute that holds them (ITL is special: a list).
_ATTRIBUTES = {
    "ttft": "ttft_s",
    "ttfo": "ttfo_s",
    "reasoning": "reasoning_s",
    "e2e": "e2e_s",
    "tpot": "tpot_s",
    "queue_wait": "queue_wait_s",
    "prefill": "prefill_s",
    "decode": "decode_s",
    "after_queue": "after_queue_s",
    "unattributed": "unattributed_s",
}
_GAP_STATISTICS: dict[str, GapStatistic] = {"itl": "median", "itl_max": "max"}
# Metrics that end at the first answer token: unbounded for a request that streamed
# (reasoning) but never answered.
_ANSWER_METRICS = frozenset({"ttfo", "reasoning"})


@dataclass(frozen=True, slots=True)
class Series:
    """One value per request (send order), its episode and its phase (as a code)."""

    values: np.ndarray
    episodes: np.ndarray
    phases: np.ndarray | None = None

    @property
    def n(self) -> int:
        return int(self.values.size)


def sent_records(records: Iterable[RequestRecord]) -> list[RequestRecord]:
    """The records of requests offered to the server: all but the never-sent ones."""
    return [record for record in records if not record.never_sent]


def sent_times(records: Iterable[RequestRecord]) -> np.ndarray:
    """The intended send times of the requests offered to the server, in send order (the
    order of :func:`failure_series`; an episode's clock may restart)."""
    return np.fromiter((r.intended_s for r in _send_order(records)), dtype=np.float64)


def _send_order(records: Iterable[RequestRecord]) -> list[RequestRecord]:
    ordered = sent_records(records)
    if any(b.intended_s < a.intended_s for a, b in pairwise(ordered)):
        ordered.sort(key=lambda record: (record.episode, record.intended_s, record.id))
    return ordered


def request_gap_statistic(records: Sequence[RequestRecord], kind: GapStatistic) -> np.ndarray:
    """Each record's median (or largest) gap: from its gaps (per token where the server
    said how many tokens each chunk held), or the summary a baseline kept."""
    return gap_statistics(
        [token_gaps(record) for record in records],
        [record.itl_summary for record in records],
        kind,
    )


def _completed_values(records: Sequence[RequestRecord], metric: str) -> np.ndarray:
    """The metric of each record as if it completed; NaN where undefined."""
    if metric in _GAP_STATISTICS:
        return request_gap_statistic(records, _GAP_STATISTICS[metric])
    attribute = _ATTRIBUTES[metric]
    values = np.fromiter(
        (
            math.nan if (value := getattr(record, attribute)) is None else value
            for record in records
        ),
        dtype=np.float64,
        count=len(records),
    )
    if metric in _ANSWER_METRICS:
        # An answer that never started (reasoning cut off by max_tokens) waited forever.
        unanswered = np.fromiter(
            (r.first_token_s is not None and r.ttfo_s is None for r in records),
            dtype=bool,
            count=len(records),
        )
        values[unanswered] = math.inf
    return values


def metric_series(records: Iterable[RequestRecord], metric: str) -> Series:
    """``metric`` per request in send order: failed requests ``inf``, undefined and
    never-sent ones left out."""
    if metric not in LATENCY_METRICS:
        raise ValueError(f"unknown latency metric {metric!r}; one of {', '.join(LATENCY_METRICS)}")
    ordered = _send_order(records)
    values = _completed_values(ordered, metric)
    failed = np.fromiter((not record.ok for record in ordered), dtype=bool, count=len(ordered))
    values[failed] = math.inf
    keep = ~np.isnan(values)
    if metric in SERVER_METRICS and not (keep & ~failed).any():
        keep[:] = False  # the server never reported it: no sample, not one of all-inf
    episodes, phases = _episodes(ordered), _phases(ordered)
    return Series(values[keep], episodes[keep], phases[keep])


def metric_samples(records: Iterable[RequestRecord], metric: str) -> np.ndarray:
    """All per-request values of ``metric`` (send order; failed requests as ``inf``,
    never-sent ones left out)."""
    return metric_series(records, metric).values


def _episodes(ordered: Sequence[RequestRecord]) -> np.ndarray:
    return np.fromiter((r.episode for r in ordered), dtype=np.int64, count=len(ordered))


def _phases(ordered: Sequence[RequestRecord]) -> np.ndarray:
    codes: dict[str, int] = {}
    return np.fromiter(
        (codes.setdefault(r.phase, len(codes)) for r in ordered), dtype=np.int64, count=len(ordered)
    )


def record_value(record: RequestRecord, metric: str) -> float | None:
    """One request's value of ``metric``: ``inf`` where it failed, None where undefined
    or never sent."""
    if record.never_sent:
        return None
    if not record.ok:
        return math.inf
    value = float(_completed_values([record], metric)[0])
    return None if math.isnan(value) else value


def failure_series(records: Iterable[RequestRecord]) -> Series:
    """1.0 for each failed request, 0.0 for each completed one, in send order (the
    never-sent are neither)."""
    ordered = _send_order(records)
    failed = np.fromiter((0.0 if r.ok else 1.0 for r in ordered), dtype=np.float64)
    return Series(failed, _episodes(ordered), _phases(ordered))


def error_counts(records: Sequence[RequestRecord]) -> tuple[int, int]:
    """(failed, sent): failed is any status but ok, of the requests sent (the never-sent
    are neither failed nor counted)."""
    sent = sent_records(records)
    return sum(1 for record in sent if not record.ok), len(sent)
