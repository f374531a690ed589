"""Run the reference server's scheduling model in virtual time: no sockets, no sleeping.

:func:`simulate` drives the same :class:`~pytest_latency.sim.engine.Engine` as the
live server, with a discrete-event loop instead of asyncio timers, so a calibration
or a what-if ("a third replica?") takes milliseconds and is exactly reproducible.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass

from pytest_latency.sim.config import SimConfig
from pytest_latency.sim.engine import Engine, Sequence, State, Step


@dataclass(frozen=True, slots=True)
class Arrival:
    """One request offered to the model: when, and its exact prompt/output lengths.

    ``blocks`` are its prompt's prefix-cache block hashes (``prefix_cache.block_hashes``,
    or any ints that are equal exactly where two prompts share a prefix): with them the
    prefix cache works as on the live server.
    """

    at_s: float
    prompt_tokens: int
    output_tokens: int
    blocks: tuple[int, ...] = ()
    priority: int = 0  # with scheduling: priority, lower goes first
    service_class: str = ""  # for class_shares admission

    def __post_init__(self) -> None:
        if self.at_s < 0 or self.prompt_tokens < 0 or self.output_tokens < 1:
            raise ValueError(f"invalid arrival {self!r}: need at_s >= 0, prompt >= 0, output >= 1")


@dataclass(frozen=True, slots=True)
class SimResult:
    """Server-side timings of one simulated request, seconds from the simulation start."""

    arrival: Arrival
    outcome: State
    replica: int | None
    queue_wait_s: float | None
    ttft_s: float | None  # first token minus arrival (server boundary, no network)
    e2e_s: float | None
    token_times_s: tuple[float, ...]
    cached_tokens: int = 0  # prompt tokens the prefix cache held when it was admitted

    @property
    def itl_s(self) -> list[float]:
        times = self.token_times_s
        return [later - earlier for earlier, later in itertools.pairwise(times)]


_ARRIVE, _STEP_END, _DEADLINE = 0, 1, 2


#: Called with the time a request left the server (it ended, was refused, or expired);
#: the arrival it returns, if any, joins the run: a closed-loop user's next request.
OnRelease = Callable[[float], Arrival | None]


def simulate(
    config: SimConfig, arrivals: Iterable[Arrival], on_release: OnRelease | None = None
) -> list[SimResult]:
    """Play ``arrivals`` through the engine; one result per arrival, in arrival order.

    Time zero is the server's start, so ``config.cold_start_s`` applies: arrivals before
    it are refused as ``unavailable``, as the live server answers 503. ``on_release``
    adds the arrivals each request's release causes (see
    :func:`~pytest_latency.sim.closed.simulate_closed`); it must not return one at the
    release time for a refusal, or virtual time never advances.
    """
    engine = Engine(config, start=0.0)
    events: list[tuple[float, int, int, object]] = []
    counter = itertools.count()  # insertion order breaks ties, keeping the run deterministic

    def push(at: float, kind: int, payload: object) -> None:
        heapq.heappush(events, (at, next(counter), kind, payload))

    def release(now: float) -> None:
        if on_release is not None and (follow_up := on_release(now)) is not None:
            push(follow_up.at_s, _ARRIVE, follow_up)

    for arrival in sorted(arrivals, key=lambda arrival: arrival.at_s):
        push(arrival.at_s, _ARRIVE, arrival)
    sent: list[tuple[Arrival, Sequence]] = []
    token_times: dict[int, list[float]] = {}
    while events:  # finite if on_release is: every sequence ends within output_tokens steps
        now, _, kind, payload = heapq.heappop(events)
        if kind == _ARRIVE:
            assert isinstance(payload, Arrival)
            admission = engine.submit(
                now, payload.prompt_tokens, payload.output_tokens, blocks=payload.blocks,
                priority=payload.priority, service_class=payload.service_class,
            )  # fmt: skip
            seq = admission.sequence
            sent.append((payload, seq))
            if seq.state is State.QUEUED:
                push(seq.deadline, _DEADLINE, seq)
            elif seq.state is not State.RUNNING:  # refused at once
                release(now)
            if admission.step is not None:
                push(admission.step.end, _STEP_END, admission.step)
        elif kind == _STEP_END:
            assert isinstance(payload, Step)
            outcome = engine.end_step(payload, now)
            for seq in outcome.emitted:
                token_times.setdefault(seq.id, []).append(now)
            for _ in outcome.finished:
                release(now)
            if outcome.next_step is not None:
                push(outcome.next_step.end, _STEP_END, outcome.next_step)
        else:
            assert isinstance(payload, Sequence)
            # Expired now, or already by the engine's own sweep: released at its deadline.
            if engine.expire(payload, now) or payload.state is State.EXPIRED:
                release(now)
    return [result_of(arrival, seq, token_times.get(seq.id, [])) for arrival, seq in sent]


def result_of(arrival: Arrival, seq: Sequence, times: list[float]) -> SimResult:
    timings = seq.timings
    first = timings.first_token
    ok = seq.state is State.OK
    return SimResult(
        arrival=arrival,
        outcome=seq.state,
        replica=timings.replica,
        queue_wait_s=timings.queue_wait_s,
        ttft_s=None if first is None else first - timings.arrival,
        e2e_s=timings.end - timings.arrival if ok and timings.end is not None else None,
        token_times_s=tuple(times),
        cached_tokens=timings.cached_tokens,
    )
