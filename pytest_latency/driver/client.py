"""The open-loop driver: offer every planned request at its absolute planned time.

Time zero is taken on ``time.perf_counter_ns`` after the client is warm. One launcher
starts each request as its own task a little before its absolute instant (``t0 +
intended_s``, recomputed from the clock every time, so no drift accumulates); the task
prepares the request, waits for the instant and sends. Nothing a response does can
delay a later send. Each request has its own deadline,
``intended_s + workload.timeout_s``, so a run ends within its duration plus the
deadline (plus the scheduling slack of the event loop) whatever the server does.
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field

import anyio
import anyio.lowlevel
import httpx
from anyio.abc import TaskGroup

from pytest_latency.driver.client_load import ClientLoad
from pytest_latency.driver.closed_loop import offered, run_user, users_of
from pytest_latency.driver.drive_gc import quiet_gc, restore_gc
from pytest_latency.driver.genai_conventions import GenAiTarget
from pytest_latency.driver.limits import check_deadline
from pytest_latency.driver.loop_monitor import LoopMonitor, monitored
from pytest_latency.driver.pacing import sleep_until
from pytest_latency.driver.progress import Progress
from pytest_latency.driver.request import PreparedSend, Sender
from pytest_latency.driver.sessions import Message, first_sends, later_turns, run_session
from pytest_latency.driver.stops import PhaseStops
from pytest_latency.driver.target import Target, choose_transport
from pytest_latency.driver.tracecontext import ClientSpans
from pytest_latency.driver.transport import Transport
from pytest_latency.driver.worker_clocks import GeneratorWorker
from pytest_latency.records import STOPPED_EARLY, RequestRecord, Status
from pytest_latency.workload.plan import Plan, PlannedRequest

logger = logging.getLogger("pytest_latency.driver")
TimeZero = Callable[[], Awaitable[int]]  # returns time zero as a perf_counter_ns reading

WARM_CONNECTIONS = 8  # connections opened before time zero (more open on demand)
WARM_PING_TIMEOUT_S = 5.0  # bound on the GET /v1/models warm-up pings
CLOSE_TIMEOUT_S = 5.0  # bound on closing the transport's connections at the end
# Each planned send's task starts this long before its instant, to prepare the request
# (span, body) and be waiting when the instant comes (the task's start, the span and the
# body were 0.3-0.5 ms of cold Python after the instant at 10 req/s).
PREPARE_AHEAD_NS = 2_000_000


@dataclass(slots=True)
class DriveResult:
    """Every offered request's record (one per ``plan.requests`` entry, ordered by id)."""

    records: list[RequestRecord]
    started_at_unix: float  # wall clock at time zero, for reports only
    elapsed_s: float  # monotonic duration from time zero to the last request's end
    started_ns: int = 0  # time zero as a time.perf_counter_ns() reading (in-process clock)
    workers: list[GeneratorWorker] = field(default_factory=list)  # remote (Ray) workers
    client: ClientLoad | None = None  # the driving thread's CPU and loop lag (loop_monitor)


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during :func:`run_plan`; ``result`` holds the complete, partly cancelled records."""

    def __init__(self, result: DriveResult) -> None:
        super().__init__("latency run interrupted")
        self.result = result


class RunAborted(Exception):
    """Something other than Ctrl-C stopped :func:`run_plan` mid-run: a test's timeout
    raised from a signal handler, a failing progress listener. ``result`` holds the
    complete, partly cancelled records; ``cause`` is what stopped the run (the caller
    re-raises it once the records are kept)."""

    def __init__(self, result: DriveResult, cause: BaseException) -> None:
        # anyio wraps an error raised inside one request's task in a group: the leaf is
        # what the user's test raised (pytest's Failed, say).
        while isinstance(cause, BaseExceptionGroup) and len(cause.exceptions) == 1:
            cause = cause.exceptions[0]
        super().__init__(f"latency run stopped by {type(cause).__name__}")
        self.result = result
        self.cause = cause


class Run:
    """One drive of a plan. :meth:`result` is complete even if the run was cancelled."""

    def __init__(
        self,
        plan: Plan,
        target: Target,
        spans: ClientSpans | None = None,
        time_zero: TimeZero | None = None,
    ) -> None:
        check_deadline(plan.workload.timeout_s)
        self.plan = plan
        self.time_zero = time_zero  # agrees time zero with other workers (after warm-up)
        self.target = target
        self.spans = spans if spans is not None else ClientSpans(prefix=target.trace_prefix)
        ordered = sorted(plan.requests, key=lambda request: request.id)
        self.records = [request.blank_record() for request in ordered]
        pairs = list(zip(ordered, self.records, strict=True))
        # With ``sessions:``, later turns are sent after the turn before them
        # (driver/sessions.py); everything else at its planned instant (a trace's too).
        self._later_turns = later_turns(pairs) if plan.workload.sessions is not None else {}
        # Closed-loop users send when they are free (driver/closed_loop.py).
        self._users = users_of(pairs)
        self._pool_ids = frozenset(r.id for r in ordered if r.user is not None)
        firsts = first_sends(pairs, self._later_turns)
        firsts = [pair for pair in firsts if pair[0].user is None]
        self._schedule = sorted(firsts, key=lambda pair: pair[0].intended_s)
        self.started_ns = 0  # time zero on perf_counter_ns, set when the run starts
        self.started_at_unix = 0.0
        self.elapsed_s = 0.0
        self.launched = 0  # requests started so far (read by the progress poller)
        self.client_load: ClientLoad | None = None
        self._live_sender: Sender | None = None
        self._driven = False
        self._stop_reason: str | None = None

    def stop(self, why: str) -> None:
        """Send nothing more: the rest stays ``cancelled`` records with ``why`` (a capacity
        probe that is decided); requests in flight end as they would."""
        self._stop_reason = self._stop_reason or f"{STOPPED_EARLY}{why}"

    def result(self) -> DriveResult:
        records = offered(self.records, self._pool_ids) if self._pool_ids else self.records
        return DriveResult(
            records,
            self.started_at_unix,
            self.elapsed_s,
            self.started_ns,
            client=self.client_load,
        )

    def progress(self) -> Progress | None:
        """Counters so far, for a reporter on another thread; None before time zero."""
        sender, started_ns = self._live_sender, self.started_ns
        if sender is None or not started_ns:
            return None
        elapsed_s = self.elapsed_s or max(0.0, (time.perf_counter_ns() - started_ns) / 1e9)
        return Progress(
            planned=len(self.records),
            sent=self.launched,
            completed=sender.finished,
            elapsed_s=elapsed_s,
            duration_s=self.plan.duration_s,
        )

    async def drive(self, client: httpx.AsyncClient | None = None) -> DriveResult:
        """Warm up, then offer every request at its planned time; wait for all to end."""
        if self._driven:
            raise RuntimeError("a Run drives its plan once; make a new Run")
        self._driven = True
        sender = self._sender(choose_transport(self.target, client))
        monitor: LoopMonitor | None = None
        collector: tuple[int, int, int] | None = None
        try:
            await self._warm(sender)
            collector = quiet_gc()
            # End this loop step: the collection's stall (and I/O that queued during it)
            # belongs before time zero, not to the first sends.
            await anyio.lowlevel.checkpoint()
            self.started_ns = sender.t0_ns = await self._time_zero()
            self.started_at_unix = time.time()
            sender.finished = 0  # warm-up requests do not count
            self._live_sender = sender
            async with monitored() as monitor, anyio.create_task_group() as tasks:
                await self._launch(tasks, sender)
        finally:
            self.client_load = monitor.load if monitor is not None else None
            if collector is not None:
                restore_gc(collector)
            if self.started_ns:
                self.elapsed_s = (time.perf_counter_ns() - self.started_ns) / 1e9
            self._mark_cancelled()
            with anyio.move_on_after(CLOSE_TIMEOUT_S, shield=True):  # bounded, even on Ctrl-C
                await sender.transport.aclose()
        return self.result()

    async def _time_zero(self) -> int:
        """Now, or the instant agreed with the other workers (perf_counter ns, system-wide)."""
        if self.time_zero is None:
            return time.perf_counter_ns()
        t0 = await self.time_zero()
        delay_ns = t0 - time.perf_counter_ns()
        if delay_ns > 0:
            await anyio.sleep(delay_ns / 1e9)
        return t0

    def _auth_headers(self) -> dict[str, str]:
        """The target's own headers and its API key (revealed here, into headers only)."""
        headers = {name.lower(): value for name, value in self.target.headers.items()}
        if self.target.api_key is not None:
            headers["authorization"] = f"Bearer {self.target.api_key.reveal()}"
        return headers

    def _sender(self, transport: Transport) -> Sender:
        target = self.target
        headers = {
            "content-type": "application/json",
            "accept": "text/event-stream",
            "accept-encoding": "identity",  # byte-exact SSE, no decompression on the hot path
            **self._auth_headers(),
        }
        return Sender(
            transport=transport,
            headers=headers,
            model=self.target.model,
            chat=self.target.api == "chat",
            extra_body=self.target.extra_body,
            timeout_s=self.plan.workload.timeout_s,
            spans=self.spans,
            limits=self.target.limits,
            secrets=() if self.target.api_key is None else (self.target.api_key,),
            record_content=self.target.record_content,
            continuous_usage_stats=self.target.continuous_usage_stats,
            genai=GenAiTarget.of(target.base_url, target.model, target.api == "chat"),
            retry=self.plan.workload.retry,
            classes={
                service_class.name: service_class for service_class in self.plan.workload.classes
            },
            retry_rng=random.Random(self.plan.workload.seed),  # jitter drawn as the plan is
        )

    def phase_stops(self) -> PhaseStops:
        """The stop rules' bookkeeping; its ``ended`` hears each request as it ends (a Ray
        worker overrides this to ship finished records while the run goes on)."""
        return PhaseStops(self.plan.workload)

    async def _launch(self, tasks: TaskGroup, sender: Sender) -> None:
        clock = time.perf_counter_ns
        t0 = self.started_ns
        cap = self.plan.workload.max_concurrency
        slots = None if cap is None else anyio.CapacityLimiter(cap)
        stops = self.phase_stops()
        for turns in self._users.values():
            tasks.start_soon(self._user, sender, turns, slots, stops)
        for request, record in self._schedule:
            if (why := self._stop_reason or stops.reason(request.phase)) is not None:
                record.error = why  # stays cancelled, with the reason
                continue
            planned_ns = t0 + round(request.intended_s * 1e9)
            delay_ns = planned_ns - PREPARE_AHEAD_NS - clock()
            if delay_ns > 0:  # behind schedule: no yield, start what is due at once
                await anyio.sleep(delay_ns / 1e9)
            tasks.start_soon(self._offer, sender, request, record, planned_ns, slots, stops)

    async def _offer(
        self,
        sender: Sender,
        request: PlannedRequest,
        record: RequestRecord,
        planned_ns: int,
        slots: anyio.CapacityLimiter | None,
        stops: PhaseStops,
    ) -> None:
        """One planned send, started ``PREPARE_AHEAD_NS`` early: what does not depend on
        the instant is made first, then it waits for the instant and sends."""
        session = request.session is not None and request.session in self._later_turns
        prepared = None if session else sender.prepare(request, record, planned_ns)
        try:
            await sleep_until(planned_ns)
        except BaseException:  # cancelled before the instant: nothing was sent
            sender.withdraw(record)
            raise
        if (why := self._stop_reason or stops.reason(request.phase)) is not None:  # meanwhile
            sender.withdraw(record)
            record.error = why  # stays cancelled, with the reason
            return
        if session:
            await self._session(sender, request, record, planned_ns, slots, stops)
            return
        await self._send(sender, request, record, planned_ns, slots, stops, prepared=prepared)

    async def _user(
        self,
        sender: Sender,
        turns: list[tuple[PlannedRequest, RequestRecord]],
        slots: anyio.CapacityLimiter | None,
        stops: PhaseStops,
    ) -> None:
        """One closed-loop user, for its phase's window (driver/closed_loop.py)."""
        first = turns[0][0]
        phase = next(p for p in self.plan.workload.phases if p.name == first.phase)
        start_s = self.plan.workload.phase_start_s(phase.name, first.episode)
        window_ns = (
            self.started_ns + round(start_s * 1e9),
            self.started_ns + round((start_s + phase.duration_s) * 1e9),
        )

        async def send_now(request: PlannedRequest, record: RequestRecord, at_ns: int) -> None:
            await self._send(sender, request, record, at_ns, slots, stops)

        think_ns = round(phase.think_time_s * 1e9)
        await run_user(turns, window_ns, think_ns, self.started_ns, send_now, stops.reason)

    async def _session(
        self,
        sender: Sender,
        request: PlannedRequest,
        record: RequestRecord,
        planned_ns: int,
        slots: anyio.CapacityLimiter | None,
        stops: PhaseStops,
    ) -> None:
        """A multi-turn session from its first turn (sent now) to its last."""

        async def send_turn(
            turn: PlannedRequest,
            turn_record: RequestRecord,
            at_ns: int,
            history: Sequence[Message],
            answer: list[str],
        ) -> None:
            await self._send(sender, turn, turn_record, at_ns, slots, stops, history, answer)

        assert self.plan.workload.sessions is not None and request.session is not None
        think_ns = round(self.plan.workload.sessions.think_time_s * 1e9)
        later = self._later_turns[request.session]
        first = (request, record)
        await run_session(
            first, later, planned_ns, think_ns, self.started_ns, send_turn, stops.reason
        )

    async def _send(
        self,
        sender: Sender,
        request: PlannedRequest,
        record: RequestRecord,
        planned_ns: int,
        slots: anyio.CapacityLimiter | None,
        stops: PhaseStops,
        history: Sequence[Message] = (),
        answer: list[str] | None = None,
        prepared: PreparedSend | None = None,
    ) -> None:
        """Send now, or once one of ``max_concurrency`` slots is free (FIFO): the wait is
        recorded and stays in the latency, which is measured from the planned send time.
        A session's turn carries ``history`` and keeps its text in ``answer``. It counts
        as launched now (for its phase's stop rules too)."""
        stops.sent(request.phase, (time.perf_counter_ns() - self.started_ns) / 1e9)
        self.launched += 1
        try:
            if slots is None:
                await sender.send(request, record, planned_ns, history, answer, prepared)
                return
            async with slots:
                record.slot_wait_s = max(0.0, (time.perf_counter_ns() - planned_ns) / 1e9)
                await sender.send(request, record, planned_ns, history, answer, prepared)
        finally:
            stops.ended(record)

    async def _warm(self, sender: Sender) -> None:
        """Open connections (and send ``plan.warmup``) before time zero; nothing recorded."""
        pings = max(1, min(WARM_CONNECTIONS, len(self.plan.requests)))
        url = self.target.base_url.rstrip("/") + "/v1/models"
        headers = self._auth_headers()
        with anyio.move_on_after(min(WARM_PING_TIMEOUT_S, sender.timeout_s)):
            async with anyio.create_task_group() as tasks:
                for _ in range(pings):
                    tasks.start_soon(sender.transport.ping, url, headers)
        if self.plan.warmup:
            limiter = anyio.CapacityLimiter(WARM_CONNECTIONS)
            async with anyio.create_task_group() as tasks:
                for request in self.plan.warmup:
                    tasks.start_soon(self._warm_request, sender, request, limiter)

    async def _warm_request(
        self, sender: Sender, request: PlannedRequest, limiter: anyio.CapacityLimiter
    ) -> None:
        async with limiter:
            record = RequestRecord(
                id=request.id, phase=request.phase, intended_s=0.0, input_tokens=0
            )  # thrown away: its instants are relative to nothing
            await sender.send(request, record, time.perf_counter_ns())
            logger.debug("warm-up request %s: %s", request.id, record.status.value)

    def _mark_cancelled(self) -> None:
        for record in self.records:
            if record.status is Status.CANCELLED and record.error is None:
                record.error = (
                    "run cancelled before the request was sent"
                    if record.sent_s is None
                    else "run cancelled before the request finished"
                )
