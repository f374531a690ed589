"""The client's own load while it drives: its CPU use and its event loop's lag.

The load generator is the instrument. Schedule lag says a send went out late; it does
not say why. :class:`LoopMonitor` runs beside the launcher and records two more things:

- **event-loop lag**: a small task asks to wake every ``interval_s`` and notes how late
  it woke. Anything that holds the loop (a burst of chunks, a garbage collection, a
  slow callback) shows here whether or not a send was due at that instant. On the
  drive's loop timers wake when due (:mod:`.precise_loop`); on asyncio's stock epoll
  loop this lag would include 0-2 ms of timeout rounding (a constant ~2.1 ms p99 at
  10 req/s), not stalls.
- **client CPU**: the driving thread's CPU time (``time.thread_time``) against wall
  time, over the whole drive and per one-second window, less the time it spun to
  planned instants (:func:`.pacing.spun_ns`: on the CPU but free to read). A driving
  thread busy for its whole core could not have kept its schedule: its own queueing is
  in every latency, so a run with a saturated client is invalid with that reason
  (:func:`pytest_latency.analysis.health.check_generator`).

What it measures is a :class:`.client_load.ClientLoad` (light: analysis imports it).
"""

from __future__ import annotations

import math
import time
from array import array
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import anyio

from pytest_latency.driver.client_load import ClientLoad
from pytest_latency.driver.pacing import spun_ns

DEFAULT_INTERVAL_S = 0.010  # 100 wake-ups a second: ~0.2 % of a core, 10 ms resolution
WINDOW_S = 1.0  # the CPU share is also kept per window of this length


def _p99(values: array[float]) -> float | None:
    if not values:
        return None
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, math.ceil(0.99 * len(ordered)) - 1)]


class LoopMonitor:
    """Run :meth:`watch` as a task beside the drive; :meth:`stop` returns the load.
    :func:`monitored` does both around a block."""

    def __init__(self, interval_s: float = DEFAULT_INTERVAL_S) -> None:
        self.interval_s = interval_s
        self._lags: array[float] = array("d")
        self._windows: list[float] = []  # CPU share of each completed window
        self._started_wall = 0.0
        self._started_cpu = 0.0
        self._started_spin_ns = 0
        self._running = False
        self.load: ClientLoad | None = None  # set by monitored() when its block ends

    def begin(self) -> None:
        """Start the clocks (on the loop's thread); :meth:`watch` may start later."""
        self._started_wall, self._started_cpu = time.perf_counter(), time.thread_time()
        self._started_spin_ns = spun_ns()
        self._running = True

    async def watch(self) -> None:
        """Wake every ``interval_s`` until stopped, noting lateness and CPU per window."""
        clock, cpu = time.perf_counter, time.thread_time
        if not self._running:
            self.begin()
        window_wall, window_cpu = self._started_wall, self._started_cpu
        due = clock()
        while self._running:
            due += self.interval_s
            await anyio.sleep(max(0.0, due - clock()))
            now = clock()
            self._lags.append(max(0.0, now - due))
            due = max(due, now - self.interval_s)  # after a long hold, no burst of catch-up
            if now - window_wall >= WINDOW_S:
                now_cpu = cpu()
                self._windows.append((now_cpu - window_cpu) / (now - window_wall))
                window_wall, window_cpu = now, now_cpu

    def stop(self) -> ClientLoad | None:
        """End the watch (call on the loop's thread); None if it never started."""
        if not self._running:
            return None
        self._running = False
        wall_s = time.perf_counter() - self._started_wall
        cpu_s = time.thread_time() - self._started_cpu
        share = cpu_s / wall_s if wall_s > 0 else 0.0
        return ClientLoad(
            wall_s=wall_s,
            cpu_s=cpu_s,
            busiest_window_share=max(self._windows, default=share),
            loop_lag_p99_s=_p99(self._lags),
            loop_lag_max_s=max(self._lags, default=None),
            wakeups=len(self._lags),
            spin_s=(spun_ns() - self._started_spin_ns) / 1e9,
        )


@asynccontextmanager
async def monitored(interval_s: float = DEFAULT_INTERVAL_S) -> AsyncIterator[LoopMonitor]:
    """Watch the loop while the block runs; the monitor's ``load`` is set when it ends
    (also when it ends by an exception or cancellation)."""
    monitor = LoopMonitor(interval_s)
    monitor.begin()
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(monitor.watch)
        try:
            yield monitor
        finally:
            monitor.load = monitor.stop()
            tasks.cancel_scope.cancel()
