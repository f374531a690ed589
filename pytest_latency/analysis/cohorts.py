"""Comparable cohorts: requests grouped by phase and by input and output length.

A longer prompt increases prefill work whatever the queue does, and averages over a
changed mix move for no reason, so results are also reported per cohort. Default
buckets (tokens): input 1-256, 257-1024, 1025-4096, >4096; output 1-64, 65-256,
257-1024, >1024. Both are the *planned* lengths (prompt length and output cap): a
request's cohort is fixed before it is sent, so a server that stops early cannot move
its slow requests into another cohort. A multi-turn session's turns also go by turn
index (``|turn:2``): a later turn carries the conversation so far.

Summaries are also split by prefix-cache hit, as the server reported it (``cached_tokens
> 0``; unknown when it reported nothing): a hit skips most of the prefill, so hits and
misses are different populations. That split is an outcome, not a plan, so it stays out
of :func:`cohort_key` (and of the workload-mix comparison).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_latency.analysis.percentiles import percentile
from pytest_latency.analysis.samples import metric_samples
from pytest_latency.records import RequestRecord

INPUT_EDGES: tuple[int, ...] = (256, 1024, 4096)
OUTPUT_EDGES: tuple[int, ...] = (64, 256, 1024)


def bucket(value: int | None, edges: Sequence[int]) -> str:
    """The bucket label of ``value``: ``1-256``, ``257-1024``, ..., ``>4096``."""
    if value is None:
        return "unknown"
    low = 1
    for edge in edges:
        if value <= edge:
            return f"{low}-{edge}"
        low = edge + 1
    return f">{edges[-1]}"


def output_length(record: RequestRecord) -> int | None:
    """The planned output length (the request's ``max_tokens``)."""
    return record.max_tokens


def cohort_key(record: RequestRecord) -> str:
    """``phase|in:257-1024|out:65-256`` (``|turn:N`` for a session's turn): the cohort a
    request belongs to."""
    key = (
        f"{record.phase}|in:{bucket(record.input_tokens, INPUT_EDGES)}"
        f"|out:{bucket(output_length(record), OUTPUT_EDGES)}"
    )
    return key if record.turn is None else f"{key}|turn:{record.turn}"


def cache_hit(record: RequestRecord) -> bool | None:
    """Whether the server served part of the prompt from its prefix cache (None: unknown)."""
    return None if record.cached_tokens is None else record.cached_tokens > 0


def cohort_counts(records: Sequence[RequestRecord]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for record in records:
        key = cohort_key(record)
        counts[key] = counts.get(key, 0) + 1
    return counts


def in_range(value: int | None, bounds: tuple[int, int] | None) -> bool:
    """Whether ``value`` lies in the inclusive ``bounds`` (no bounds: always)."""
    if bounds is None:
        return True
    return value is not None and bounds[0] <= value <= bounds[1]


@dataclass(frozen=True, slots=True)
class CohortSummary:
    key: str  # cohort_key
    offered: int
    completed: int
    failed: int
    ttft_p50_s: float
    ttft_p95_s: float
    itl_p50_s: float
    e2e_p95_s: float
    cache_hit: bool | None = None  # the prefix-cache split (None: not reported)

    @property
    def turn(self) -> int | None:
        last = self.key.rsplit("|", 1)[-1]
        return int(last.removeprefix("turn:")) if last.startswith("turn:") else None

    def to_json(self) -> dict[str, object]:
        phase, input_bucket, output_bucket = self.key.split("|")[:3]
        values = {
            "ttft_p50_s": self.ttft_p50_s,
            "ttft_p95_s": self.ttft_p95_s,
            "itl_p50_s": self.itl_p50_s,
            "e2e_p95_s": self.e2e_p95_s,
        }
        return {
            "phase": phase,
            "input_tokens": input_bucket.removeprefix("in:"),
            "output_tokens": output_bucket.removeprefix("out:"),
            "turn": self.turn,
            "cache_hit": self.cache_hit,
            "offered": self.offered,
            "completed": self.completed,
            "failed": self.failed,
            **{name: (value if math.isfinite(value) else None) for name, value in values.items()},
        }


def summarise_cohorts(records: Sequence[RequestRecord]) -> list[CohortSummary]:
    """One summary per non-empty cohort and cache-hit split, in first-seen order; failures
    count as in verdicts."""
    groups: dict[tuple[str, bool | None], list[RequestRecord]] = {}
    for record in records:
        groups.setdefault((cohort_key(record), cache_hit(record)), []).append(record)
    summaries = []
    for (key, hit), members in groups.items():
        ok = [record for record in members if record.ok]
        unsent = sum(record.never_sent for record in members)  # neither failed nor a sample
        ttft = metric_samples(members, "ttft")
        summaries.append(
            CohortSummary(
                key=key,
                offered=len(members),
                completed=len(ok),
                failed=len(members) - len(ok) - unsent,
                ttft_p50_s=percentile(ttft, 50),
                ttft_p95_s=percentile(ttft, 95),
                itl_p50_s=percentile(metric_samples(members, "itl"), 50),
                e2e_p95_s=percentile(metric_samples(members, "e2e"), 95),
                cache_hit=hit,
            )
        )
    return summaries
