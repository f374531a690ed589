"""Multi-process generation: one plan, ``workers`` processes, one time zero, one record each.

The precomputed plan is partitioned in schedule order, round robin (request ``i`` of the
schedule goes to worker ``i % workers``; a multi-turn session goes whole), so every
worker offers an even share of every phase and the union is exactly the plan. Each
worker is a fresh (``spawn``) process with its own event loop, connections and
:class:`ClientSpans` (so every request still carries its own ``traceparent``; with
workers, client spans are not exported). Workers warm up,
say they are ready, and all start at one time zero chosen by this process on
``time.perf_counter_ns`` -- ``CLOCK_MONOTONIC`` on Linux, which is system-wide, so the
readings of all processes are on one clock (checked at import, see ``SHARED_CLOCK``).

Records come back whole when a worker ends and are merged in id order. A worker that
dies (or never got ready, or overran its bound) still leaves a record for each of its
requests: ``cancelled`` with an error that names the worker. Every wait is bounded.
"""

from __future__ import annotations

import logging
import multiprocessing
import signal
import time
from multiprocessing.connection import Connection, wait
from multiprocessing.process import BaseProcess
from typing import cast

import anyio
import anyio.to_thread

from pytest_latency.driver.client import DriveResult, Run, RunAborted, RunInterrupted
from pytest_latency.driver.client_load import ClientLoad
from pytest_latency.driver.loop import drive_to_end
from pytest_latency.driver.progress import ProgressListener, ScheduleProgress, reporting
from pytest_latency.driver.target import Target
from pytest_latency.driver.tracecontext import ClientSpans
from pytest_latency.records import RequestRecord, Status
from pytest_latency.workload.plan import Plan, PlannedRequest
from pytest_latency.workload.sessions import session_allowance_s

logger = logging.getLogger("pytest_latency.driver")

READY_TIMEOUT_S = 60.0  # a worker imports, connects and warms up within this
START_MARGIN_S = 0.2  # time zero is this far after the last worker said it was ready
END_GRACE_S = 30.0  # beyond the plan's own bound, for shipping records back
SHARED_CLOCK = time.get_clock_info("perf_counter").implementation.endswith("(CLOCK_MONOTONIC)")


def partition(plan: Plan, workers: int) -> list[Plan]:
    """Split ``plan`` into at most ``workers`` non-empty plans, round robin by schedule.

    The unit is a request, or a whole multi-turn session (a later turn follows its
    predecessor's answer, so all of a session's turns stay on one worker), placed by its
    first turn's instant.
    """
    units: dict[tuple[str, int], list[PlannedRequest]] = {}
    for request in sorted(plan.requests, key=lambda request: (request.intended_s, request.id)):
        key = ("session", request.session) if request.session is not None else ("", request.id)
        key = ("user", request.user) if request.user is not None else key  # a closed loop
        units.setdefault(key, []).append(request)
    schedule = list(units.values())  # dicts keep insertion order: by first instant
    count = max(1, min(workers, len(schedule)))
    return [
        Plan(
            workload=plan.workload,
            requests=tuple(request for unit in schedule[index::count] for request in unit),
            warmup=plan.warmup[index::count],
        )
        for index in range(count)
    ]


def _worker_main(part: Plan, target: Target, channel: Connection) -> None:
    """A worker process: warm up, agree time zero, drive its part, send the result back."""
    # The parent handles Ctrl-C and SIGTERM (a CI job's whole process group may get
    # them): it stops the workers and keeps the records.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    signal.signal(signal.SIGTERM, signal.SIG_IGN)

    async def time_zero() -> int:
        channel.send("ready")
        t0: int = await anyio.to_thread.run_sync(channel.recv)  # before time zero: no lag
        return t0

    run = Run(part, target, ClientSpans(prefix=target.trace_prefix), time_zero=time_zero)
    drive_to_end(run)
    channel.send(run.result())


class _Worker:
    def __init__(self, index: int, part: Plan, process: BaseProcess, channel: Connection) -> None:
        self.index = index
        self.part = part
        self.process = process
        self.channel = channel
        self.ready = False
        self.result: DriveResult | None = None
        self.failure: str | None = None

    def receive(self) -> object:
        try:
            return self.channel.recv()
        except (EOFError, OSError):
            code = self.process.exitcode
            self.failure = f"worker {self.index} died (exit code {code})"
            return None


