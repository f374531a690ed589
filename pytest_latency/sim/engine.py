"""The scheduling model of the reference server: admission queue, replicas, engine steps.

Pure and clock-free: every method takes ``now`` (seconds on whatever clock the driver
uses) and returns what happened, so the live asyncio server (:mod:`.live`) and the
virtual-time simulation (:mod:`.virtual`) run the very same logic.

Iteration model (one replica, continuous batching):

1. A step begins when the replica is idle and a request arrives, or when its previous
   step ends. First it admits waiting requests into free slots, FIFO from the queue
   shared by all replicas. Queued requests past their deadline are dropped first.
2. The step lasts ``decode_base_s + decode_per_seq_s * batch`` plus, for each newly
   admitted request, ``prefill_base_s + prefill_per_token_s * uncached_tokens``: the
   prompt tokens not found in the prefix cache (:mod:`.prefix_cache`), looked up when
   the request is admitted; its blocks are cached from then on.
   ``batch`` counts every sequence in the step, the new ones included.
3. When it ends, every sequence in the batch emits one token: prefill produces a new
   request's first token, decode the next token of the others. A sequence that
   reaches its target length finishes and frees its slot; the next step begins.

An arriving request wakes the lowest-numbered idle replica; a busy replica only takes
new work at its next step boundary, as a real engine does.
"""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field
from enum import StrEnum

from pytest_latency.sim.config import SimConfig
from pytest_latency.sim.prefix_cache import PrefixCache
from pytest_latency.sim.priority import next_waiting, over_share, to_preempt

RECENT_RECORDS = 4096  # finished requests kept for inspection; bounded so memory is too


class State(StrEnum):
    """Where a request is; every state but QUEUED and RUNNING is final."""

    QUEUED = "queued"
    RUNNING = "running"
    OK = "ok"
    REJECTED = "rejected"  # queue full: 429
    UNAVAILABLE = "unavailable"  # no ready replica yet: 503
    EXPIRED = "expired"  # waited past its queue deadline: 503
    CANCELLED = "cancelled"  # client went away, or the server shut down


@dataclass(slots=True)
class ServerTimings:
    """The server's own record of one request: instants on the driver's clock.

    Intervals come from differences of instants on this one clock, never across
    machines. Fields stay None for stages the request never reached.
    """

    id: int
    trace_id: str
    prompt_tokens: int
    arrival: float
    queue_enter: float | None = None
    queue_exit: float | None = None
    first_token: float | None = None
    end: float | None = None
    replica: int | None = None
    completion_tokens: int = 0
    outcome: State = State.QUEUED
    cached_tokens: int = 0  # prompt tokens found in the prefix cache at admission

    @property
    def queue_wait_s(self) -> float | None:
        if self.queue_enter is None or self.queue_exit is None:
            return None
        return self.queue_exit - self.queue_enter

    @property
    def prefill_s(self) -> float | None:
        if self.queue_exit is None or self.first_token is None:
            return None
        return self.first_token - self.queue_exit

    @property
    def decode_s(self) -> float | None:
        if self.first_token is None or self.end is None or self.outcome is not State.OK:
            return None
        return self.end - self.first_token


@dataclass(slots=True, eq=False)
class Sequence:
    """A request inside the engine: how far it got and how far it should go."""

    timings: ServerTimings
    target_tokens: int
    deadline: float
    state: State = State.QUEUED
    generated: int = 0
    replica: Replica | None = None
    blocks: tuple[int, ...] = ()  # the prompt's prefix-cache block hashes
    priority: int = 0  # lower first under scheduling: priority (sim/priority.py)
    resumed: bool = False  # preempted once: admitted again, it recomputes and goes on
    service_class: str = ""  # from the class header, for per-class admission

    @property
    def id(self) -> int:
        return self.timings.id


@dataclass(slots=True, eq=False)
class Replica:
    index: int
    slots: int
    running: list[Sequence] = field(default_factory=list)
    busy: bool = False  # a step is in flight


@dataclass(slots=True, eq=False)
class Step:
    """One engine iteration on one replica; ``batch`` ends with the newly admitted."""

    replica: Replica
    start: float
    duration: float
    batch: tuple[Sequence, ...]
    admitted: int

    @property
    def end(self) -> float:
        return self.start + self.duration

    @property
    def admitted_sequences(self) -> tuple[Sequence, ...]:
        return self.batch[len(self.batch) - self.admitted :]


