"""Closed-loop load in virtual time: ``users`` users, each sending its next request when
the previous one ended (plus a think time), against the reference server's engine.

The twin of :func:`pytest_latency.sim.virtual.simulate` for ``arrival: concurrent``
phases: same :class:`~pytest_latency.sim.engine.Engine`, a discrete-event loop, no
network. Its throughput is what a closed-loop phase against the live embedded server
should measure, less the client's own round trip (loopback: well under a millisecond).
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Sequence as Seq

from pytest_latency.sim.config import SimConfig
from pytest_latency.sim.engine import Engine, Sequence, State, Step
from pytest_latency.sim.virtual import Arrival, SimResult, result_of

_ARRIVE, _STEP_END, _DEADLINE = 0, 1, 2


def simulate_closed(
    config: SimConfig,
    users: int,
    duration_s: float,
    shapes: Seq[tuple[int, int]],
    think_s: float = 0.0,
) -> list[SimResult]:
    """Every request the users sent in ``[0, duration_s)``, in send order; ``shapes``
    (prompt, output tokens) are used in turn. A user whose request ends (or is refused,
    or expires) is free ``think_s`` later; requests in flight at the end run to theirs."""
    if users < 1 or duration_s <= 0 or not shapes:
        raise ValueError("simulate_closed needs users >= 1, duration_s > 0 and shapes")
    engine = Engine(config, start=0.0)
    events: list[tuple[float, int, int, object]] = []
    counter = itertools.count()
    shape = itertools.cycle(shapes)
    sent: list[tuple[Arrival, Sequence]] = []
    owner: dict[int, int] = {}  # sequence id -> user
    token_times: dict[int, list[float]] = {}

    def push(at: float, kind: int, payload: object) -> None:
        heapq.heappush(events, (at, next(counter), kind, payload))

    def free(user: int, now: float) -> None:
        if now + think_s < duration_s:
            push(now + think_s, _ARRIVE, user)

    for user in range(users):
        push(0.0, _ARRIVE, user)
    while events:  # finite: no arrival at or after duration_s, every sequence ends
        now, _, kind, payload = heapq.heappop(events)
        if kind == _ARRIVE:
            assert isinstance(payload, int)
            prompt, output = next(shape)
            admission = engine.submit(now, prompt, output)
            seq = admission.sequence
            sent.append((Arrival(now, prompt, output), seq))
            owner[seq.id] = payload
            if seq.state is State.QUEUED:
                push(seq.deadline, _DEADLINE, seq)
            elif seq.state is not State.RUNNING:  # refused at once: the user is free
                free(payload, now)
            if admission.step is not None:
                push(admission.step.end, _STEP_END, admission.step)
        elif kind == _STEP_END:
            assert isinstance(payload, Step)
            outcome = engine.end_step(payload, now)
            for seq in outcome.emitted:
                token_times.setdefault(seq.id, []).append(now)
            for seq in outcome.finished:
                free(owner[seq.id], now)
            if outcome.next_step is not None:
                push(outcome.next_step.end, _STEP_END, outcome.next_step)
        else:
            assert isinstance(payload, Sequence)
            # Expired now, or already by the engine's own sweep: the user is free.
            if engine.expire(payload, now) or payload.state is State.EXPIRED:
                free(owner[payload.id], now)
    return [result_of(arrival, seq, token_times.get(seq.id, [])) for arrival, seq in sent]