def run_workers(
    plan: Plan, target: Target, workers: int, progress: ProgressListener | None = None
) -> DriveResult:
    """Drive ``plan`` from ``workers`` processes; complete records even if one dies.

    ``progress`` hears the schedule's progress (completions are counted in the workers).
    Ctrl-C (or SIGTERM, see :mod:`pytest_latency.plugin.interrupts`) raises
    :class:`RunInterrupted` with the records, also when it lands while the finished
    workers are being joined: what they sent back is kept.
    """
    if not SHARED_CLOCK:
        raise RuntimeError("workers need perf_counter on CLOCK_MONOTONIC (Linux)")
    pool: list[_Worker] = []
    t0 = 0
    try:
        try:
            _start(plan, target, workers, pool)
            _await_ready(pool)
            t0 = time.perf_counter_ns() + round(START_MARGIN_S * 1e9)
            for worker in pool:
                if worker.ready:
                    worker.channel.send(t0)
            bound_s = START_MARGIN_S + plan.duration_s + plan.workload.timeout_s + END_GRACE_S
            bound_s += session_allowance_s(plan.workload)
            schedule = ScheduleProgress([r.intended_s for r in plan.requests], plan.duration_s)
            schedule.t0_ns = t0
            with reporting(schedule, progress):
                _collect(pool, time.monotonic() + bound_s)
        finally:
            _stop(pool)
    except KeyboardInterrupt as exc:
        for worker in pool:
            worker.failure = worker.failure or "run interrupted"
        raise RunInterrupted(_merge(plan, pool, t0)) from exc
    except BaseException as exc:  # a test's timeout, say: keep what the workers sent
        for worker in pool:
            worker.failure = worker.failure or f"run stopped by {type(exc).__name__}"
        raise RunAborted(_merge(plan, pool, t0), exc) from exc
    return _merge(plan, pool, t0)


def _start(plan: Plan, target: Target, workers: int, pool: list[_Worker]) -> None:
    """Start one process per part, added to ``pool`` as each starts (for cleanup)."""
    context = multiprocessing.get_context("spawn")
    for index, part in enumerate(partition(plan, workers)):
        ours, theirs = context.Pipe()
        process = context.Process(
            target=_worker_main,
            args=(part, target, theirs),
            name=f"pytest-latency-worker-{index}",
            daemon=True,
        )
        process.start()
        theirs.close()
        pool.append(_Worker(index, part, process, ours))


def _await_ready(pool: list[_Worker]) -> None:
    deadline = time.monotonic() + READY_TIMEOUT_S
    waiting: dict[Connection, _Worker] = {worker.channel: worker for worker in pool}
    while waiting and time.monotonic() < deadline:
        for channel in wait(list(waiting), timeout=deadline - time.monotonic()):
            worker = waiting.pop(cast(Connection, channel))
            worker.ready = worker.receive() == "ready"
    for worker in waiting.values():
        worker.failure = f"worker {worker.index} not ready within {READY_TIMEOUT_S:g}s"


def _collect(pool: list[_Worker], deadline: float) -> None:
    waiting: dict[Connection, _Worker] = {w.channel: w for w in pool if w.ready}
    while waiting and time.monotonic() < deadline:
        for channel in wait(list(waiting), timeout=max(0.0, deadline - time.monotonic())):
            worker = waiting.pop(cast(Connection, channel))
            message = worker.receive()
            if isinstance(message, DriveResult):
                worker.result = message
    for worker in waiting.values():
        worker.failure = f"worker {worker.index} did not finish in time"


def _stop(pool: list[_Worker]) -> None:
    for worker in pool:
        worker.process.join(timeout=5.0 if worker.result is not None else 0.1)
        if worker.process.is_alive():
            worker.process.kill()
            worker.process.join(timeout=5.0)
        worker.channel.close()


def _merge(plan: Plan, pool: list[_Worker], t0: int) -> DriveResult:
    records: dict[int, RequestRecord] = {}
    elapsed = 0.0
    for worker in pool:
        if worker.result is not None:
            records.update((record.id, record) for record in worker.result.records)
            elapsed = max(elapsed, worker.result.elapsed_s)
            continue
        reason = worker.failure or f"worker {worker.index} sent no records"
        logger.warning(
            "%s: its %d requests are recorded as cancelled", reason, len(worker.part.requests)
        )
        for request in worker.part.requests:
            if request.user is None:  # a closed loop's unsent pool was never offered
                records[request.id] = lost_record(request, reason)
    for request in plan.requests:  # a plan with no worker at all (never expected)
        if request.user is None:
            records.setdefault(request.id, lost_record(request, "no worker"))
    now = time.perf_counter_ns()
    started_at = time.time() - (now - t0) / 1e9 if t0 else time.time()
    if t0 and not elapsed:
        elapsed = (now - t0) / 1e9
    # Each worker drives on its own core: the run is as saturated as its busiest worker.
    client = ClientLoad.worst([w.result.client for w in pool if w.result is not None])
    ordered = [records[key] for key in sorted(records)]
    return DriveResult(ordered, started_at, elapsed, t0, client=client)


def lost_record(request: PlannedRequest, reason: str) -> RequestRecord:
    """The ``cancelled`` record of a planned request whose worker was lost (``reason``)."""
    record = request.blank_record()
    record.status = Status.CANCELLED
    record.error = f"{reason}; the request's outcome is unknown"
    return record
