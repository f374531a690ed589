"""Waits for a ``max_concurrency`` slot, per phase (docs/specs.md "Concurrency cap").

Under a cap, a request whose planned send time finds every slot busy waits, FIFO, for
one; that wait is part of its latency (measured from the planned send time) and is
reported here on its own so that a slow server and a tight cap can be told apart.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pytest_latency.records import RequestRecord


def slot_wait_summary(records: Sequence[RequestRecord]) -> dict[str, float | int] | None:
    """Waits of the phase's sent requests: count that waited, p50, p95, max (None: no cap)."""
    waits = np.array([r.slot_wait_s for r in records if r.slot_wait_s is not None])
    if waits.size == 0:
        return None
    return {
        "waited": int((waits > 0.001).sum()),  # under 1 ms is scheduling noise, not a wait
        "p50_s": float(np.percentile(waits, 50)),
        "p95_s": float(np.percentile(waits, 95)),
        "max_s": float(waits.max()),
    }


def slot_wait_line(records: Sequence[RequestRecord]) -> list[str]:
    """The phase table's line about slot waits (none without a cap)."""
    summary = slot_wait_summary(records)
    if summary is None:
        return []
    return [
        f"    waited for a max_concurrency slot: {summary['waited']} requests,"
        f" p50 {summary['p50_s'] * 1e3:.1f}ms, p95 {summary['p95_s'] * 1e3:.1f}ms,"
        f" max {summary['max_s'] * 1e3:.1f}ms (counted in their latency)"
    ]
