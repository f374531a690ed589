"""How much of TTFT the server accounted for: per request first, then summed.

Shares are ratios of sums over the same requests (each request's queue wait, prefill and
unattributed rest add up to its own TTFT), so they are never a difference of percentiles.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_latency.records import RequestRecord


@dataclass(frozen=True, slots=True)
class Attribution:
    """TTFT of completed requests with server data, split by what the server reported."""

    completed: int  # ok requests in scope
    joined: int  # of those, with a server queue wait or prefill
    queue_share: float | None  # sum(queue_wait) / sum(ttft) over joined requests
    prefill_share: float | None
    unattributed_share: float | None
    sources: tuple[str, ...]


def attribute(records: Sequence[RequestRecord]) -> Attribution:
    ok = [record for record in records if record.ok and record.ttft_s is not None]
    joined = [record for record in ok if record.unattributed_s is not None]
    sources = tuple(sorted({record.server_source for record in joined if record.server_source}))
    total = sum(record.ttft_s or 0.0 for record in joined)
    if not joined or total <= 0:
        return Attribution(len(ok), len(joined), None, None, None, sources)
    queue = sum(record.queue_wait_s or 0.0 for record in joined)
    prefill = sum(record.prefill_s or 0.0 for record in joined)
    reports_queue = any(record.queue_wait_s is not None for record in joined)
    reports_prefill = any(record.prefill_s is not None for record in joined)
    return Attribution(
        completed=len(ok),
        joined=len(joined),
        queue_share=queue / total if reports_queue else None,
        prefill_share=prefill / total if reports_prefill else None,
        unattributed_share=sum(record.unattributed_s or 0.0 for record in joined) / total,
        sources=sources,
    )


def describe_attribution(attribution: Attribution) -> str:
    """One line: coverage and the split, naming what the server did not report."""
    if attribution.joined == 0:
        return f"server timings: none for {attribution.completed} completed requests"
    parts = []
    for name, share in (
        ("queue", attribution.queue_share),
        ("prefill", attribution.prefill_share),
        ("unattributed", attribution.unattributed_share),
    ):
        parts.append(f"{name} {'not reported' if share is None else f'{share:.0%}'}")
    return (
        f"server timings for {attribution.joined}/{attribution.completed} completed requests "
        f"({', '.join(attribution.sources)}); of their TTFT: {', '.join(parts)}"
    )
