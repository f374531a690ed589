"""Waiting for a planned instant on the monotonic clock, to well under a millisecond.

The event loop's timers wake up to 1 ms late (epoll's timeout is in whole ms, rounded
up), so we sleep until ``SPIN_NS`` before the instant and yield to the loop (which
keeps reading sockets) for the rest; ``MAX_SPINS`` bounds that loop.

That last stretch keeps the loop's thread on its CPU (each yield is a zero-timeout
poll) without being work: above ~830 req/s the sends are closer than ``SPIN_NS`` and
the thread spins all the time while it still has room to read. :func:`spun_ns` counts
it (per thread), so the client's load monitor can tell spinning from saturation.
"""

from __future__ import annotations

import threading
import time

import anyio
import anyio.lowlevel

SPIN_NS = 1_200_000
MAX_SPINS = 100_000
_spun = threading.local()


def spun_ns() -> int:
    """Nanoseconds this thread has spent in the last stretch before planned instants."""
    total: int = getattr(_spun, "ns", 0)
    return total


async def sleep_until(planned_ns: int) -> None:
    """Return at ``planned_ns`` (a ``time.perf_counter_ns`` reading), or at once if past."""
    clock = time.perf_counter_ns
    delay_ns = planned_ns - clock()  # from the absolute instant: no drift
    if delay_ns > SPIN_NS:
        await anyio.sleep((delay_ns - SPIN_NS) / 1e9)
    started_ns = clock()
    for _ in range(MAX_SPINS):  # the last stretch: yield to the loop, never block
        if clock() >= planned_ns:
            break
        await anyio.lowlevel.checkpoint()
    _spun.ns = spun_ns() + (clock() - started_ns)
