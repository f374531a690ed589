"""Retries of rejected requests, per phase (workload ``retry:``, docs/retries.md).

A retried request is one record: its ``attempts``, the last ``Retry-After`` it was
given, and the time it waited between attempts. The error rate counts it as failed only
when its last attempt failed; this summary says how much retrying it took.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_latency.records import RequestRecord


def retry_summary(records: Sequence[RequestRecord]) -> dict[str, float | int] | None:
    """Requests retried, retries made, seconds waited, and how many failed after all their
    attempts; None when no request was retried."""
    retried = [record for record in records if record.attempts > 1]
    if not retried:
        return None
    return {
        "retried": len(retried),
        "retries": sum(record.attempts - 1 for record in retried),
        "wait_s": sum(record.retry_wait_s for record in retried),
        "failed_after_retries": sum(1 for record in retried if not record.ok),
    }


def retry_line(records: Sequence[RequestRecord]) -> list[str]:
    """The phase table's line about retries (none when nothing was retried)."""
    summary = retry_summary(records)
    if summary is None:
        return []
    return [
        f"    retried {summary['retried']} rejected requests {summary['retries']} times,"
        f" waiting {summary['wait_s']:.1f}s in all (Retry-After honoured, counted in their"
        f" latency); {summary['failed_after_retries']} failed after every attempt"
    ]
