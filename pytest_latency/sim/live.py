"""Drive the scheduling model in real time on an asyncio loop.

Each busy replica is one task that sleeps until its step's end and then applies
:meth:`Engine.end_step`; the engine decides everything else. Step ends are scheduled
on an absolute timeline (previous planned end + duration) so event-loop wake-up
jitter does not accumulate into a slower token cadence than the model says.

Requests learn what happened through a per-request :class:`asyncio.Queue` of small
integers: ``ADMITTED`` when prefill starts, ``n >= 1`` when token ``n`` exists
(streaming only), then exactly one final ``FINISHED``, ``EXPIRED`` or ``ABORTED``.
"""

from __future__ import annotations

import asyncio
import logging
from dataclasses import dataclass, field
from time import perf_counter

from pytest_latency.sim.config import SimConfig
from pytest_latency.sim.engine import Engine, Sequence, ServerTimings, State, Step, StepOutcome
from pytest_latency.sim.metrics import QUEUE_TIME_BUCKETS, Histogram
from pytest_latency.sim.tracing import RequestTrace, SpanExport

ADMITTED, FINISHED, EXPIRED, ABORTED = 0, -1, -2, -3
MAX_LAG_S = 0.25  # beyond this behind plan, re-anchor instead of bursting steps to catch up

log = logging.getLogger("pytest_latency.sim")


@dataclass(slots=True, eq=False)
class Ticket:
    """A request's handle on the live engine."""

    sequence: Sequence
    stream: bool
    events: asyncio.Queue[int] = field(default_factory=asyncio.Queue)
    timer: asyncio.TimerHandle | None = None
    trace: RequestTrace | None = None  # set when spans are exported

    @property
    def state(self) -> State:
        return self.sequence.state


class LiveEngine:
    """The engine on the running event loop; all methods must run on that loop.

    With ``spans``, every request that ends is handed to it once (its span is built
    there, off the per-token path).
    """

    def __init__(self, config: SimConfig, spans: SpanExport | None = None) -> None:
        self.config = config
        self.spans = spans
        self.engine = Engine(config, start=perf_counter())
        self._tickets: dict[int, Ticket] = {}
        self._tasks: set[asyncio.Task[None]] = set()
        self.queue_time = Histogram(QUEUE_TIME_BUCKETS)
        self.closed = False

    def start_clock(self) -> None:
        """Restart the cold-start countdown: the server is starting now."""
        self.engine.ready_at = perf_counter() + self.config.cold_start_s

    def submit(
        self, prompt_tokens: int, target_tokens: int, trace_id: str, stream: bool,
        trace: RequestTrace | None = None, blocks: tuple[int, ...] = (),
        priority: int = 0, service_class: str = "",
    ) -> Ticket:  # fmt: skip
        now = perf_counter()
        admission = self.engine.submit(
            now, prompt_tokens, target_tokens, trace_id, blocks, priority, service_class
        )
        ticket = Ticket(admission.sequence, stream, trace=trace)
        self._notify_final(admission.expired, EXPIRED)
        if ticket.state in (State.QUEUED, State.RUNNING):
            self._tickets[ticket.sequence.id] = ticket
        else:
            self._ended(ticket.sequence.timings, trace)
        if ticket.state is State.QUEUED:
            loop = asyncio.get_running_loop()
            ticket.timer = loop.call_later(self.config.queue_timeout_s, self._deadline, ticket)
        if admission.step is not None:
            self._begin(admission.step, first=True)
        return ticket

    def cancel(self, ticket: Ticket) -> None:
        """Withdraw a request whose client went away; a no-op once it is final."""
        if self.engine.cancel(ticket.sequence, perf_counter()):
            self._tickets.pop(ticket.sequence.id, None)
            self._ended(ticket.sequence.timings, ticket.trace)

    async def shutdown(self) -> None:
        """Abort everything in flight so open streams end, then stop the replica tasks."""
        self.closed = True
        self._notify_final(self.engine.cancel_all(perf_counter()), ABORTED)
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)

    def _deadline(self, ticket: Ticket) -> None:
        if self.engine.expire(ticket.sequence, perf_counter()):
            self._notify_final([ticket.sequence], EXPIRED)

    def _begin(self, step: Step, first: bool) -> None:
        for seq in step.admitted_sequences:
            if seq.resumed and seq.timings.first_token is not None:
                continue  # back after a preemption: its stream simply goes on
            self.queue_time.observe(seq.timings.queue_wait_s or 0.0)
            ticket = self._tickets.get(seq.id)
            if ticket is not None:
                if ticket.timer is not None:
                    ticket.timer.cancel()
                ticket.events.put_nowait(ADMITTED)
        if first:  # the replica was idle: it needs a task to run its steps
            task = asyncio.get_running_loop().create_task(self._run_replica(step))
            self._tasks.add(task)
            task.add_done_callback(self._replica_done)

    def _replica_done(self, task: asyncio.Task[None]) -> None:
        self._tasks.discard(task)
        if not task.cancelled() and task.exception() is not None:
            log.error("replica task failed", exc_info=task.exception())

    async def _run_replica(self, first: Step) -> None:
        step: Step | None = first
        planned = first.start
        while step is not None:  # ends when the replica has nothing left to run
            planned += step.duration
            delay = planned - perf_counter()
            if delay > 0:
                await asyncio.sleep(delay)
            now = perf_counter()
            if now - planned > MAX_LAG_S:
                planned = now
            outcome = self.engine.end_step(step, now)
            self._deliver(outcome)
            step = outcome.next_step
            if step is not None:
                self._begin(step, first=False)

    def _deliver(self, outcome: StepOutcome) -> None:
        tickets = self._tickets
        for seq in outcome.emitted:
            ticket = tickets.get(seq.id)
            if ticket is not None and ticket.stream:
                ticket.events.put_nowait(seq.generated)
        self._notify_final(outcome.finished, FINISHED)
        self._notify_final(outcome.expired, EXPIRED)

    def _notify_final(self, sequences: list[Sequence], event: int) -> None:
        for seq in sequences:
            ticket = self._tickets.pop(seq.id, None)
            if ticket is not None:
                if ticket.timer is not None:
                    ticket.timer.cancel()
                ticket.events.put_nowait(event)
            self._ended(seq.timings, None if ticket is None else ticket.trace)

    def _ended(self, timings: ServerTimings, trace: RequestTrace | None) -> None:
        """Once per request, when it reached a final state: log it, export its span."""
        if self.spans is not None and trace is not None:
            self.spans.record(timings, trace)
        self._log(timings)

    @staticmethod
    def _log(timings: ServerTimings) -> None:
        if log.isEnabledFor(logging.DEBUG):  # trace ids only at debug: they are per request
            log.debug(
                "request %d trace_id=%s outcome=%s queue_wait_s=%s prefill_s=%s decode_s=%s",
                timings.id, timings.trace_id, timings.outcome.value,
                _fmt(timings.queue_wait_s), _fmt(timings.prefill_s), _fmt(timings.decode_s),
            )  # fmt: skip


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.4f}"
