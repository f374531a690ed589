"""Multi-turn sessions (``sessions: {turns: [lo, hi], think_time: 2s}``), planned up front.

The phases' arrivals are session *starts*. Each session draws its number of turns and
each turn's new question; turn ``k`` is planned to carry every earlier question and
answer, so its ``input_tokens`` is the conversation so far (answers counted at their
planned ``output_tokens``) plus its own question. A later turn's ``intended_s`` here is
the earliest it can be sent (the start plus ``k`` think times); the driver plans it,
once the previous turn has ended, at that end plus the think time, and measures its
latency from there (driver/sessions.py).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_latency.spec.model import Workload
from pytest_latency.spec.trace_lines import TraceRequest
from pytest_latency.workload.plan import PlannedRequest
from pytest_latency.workload.prefixes import PrefixPlanner
from pytest_latency.workload.prompts import make_prompt

_SESSION_STREAM = 4  # the seed's random stream for turn counts


@dataclass(frozen=True, slots=True)
class Start:
    """One arrival of a phase: a request, or a session's first turn."""

    phase: str
    intended_s: float
    episode: int
    line: TraceRequest | None = None  # a trace phase's line (workload/traces.py)
    user: int | None = None  # a closed-loop phase's user (unique in the plan)


def plan_sessions(
    workload: Workload,
    starts: Sequence[Start],
    shapes: np.random.Generator,
    nonce: str,
    prefixes: PrefixPlanner | None,
) -> list[PlannedRequest]:
    """Every turn of every session; a session's turns have consecutive ids."""
    assert workload.sessions is not None
    low, high = workload.input_tokens
    turns_low, turns_high = workload.sessions.turns
    think = workload.sessions.think_time_s
    turn_counts = np.random.default_rng([workload.seed, _SESSION_STREAM])
    requests: list[PlannedRequest] = []
    for session, start in enumerate(starts):
        group = prefixes.draw() if prefixes is not None else None
        context = 0  # tokens of the conversation before this turn
        for turn in range(int(turn_counts.integers(turns_low, turns_high + 1))):
            request_id = len(requests)
            question = int(shapes.integers(low, high + 1))
            prompt = make_prompt(request_id, question, shapes, nonce)
            blocks: tuple[int, ...] = ()
            if group is not None and prefixes is not None:
                blocks = prefixes.blocks(group)
                if turn == 0:  # the conversation starts with the shared prefix
                    prompt = prefixes.text(group) + " " + prompt
                    question += prefixes.prefix.tokens
            requests.append(
                PlannedRequest(
                    id=request_id,
                    phase=start.phase,
                    intended_s=start.intended_s + turn * think,
                    input_tokens=context + question,
                    output_tokens=workload.output_tokens,
                    prompt=prompt,
                    episode=start.episode,
                    session=session,
                    turn=turn,
                    prefix_blocks=blocks,
                )
            )
            context += question + workload.output_tokens
    return requests


def session_allowance_s(workload: Workload) -> float:
    """How long after the phases the last session can still run: its later turns, each
    bounded by the request timeout plus the think time."""
    if workload.sessions is None:
        return 0.0
    later_turns = workload.sessions.turns[1] - 1
    return later_turns * (workload.timeout_s + workload.sessions.think_time_s)
