"""How long threads of this process sat runnable but not running (preempted).

On a busy machine the scheduler leaves a runnable thread waiting for a core for tens of
milliseconds at a time: a read the client takes late by that much is the machine's
doing, not the driver's. Linux counts that wait per thread (field 2 of
``/proc/self/task/TID/schedstat``, nanoseconds). Timing tests compare against the truth
with their tolerance *plus* the run-queue wait of the threads involved during the
measured stretch, so an idle machine keeps the tight bound and a loaded one does not
fail on preemption. Where schedstat is missing the wait reads as 0 (the tight bound).
"""

from __future__ import annotations

import threading
from pathlib import Path
from types import TracebackType


def queued_ns(native_id: int) -> int:
    """Nanoseconds thread ``native_id`` of this process has waited runnable; 0 if unknown."""
    try:
        return int(Path(f"/proc/self/task/{native_id}/schedstat").read_text().split()[1])
    except (OSError, IndexError, ValueError):
        return 0


class RunQueueWait:
    """Run-queue wait of the calling thread and ``others`` (native ids) over a ``with``."""

    def __init__(self, *others: int) -> None:
        self._threads = (threading.get_native_id(), *others)
        self._start: list[int] = []
        self.seconds = 0.0

    def __enter__(self) -> RunQueueWait:
        self._start = [queued_ns(thread) for thread in self._threads]
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        ends = [queued_ns(thread) for thread in self._threads]
        waited = sum(max(end - start, 0) for start, end in zip(self._start, ends, strict=True))
        self.seconds = waited / 1e9
