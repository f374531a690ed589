"""The Ray actors of a scaled-out run: a reference clock, and generator workers.

Plain classes: :mod:`.ray_workers` wraps them with ``ray.remote`` once Ray is imported,
so importing this module (and the plugin) never imports Ray.

A :class:`GeneratorWorker` drives its share of the plan with the ordinary :class:`Run`
on an asyncio loop in a thread of its own (so the hot path applies, and the calls Ray
serves on the actor's loop never delay a send).
It measures its clock offset to the :class:`ReferenceClock` first, warms up, then waits
for the start instant (on the reference clock), converts it to its own monotonic clock
and starts there. Finished records wait in an outbox that the driver empties about
once a second, so a lost actor takes only its in-flight requests with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import threading
import time
from collections import deque
from typing import Any

from pytest_latency.driver.client import DriveResult, Run
from pytest_latency.driver.precise_loop import new_event_loop
from pytest_latency.driver.stops import PhaseStops
from pytest_latency.driver.target import Target
from pytest_latency.driver.tracecontext import ClientSpans
from pytest_latency.driver.worker_clocks import ClockOffset, ClockPing, estimate_offset
from pytest_latency.records import RequestRecord
from pytest_latency.spec.model import Workload
from pytest_latency.workload.plan import Plan

# A Ray worker process runs Python threads of Ray's own beside the event loop; at the
# default 5 ms switch interval a send waits up to that long for the GIL. The actor's
# process is its own, so it is set there.
GIL_SWITCH_INTERVAL_S = 0.0005
CLOCK_PINGS = 40  # enough for one ping to meet an idle path; ~40 ms on one host
STOP_TIMEOUT_S = 5.0  # bound on a cancelled drive closing its connections
READY_WAIT_S = 120.0  # the driver's own bound on getting ready


def node_id() -> str:
    """The Ray node this process runs on (inside an actor or a connected driver)."""
    import ray

    return str(ray.get_runtime_context().get_node_id())


class ReferenceClock:
    """Answers pings with its monotonic clock; placed on the driver's node."""

    def now_ns(self) -> int:
        return time.perf_counter_ns()

    def node(self) -> str:
        return node_id()


class _ShippingStops(PhaseStops):
    """The run's stop rules, which also put every ended request in the outbox."""

    def __init__(self, workload: Workload, outbox: deque[RequestRecord]) -> None:
        super().__init__(workload)
        self._outbox = outbox

    def ended(self, record: RequestRecord) -> None:
        super().ended(record)
        self._outbox.append(record)  # deque: appended here, popped on Ray's thread


class _ShippingRun(Run):
    def __init__(
        self, plan: Plan, target: Target, outbox: deque[RequestRecord], **kwargs: Any
    ) -> None:
        super().__init__(plan, target, **kwargs)
        self._outbox = outbox

    def phase_stops(self) -> PhaseStops:
        return _ShippingStops(self.plan.workload, self._outbox)


class GeneratorWorker:
    """One share of the plan, driven from one actor. Methods are called by the driver.

    The drive runs on an event loop of its own, in a thread of its own: Ray's actor loop
    answers the driver's calls (collect, stop) without ever delaying a send.
    """

    def __init__(self, name: str, part: Plan, target: Target) -> None:
        sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
        self.name = name
        self._outbox: deque[RequestRecord] = deque()
        self._run = _ShippingRun(
            part,
            target,
            self._outbox,
            spans=ClientSpans(prefix=target.trace_prefix),
            time_zero=self._time_zero,
        )
        self._offset = ClockOffset(0, 0)
        self._ready = threading.Event()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._task: asyncio.Task[DriveResult] | None = None
        self._start: asyncio.Future[int] | None = None  # on the drive's loop
        self._thread: threading.Thread | None = None

    async def node(self) -> str:
        return node_id()

    async def measure_clock(self, reference: Any, pings: int = CLOCK_PINGS) -> ClockOffset:
        """This actor's offset to ``reference`` (a ReferenceClock actor handle)."""
        samples = []
        for _ in range(pings):
            sent = time.perf_counter_ns()
            reference_ns = await reference.now_ns.remote()
            samples.append(ClockPing(sent, int(reference_ns), time.perf_counter_ns()))
        self._offset = estimate_offset(samples)
        return self._offset

    async def drive(self) -> DriveResult:
        """Warm up, wait for :meth:`start`, drive; the records (also when stopped)."""
        self._thread = threading.Thread(target=self._drive, name="pytest-latency-drive")
        self._thread.start()
        await asyncio.get_running_loop().run_in_executor(None, self._thread.join)
        return self._run.result()

    def _drive(self) -> None:
        loop = new_event_loop()
        try:
            self._task = loop.create_task(self._run.drive())
            self._loop = loop
            with contextlib.suppress(asyncio.CancelledError):
                loop.run_until_complete(self._task)
        finally:
            self._loop = None
            loop.close()

    async def wait_ready(self, timeout_s: float = READY_WAIT_S) -> bool:
        """True once the worker is warm and waits for its start instant."""
        waiting = asyncio.get_running_loop().run_in_executor(None, self._ready.wait, timeout_s)
        return bool(await waiting)

    async def start(self, t0_reference_ns: int) -> int:
        """Start at ``t0_reference_ns`` on the reference clock; returns it on this clock."""
        t0 = self._offset.to_local(t0_reference_ns)
        loop, start = self._loop, self._start
        if loop is not None and start is not None:
            loop.call_soon_threadsafe(_resolve, start, t0)
        return t0

    async def collect(self) -> list[RequestRecord]:
        """Records that ended since the last call."""
        return [self._outbox.popleft() for _ in range(len(self._outbox))]

    async def stop(self) -> list[RequestRecord]:
        """Cancel the drive (unfinished requests become ``cancelled``); every record."""
        loop, task, thread = self._loop, self._task, self._thread
        if loop is not None and task is not None:
            with contextlib.suppress(RuntimeError):  # the loop closed meanwhile
                loop.call_soon_threadsafe(task.cancel)
        if thread is not None:
            await asyncio.get_running_loop().run_in_executor(None, thread.join, STOP_TIMEOUT_S)
        return list(self._run.records)

    async def _time_zero(self) -> int:
        self._start = asyncio.get_running_loop().create_future()
        self._ready.set()
        return await self._start


def _resolve(future: asyncio.Future[int], value: int) -> None:
    if not future.done():
        future.set_result(value)
