"""The Ray actors of a scaled-out run: a reference clock, and generator workers.

Plain classes: :mod:`.ray_workers` wraps them with ``ray.remote`` once Ray is imported,
so importing this module (and the plugin) never imports Ray.

A :class:`GeneratorWorker` drives its share of the plan with the ordinary :class:`Run`
on the actor's event loop (Ray runs async actors on asyncio, so the hot path applies).
It measures its clock offset to the :class:`ReferenceClock` first, warms up, then waits
for the start instant (on the reference clock), converts it to its own monotonic clock
and starts there. Finished records wait in an outbox that the driver empties about
once a second, so a lost actor takes only its in-flight requests with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
import time
from typing import Any

from pytest_latency.driver.client import DriveResult, Run, Target
from pytest_latency.driver.stops import PhaseStops
from pytest_latency.driver.tracecontext import ClientSpans
from pytest_latency.records import RequestRecord
from pytest_latency.spec import Workload
from pytest_latency.worker_clocks import ClockOffset, ClockPing, estimate_offset
from pytest_latency.workload.plan import Plan

# A Ray worker process runs Python threads of Ray's own beside the event loop; at the
# default 5 ms switch interval a send waits up to that long for the GIL. The actor's
# process is its own, so it is set there.
GIL_SWITCH_INTERVAL_S = 0.0005
CLOCK_PINGS = 40  # enough for one ping to meet an idle path; ~40 ms on one host
STOP_TIMEOUT_S = 5.0  # bound on a cancelled drive closing its connections


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

    def __init__(self, workload: Workload, outbox: list[RequestRecord]) -> None:
        super().__init__(workload)
        self._outbox = outbox

    def ended(self, record: RequestRecord) -> None:
        super().ended(record)
        self._outbox.append(record)


class _ShippingRun(Run):
    def __init__(
        self, plan: Plan, target: Target, outbox: list[RequestRecord], **kwargs: Any
    ) -> None:
        super().__init__(plan, target, **kwargs)
        self._outbox = outbox

    def phase_stops(self) -> PhaseStops:
        return _ShippingStops(self.plan.workload, self._outbox)


class GeneratorWorker:
    """One share of the plan, driven from one actor. Methods are called by the driver."""

    def __init__(self, name: str, part: Plan, target: Target) -> None:
        sys.setswitchinterval(GIL_SWITCH_INTERVAL_S)
        self.name = name
        self._outbox: list[RequestRecord] = []
        self._run = _ShippingRun(
            part, target, self._outbox, spans=ClientSpans(), time_zero=self._time_zero
        )
        self._offset = ClockOffset(0, 0)
        self._ready = asyncio.Event()
        self._start: asyncio.Future[int] | None = None
        self._task: asyncio.Task[DriveResult] | None = None

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
        self._start = asyncio.get_running_loop().create_future()
        self._task = asyncio.ensure_future(self._run.drive())
        with contextlib.suppress(asyncio.CancelledError):
            await self._task
        return self._run.result()

    async def wait_ready(self) -> bool:
        """Returns once the worker is warm and waits for its start instant."""
        await self._ready.wait()
        return True

    async def start(self, t0_reference_ns: int) -> int:
        """Start at ``t0_reference_ns`` on the reference clock; returns it on this clock."""
        t0 = self._offset.to_local(t0_reference_ns)
        if self._start is not None and not self._start.done():
            self._start.set_result(t0)
        return t0

    async def collect(self) -> list[RequestRecord]:
        """Records that ended since the last call."""
        shipped, self._outbox[:] = list(self._outbox), []
        return shipped

    async def stop(self) -> list[RequestRecord]:
        """Cancel the drive (unfinished requests become ``cancelled``); every record."""
        if self._task is not None and not self._task.done():
            self._task.cancel()
            await asyncio.wait([self._task], timeout=STOP_TIMEOUT_S)
        return self._run.records

    async def _time_zero(self) -> int:
        self._ready.set()
        assert self._start is not None
        return await self._start
