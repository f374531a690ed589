"""A bounded, thread-safe store of server timings keyed by trace id, with a bounded wait.

Servers batch their spans (vLLM exports seconds after a request ends), so the join
waits: :meth:`TimingStore.wait_for` returns when every requested trace has arrived and
none of them changed for ``settle_s`` (late spans of the same trace still merge), or
when ``grace_s`` has passed, whichever is first. Never longer.
"""

from __future__ import annotations

import math
import threading
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass

from pytest_latency.telemetry.packed import pack, unpack
from pytest_latency.telemetry.timings import ServerTimings

__all__ = ("DEFAULT_MAX_FOREIGN", "DEFAULT_MAX_TRACES", "DEFAULT_SETTLE_S", "TimingStore")

DEFAULT_MAX_TRACES = 1_000_000
#: Trace ids kept that are not the run's own (when the run's prefix is known).
DEFAULT_MAX_FOREIGN = 20_000
#: Quiet time after the last requested trace arrived before :meth:`wait_for` returns.
DEFAULT_SETTLE_S = 0.25


@dataclass(slots=True)
class _Watch:
    ids: frozenset[str]
    missing: set[str]
    last_change: float


class TimingStore:
    """Timings per trace id. Updates merge (first value per field wins).

    At most ``max_traces`` distinct trace ids are kept; spans for further new trace ids
    are dropped and counted in :attr:`traces_dropped` (updates to kept ids still merge).

    ``own_prefix``: the hex start of the run's own trace ids (the driver makes them so).
    Then the store keeps two budgets: ``max_traces`` for the run's own ids and
    ``max_foreign`` for any other, so spans from outside the run (a flood of junk ids)
    can never take the room of the run's own.
    """

    def __init__(
        self,
        max_traces: int = DEFAULT_MAX_TRACES,
        *,
        own_prefix: str | None = None,
        max_foreign: int = DEFAULT_MAX_FOREIGN,
    ) -> None:
        if max_traces < 1:
            raise ValueError("max_traces must be at least 1")
        self._max_traces = max_traces
        self._own_prefix = own_prefix
        self._max_foreign = max_foreign
        self._counts = [0, 0]  # stored ids: [foreign, own]
        self._items: dict[str, bytes] = {}  # packed: no work for the GC (see .packed)
        self._cond = threading.Condition()
        self._watches: list[_Watch] = []
        self._last_add = -math.inf
        self._dropped = 0

    def __len__(self) -> int:
        with self._cond:
            return len(self._items)

    @property
    def traces_dropped(self) -> int:
        """Trace ids not stored because the store was full."""
        with self._cond:
            return self._dropped

    def add(self, timings: Iterable[ServerTimings]) -> None:
        """Merge ``timings`` in and wake waiters."""
        with self._cond:
            now = time.monotonic()
            touched: list[str] = []
            for item in timings:
                known = self._items.get(item.trace_id)
                if known is None:
                    own = self._is_own(item.trace_id)
                    if self._counts[own] >= (self._max_traces if own else self._max_foreign):
                        self._dropped += 1
                        continue
                    self._counts[own] += 1
                merged = item if known is None else unpack(item.trace_id, known).merged(item)
                self._items[item.trace_id] = pack(merged)
                touched.append(item.trace_id)
            if not touched:
                return
            self._last_add = now
            for watch in self._watches:
                hits = [tid for tid in touched if tid in watch.ids]
                if hits:
                    watch.missing.difference_update(hits)
                    watch.last_change = now
            self._cond.notify_all()

    def _is_own(self, trace_id: str) -> bool:
        prefix = self._own_prefix
        return prefix is None or trace_id.startswith(prefix)

    def get(self, trace_id: str) -> ServerTimings | None:
        """The timings stored for one trace id, if any."""
        with self._cond:
            data = self._items.get(trace_id)
            return None if data is None else unpack(trace_id, data)

    def wait_for(
        self,
        trace_ids: Collection[str],
        grace_s: float,
        settle_s: float = DEFAULT_SETTLE_S,
    ) -> dict[str, ServerTimings]:
        """Timings for ``trace_ids`` that arrived within the grace period.

        Returns as soon as all are present and quiet for ``settle_s``; at the latest
        after ``grace_s`` seconds (measured from the call), with whatever is there.
        """
        wanted = frozenset(trace_ids)
        if not wanted:
            return {}
        deadline = time.monotonic() + max(0.0, grace_s)
        settle = max(0.0, settle_s)
        with self._cond:
            watch = _Watch(
                ids=wanted,
                missing={tid for tid in wanted if tid not in self._items},
                last_change=self._last_add,
            )
            self._watches.append(watch)
            try:
                self._wait(watch, deadline, settle)
                return {tid: unpack(tid, self._items[tid]) for tid in wanted if tid in self._items}
            finally:
                self._watches.remove(watch)

    def _wait(self, watch: _Watch, deadline: float, settle: float) -> None:
        while True:
            now = time.monotonic()
            if now >= deadline:
                return
            if watch.missing:
                wake = deadline
            else:
                wake = min(deadline, watch.last_change + settle)
                if now >= wake:
                    return
            self._cond.wait(timeout=wake - now)

    def unknown_trace_ids(self, known: Collection[str]) -> int:
        """How many stored trace ids are not in ``known`` (spans from outside the run)."""
        known_set = known if isinstance(known, (set, frozenset)) else set(known)
        with self._cond:
            return sum(1 for tid in self._items if tid not in known_set)

    def clear(self) -> None:
        """Forget every stored trace (counters are kept)."""
        with self._cond:
            self._items.clear()
            self._counts = [0, 0]
