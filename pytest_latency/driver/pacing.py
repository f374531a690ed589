"""Waiting for a planned instant on the monotonic clock, to well under a millisecond.

The drive's loop wakes its timers to the microsecond (:mod:`.precise_loop`), but a
woken thread still takes the kernel's wake-up latency (~0.1 ms on a quiet VM) to run,
so we sleep until ``SPIN_NS`` before the instant and yield to the loop (which keeps
reading sockets) for the rest; ``MAX_SPINS`` bounds that loop.

That last stretch keeps the loop's thread on its CPU (each yield is a zero-timeout
poll) without being work. It was 1.2 ms while asyncio's timers woke up to 2 ms late:
at 300 req/s a third of the wall time, and a thread that spins looks CPU-bound to the
scheduler, which then preempts it more readily on a busy host. With precise timers
0.3 ms is enough: through pytest at 10 req/s (busy host, three alternated pairs) p99
schedule lag 0.92-1.56 ms against 2.4-9.0 ms with 1.2 ms, and a fifth of the spin CPU.
:func:`spun_ns` counts it (per thread), so the client's load monitor can tell spinning
from saturation: only the yields that came straight back (``IDLE_ROUND_NS``), since
the loop reads sockets while the launcher yields, and that reading is work (counted as
spin, it hid a client at 97-98 % of its core at 1,000 req/s).
"""

from __future__ import annotations

import asyncio
import functools
import threading
import time
from collections.abc import Awaitable, Callable

import anyio
import anyio.lowlevel

SPIN_NS = 300_000
MAX_SPINS = 100_000
# A yield that came back within this found nothing else ready (a bare loop iteration
# takes 5-15 us here); a longer one ran other callbacks (reads), which are work, not spin.
IDLE_ROUND_NS = 30_000
# uvloop's timers are libuv's, whole milliseconds: ``call_later`` rounds the delay to the
# nearest millisecond and counts it from the loop's clock truncated to one, so a timer
# asked for an instant fires up to 0.5 ms after it (or 1.5 ms before). On such a loop
# the sleep asks for a whole number of milliseconds on that grid: to the last millisecond
# boundary before the spin (libuv's clock is CLOCK_MONOTONIC, as perf_counter's), one less
# when the clock is this close to the next boundary (libuv reads it again a moment later).
GRID_GUARD_NS = 50_000
_MS = 1_000_000
_spun = threading.local()
_ONE_PASS = functools.partial(asyncio.sleep, 0)  # what anyio's checkpoint does on asyncio
_timers = threading.local()


def set_coarse_timers(coarse: bool) -> None:
    """Whether this thread's loop has millisecond timers (uvloop): :func:`sleep_until`
    then sleeps on their grid."""
    _timers.coarse = coarse


def spun_ns() -> int:
    """Nanoseconds this thread has spent in the last stretch before planned instants."""
    total: int = getattr(_spun, "ns", 0)
    return total


async def sleep_until(planned_ns: int) -> None:
    """Return at ``planned_ns`` (a ``time.perf_counter_ns`` reading), or at once if past."""
    clock = time.perf_counter_ns
    now_ns = clock()
    delay_ns = planned_ns - now_ns  # from the absolute instant: no drift
    try:  # asyncio's own sleep: anyio asks sniffio for the loop on every call (a sixth of
        asyncio.get_running_loop()  # the driving thread at 1,000 req/s, in the spin)
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep
        pause: Callable[[], Awaitable[None]] = _ONE_PASS
    except RuntimeError:  # trio (the httpx path)
        sleep, pause = anyio.sleep, anyio.lowlevel.checkpoint
    if getattr(_timers, "coarse", False):
        now_ms, into_ns = divmod(now_ns, _MS)
        delay_ms = (planned_ns - SPIN_NS) // _MS - now_ms - (into_ns > _MS - GRID_GUARD_NS)
        if delay_ms > 0:
            await sleep(delay_ms / 1e3)
    elif delay_ns > SPIN_NS:
        await sleep((delay_ns - SPIN_NS) / 1e9)
    idle_ns = 0
    for _ in range(MAX_SPINS):  # the last stretch: yield to the loop, never block
        before_ns = clock()
        if before_ns >= planned_ns:
            break
        await pause()
        round_ns = clock() - before_ns
        if round_ns < IDLE_ROUND_NS:  # the loop had nothing else to run: pure spin
            idle_ns += round_ns
    _spun.ns = spun_ns() + idle_ns