@dataclass(slots=True)
class Admission:
    """What submitting a request did: its sequence, and a step it started, if any."""

    sequence: Sequence
    step: Step | None
    expired: list[Sequence]


@dataclass(slots=True)
class StepOutcome:
    """What the end of a step did; ``next_step`` is None when the replica went idle."""

    emitted: list[Sequence]
    finished: list[Sequence]
    expired: list[Sequence]
    next_step: Step | None


@dataclass(slots=True)
class Counters:
    """Monotonic counts since start; ``scheduled`` = requests that reached a replica."""

    arrived: int = 0
    unavailable: int = 0
    rejected: int = 0
    expired: int = 0
    scheduled: int = 0
    completed: int = 0
    cancelled: int = 0
    prompt_tokens: int = 0
    generation_tokens: int = 0
    preempted: int = 0
    over_share: int = 0  # refused with 429: its class held its share (class_shares)


def _rank(seq: Sequence) -> tuple[int, float, int]:
    return seq.priority, seq.timings.arrival, seq.id


class Engine:
    """Shared admission queue plus ``config.replicas`` continuously batching replicas."""

    def __init__(self, config: SimConfig, start: float) -> None:
        self.config = config
        self.ready_at = start + config.cold_start_s
        self.queue: deque[Sequence] = deque()
        self.replicas = [Replica(index=i, slots=config.max_batch) for i in range(config.replicas)]
        self.counters = Counters()
        self.prefix_cache = PrefixCache(config.prefix_cache_blocks, config.prefix_block_tokens)
        self.recent: deque[ServerTimings] = deque(maxlen=RECENT_RECORDS)
        self._next_id = 0

    def is_ready(self, now: float) -> bool:
        return now >= self.ready_at

    @property
    def waiting(self) -> int:
        return len(self.queue)

    @property
    def running(self) -> int:
        return sum(len(replica.running) for replica in self.replicas)

    def submit(
        self,
        now: float,
        prompt_tokens: int,
        target_tokens: int,
        trace_id: str = "",
        blocks: tuple[int, ...] = (),
        priority: int = 0,
        service_class: str = "",
    ) -> Admission:
        """Admit a request to the queue (or refuse it) and wake an idle replica.

        ``blocks`` are the prompt's prefix-cache block hashes (``prefix_cache.block_hashes``).
        """
        if target_tokens < 1 or prompt_tokens < 0:
            raise ValueError("a request needs target_tokens >= 1 and prompt_tokens >= 0")
        self._next_id += 1
        timings = ServerTimings(
            id=self._next_id, trace_id=trace_id, prompt_tokens=prompt_tokens, arrival=now
        )
        seq = Sequence(
            timings=timings,
            target_tokens=target_tokens,
            deadline=now + self.config.queue_timeout_s,
            blocks=blocks,
            priority=priority,
            service_class=service_class,
        )
        self.counters.arrived += 1
        if not self.is_ready(now):
            self.counters.unavailable += 1
            self._close(seq, State.UNAVAILABLE, now)
            return Admission(seq, None, [])
        expired = self.expire_due(now)  # their places are free again
        idle = self._idle_replica()
        full = len(self.queue) >= self.config.max_queue and idle is None
        if full or self._over_share(service_class):
            self.counters.rejected += 1
            self.counters.over_share += not full
            self._close(seq, State.REJECTED, now)
            return Admission(seq, None, expired)
        timings.queue_enter = now
        self.queue.append(seq)
        step = self._begin_step(idle, now) if idle is not None else None
        return Admission(seq, step, expired)

    def end_step(self, step: Step, now: float) -> StepOutcome:
        """Emit the step's tokens, retire finished sequences, begin the next step."""
        emitted: list[Sequence] = []
        finished: list[Sequence] = []
        for seq in step.batch:
            if seq.state is not State.RUNNING:
                continue  # cancelled while the step ran: its work is simply discarded
            seq.generated += 1
            if seq.generated == 1:
                seq.timings.first_token = now
            emitted.append(seq)
            if seq.generated >= seq.target_tokens:
                finished.append(seq)
                seq.state = State.OK
        self.counters.generation_tokens += len(emitted)
        replica = step.replica
        if finished:
            replica.running = [seq for seq in replica.running if seq.state is State.RUNNING]
            for seq in finished:
                self.counters.completed += 1
                self._close(seq, State.OK, now)
        expired = self.expire_due(now)
        return StepOutcome(emitted, finished, expired, self._begin_step(replica, now))

    def expire_due(self, now: float) -> list[Sequence]:
        """Drop queued requests whose deadline has passed (FIFO order = deadline order)."""
        expired: list[Sequence] = []
        while self.queue and self.queue[0].deadline <= now:
            seq = self.queue.popleft()
            self.counters.expired += 1
            self._close(seq, State.EXPIRED, now)
            expired.append(seq)
        return expired

    def expire(self, seq: Sequence, now: float) -> bool:
        """Expire one request whose deadline timer fired; False if it already left the queue."""
        if seq.state is not State.QUEUED:
            return False
        self.queue.remove(seq)
        self.counters.expired += 1
        self._close(seq, State.EXPIRED, now)
        return True

    def cancel(self, seq: Sequence, now: float) -> bool:
        """Withdraw a queued or running request, freeing its slot; False if already final."""
        if seq.state is State.QUEUED:
            self.queue.remove(seq)
        elif seq.state is State.RUNNING and seq.replica is not None:
            seq.replica.running.remove(seq)
        else:
            return False
        self.counters.cancelled += 1
        self._close(seq, State.CANCELLED, now)
        return True

    def cancel_all(self, now: float) -> list[Sequence]:
        """Withdraw every queued and running request (shutdown)."""
        live = list(self.queue) + [seq for replica in self.replicas for seq in replica.running]
        for seq in live:
            self.cancel(seq, now)
        return live

    def _over_share(self, service_class: str) -> bool:
        shares = self.config.shares()
        if service_class not in shares:
            return False
        live = [*self.queue, *(seq for replica in self.replicas for seq in replica.running)]
        mine = sum(1 for seq in live if seq.service_class == service_class)
        capacity = self.config.replicas * self.config.max_batch + self.config.max_queue
        return over_share(service_class, shares, mine, capacity)

    def _idle_replica(self) -> Replica | None:
        for replica in self.replicas:
            if not replica.busy:
                return replica
        return None

    def _begin_step(self, replica: Replica, now: float) -> Step | None:
        admitted: list[Sequence] = []
        if self.config.scheduling == "priority":
            for seq in to_preempt(replica.running, replica.slots, self.queue, _rank):
                seq.state, seq.replica, seq.resumed = State.QUEUED, None, True
                seq.deadline = math.inf  # admitted once: it waits for its turn, not a deadline
                self.queue.append(seq)
                self.counters.preempted += 1
        while self.queue and len(replica.running) < replica.slots:
            seq = next_waiting(self.queue, self.config.scheduling, _rank)
            seq.state = State.RUNNING
            seq.replica = replica
            if not seq.resumed:  # the queue wait is the first one's, as vLLM reports it
                seq.timings.queue_exit = now
            seq.timings.replica = replica.index
            replica.running.append(seq)
            admitted.append(seq)
        replica.busy = bool(replica.running)
        if not replica.busy:
            return None
        uncached = self._prefill_tokens(admitted)
        self.counters.scheduled += len(admitted)
        self.counters.prompt_tokens += sum(seq.timings.prompt_tokens for seq in admitted)
        duration = self.config.step_duration(len(replica.running), uncached)
        return Step(replica, now, duration, tuple(replica.running), len(admitted))

    def _prefill_tokens(self, admitted: list[Sequence]) -> list[int]:
        """Each admitted prompt's uncached tokens. All look up before any inserts: a
        block computed in this step is not there yet for its step-mates."""
        cache = self.prefix_cache
        for seq in admitted:
            seq.timings.cached_tokens = cache.lookup(seq.timings.prompt_tokens, seq.blocks)
        for seq in admitted:
            cache.insert(seq.blocks)
        # A resumed request recomputes what it had generated too (recompute preemption).
        return [
            seq.timings.prompt_tokens - seq.timings.cached_tokens + seq.resumed * seq.generated
            for seq in admitted
        ]

    def _close(self, seq: Sequence, state: State, now: float) -> None:
        seq.state = state
        seq.timings.outcome = state
        seq.timings.end = now
        seq.timings.completion_tokens = seq.generated
        self.recent.append(seq.timings)
