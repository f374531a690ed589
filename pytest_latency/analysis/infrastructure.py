"""Failures that are about the infrastructure, not latency: one error behind most requests.

A server that went away mid-run, a wrong model name or a missing token fail request
after request the same way. Their objectives then fail on ``inf`` latencies, which is
true but misleading: the run says nothing about latency. When one such error accounts
for a large share of the offered requests, the failure message says so first.
"""

from __future__ import annotations

import errno
import re
from collections import Counter
from collections.abc import Sequence

from pytest_latency.records import RequestRecord, Status

# Statuses that say the request never met a working server. Rejections (429/503) and
# timeouts are the server's answer under load, a latency matter, so they are not here.
INFRASTRUCTURE_STATUSES = frozenset(
    {Status.CONNECTION_ERROR, Status.HTTP_ERROR, Status.PROTOCOL_ERROR}
)
DOMINANT_SHARE = 0.5  # one error behind at least this share of the offered requests
_HTTP_STATUS = re.compile(r"HTTP (\d{3})")
_HINTS = {
    "404": "a wrong model name or URL?",
    "401": "missing or wrong credentials?",
    "403": "missing or wrong credentials?",
}


def infrastructure_headline(
    records: Sequence[RequestRecord], share: float = DOMINANT_SHARE
) -> str | None:
    """``infrastructure: 40 of 42 requests failed with connection refused — ...``, or None.

    None unless one error (same status, same text) failed at least ``share`` of the
    offered requests.
    """
    errors = Counter(
        (record.status, record.error or record.status.value)
        for record in records
        if record.status in INFRASTRUCTURE_STATUSES
    )
    if not errors:
        return None
    (status, error), count = errors.most_common(1)[0]
    if count < share * len(records):
        return None
    text, hint = _describe(status, error)
    return f"infrastructure: {count} of {len(records)} requests failed with {text}" + (
        f" — {hint}" if hint else ""
    )


def _describe(status: Status, error: str) -> tuple[str, str]:
    """The error as a reader says it, and what it suggests."""
    if status is Status.CONNECTION_ERROR:
        # The hot path says "[Errno 111] Connect call failed", httpx "Connection refused".
        refused = "refused" in error.lower() or f"[Errno {errno.ECONNREFUSED}]" in error
        return ("connection refused" if refused else error), "the server went away?"
    found = _HTTP_STATUS.match(error)
    if status is Status.HTTP_ERROR and found is not None:
        return error, _HINTS.get(found.group(1), "")
    return error, ""
