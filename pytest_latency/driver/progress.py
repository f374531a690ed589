"""Progress of a run while it drives: sent, completed, in flight, time left.

A listener is called from a thread of its own every ``listener.interval_s`` seconds
(never more often than :data:`MIN_INTERVAL_S`), never from the event loop: the loop
only bumps two integers (requests launched, requests finished), and everything that
can take time (formatting, writing to a terminal or a full pipe) happens on the
poller's thread, which holds the GIL for microseconds per report. A listener that
raises is dropped for the rest of the run; the run itself never sees the error.
"""

from __future__ import annotations

import bisect
import logging
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Protocol

logger = logging.getLogger("pytest_latency.driver")

MIN_INTERVAL_S = 1.0  # a poll is cheap, but a run gains nothing from more often
JOIN_TIMEOUT_S = 5.0  # a listener stuck writing must not hold the run's end


@dataclass(frozen=True, slots=True)
class Progress:
    """A snapshot of one run. ``completed`` is None when workers count it out of sight."""

    planned: int  # requests in the plan
    sent: int  # requests launched so far (with workers: due by the schedule)
    completed: int | None  # requests that ended, whatever their status
    elapsed_s: float  # since time zero
    duration_s: float  # the plan's duration; requests may run on after it
    final: bool = False  # the last report of the run (it has ended)

    @property
    def in_flight(self) -> int | None:
        return None if self.completed is None else self.sent - self.completed

    @property
    def time_left_s(self) -> float:
        """Until the last planned send; in-flight requests may take longer."""
        return max(0.0, self.duration_s - self.elapsed_s)


class ProgressListener(Protocol):
    """Receives progress reports; ``interval_s`` is how often it wants them."""

    @property
    def interval_s(self) -> float: ...

    def __call__(self, progress: Progress) -> None: ...


ProgressReader = Callable[[], Progress | None]  # None: not started (still warming up)


@contextmanager
def reporting(read: ProgressReader, listener: ProgressListener | None) -> Iterator[None]:
    """Report ``read()`` to ``listener`` from a thread while the block runs, then once
    more with ``final=True`` (when the run had started)."""
    if listener is None:
        yield
        return
    stop = threading.Event()
    interval_s = max(MIN_INTERVAL_S, float(listener.interval_s))
    alive = [True]

    def tell(progress: Progress) -> None:
        if not alive[0]:
            return
        try:
            listener(progress)
        except Exception:  # the run matters more than its progress line
            alive[0] = False
            logger.warning("progress listener failed; no more progress this run", exc_info=True)

    def poll() -> None:
        while not stop.wait(interval_s):
            progress = read()
            if progress is not None:
                tell(progress)

    thread = threading.Thread(target=poll, name="pytest-latency-progress", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(JOIN_TIMEOUT_S)
        last = read()
        if last is not None and not thread.is_alive():
            tell(replace(last, final=True))


class ScheduleProgress:
    """Progress read from the plan's schedule, for runs whose counters live in workers.

    ``sent`` is what the schedule has due by now (an open-loop generator sends on
    schedule; the run's health check says whether it did); completions are not known.
    """

    def __init__(self, intended_s: list[float], duration_s: float) -> None:
        self._times = sorted(intended_s)
        self._duration_s = duration_s
        self.t0_ns = 0  # time zero on perf_counter_ns, once chosen

    def __call__(self) -> Progress | None:
        if not self.t0_ns:
            return None
        elapsed_s = max(0.0, (time.perf_counter_ns() - self.t0_ns) / 1e9)
        return Progress(
            planned=len(self._times),
            sent=bisect.bisect_right(self._times, elapsed_s),
            completed=None,
            elapsed_s=elapsed_s,
            duration_s=self._duration_s,
        )
