"""Per-request samples of one metric, taken from records (per request first, summary second).

Failed requests count against latency objectives: a request that never produced a first
token or never finished has, for the user, an unbounded TTFT and end-to-end latency, so it
enters those samples as ``inf`` (never silently dropped, as most benchmarks do). Metrics the
server reports (queue wait, prefill, decode) only exist where the server reported them.
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable, Sequence

import numpy as np

from pytest_latency.records import RequestRecord, Status
from pytest_latency.spec import METRICS

LATENCY_METRICS: tuple[str, ...] = tuple(metric for metric in METRICS if metric != "error_rate")
# Metrics a failed request counts against (as an unbounded value).
_FAILURE_COUNTS_AGAINST = frozenset({"ttft", "e2e"})


def metric_samples(records: Iterable[RequestRecord], metric: str) -> np.ndarray:
    """All samples of ``metric``: one per request, except ITL (every gap of every request)."""
    if metric not in LATENCY_METRICS:
        raise ValueError(f"unknown latency metric {metric!r}; one of {', '.join(LATENCY_METRICS)}")
    if metric == "itl":
        gaps = [record.itl_s for record in records if record.ok and len(record.itl_s)]
        if not gaps:
            return np.empty(0, dtype=np.float64)
        return np.concatenate([np.asarray(gap, dtype=np.float64) for gap in gaps])
    if metric in _CLIENT_INSTANTS:
        return _client_interval(records, _CLIENT_INSTANTS[metric])
    values = [record_value(record, metric) for record in records]
    return np.asarray([value for value in values if value is not None], dtype=np.float64)


# The hot metrics of summaries, extracted in one vectorised pass (1M records in ~0.2 s).
_CLIENT_INSTANTS = {"ttft": "first_token_s", "e2e": "end_s"}


def _client_interval(records: Iterable[RequestRecord], instant: str) -> np.ndarray:
    ok = Status.OK
    attribute = operator.attrgetter(instant)
    values = np.fromiter(
        (
            (math.nan if (at := attribute(r)) is None else at - r.intended_s)
            if r.status is ok
            else math.inf
            for r in records
        ),
        dtype=np.float64,
    )
    return values[~np.isnan(values)]


# Per-request values, by the record attribute that holds them (ITL is special: a list).
_ATTRIBUTES = {
    "ttft": "ttft_s",
    "e2e": "e2e_s",
    "tpot": "tpot_s",
    "queue_wait": "queue_wait_s",
    "prefill": "prefill_s",
    "decode": "decode_s",
    "after_queue": "after_queue_s",
    "unattributed": "unattributed_s",
}


def record_value(record: RequestRecord, metric: str) -> float | None:
    """One request's value of ``metric`` (ITL: its largest gap); ``inf`` where it failed."""
    if not record.ok:
        return math.inf if metric in _FAILURE_COUNTS_AGAINST else None
    if metric == "itl":
        return float(max(record.itl_s)) if len(record.itl_s) else None
    value: float | None = getattr(record, _ATTRIBUTES[metric])
    return value


def error_counts(records: Sequence[RequestRecord]) -> tuple[int, int]:
    """(failed, offered): failed is any status but ok."""
    failed = sum(1 for record in records if not record.ok)
    return failed, len(records)
