"""Workloads: the whole offered load computed up front from a seed (pure, no I/O)."""

from __future__ import annotations

import numpy as np

from pytest_latency.spec import Workload
from pytest_latency.workload.arrivals import arrival_times
from pytest_latency.workload.plan import Plan, PlannedRequest
from pytest_latency.workload.prefixes import PrefixPlanner
from pytest_latency.workload.prompts import make_prompt
from pytest_latency.workload.sessions import Start, plan_sessions

__all__ = ("Plan", "PlannedRequest", "arrival_times", "build_plan", "default_nonce", "make_prompt")

# Independent random streams per purpose, so changing request shapes never moves arrivals.
# (prefixes.py and sessions.py use streams 3 and 4.)
_ARRIVALS, _SHAPES, _WARMUP = 0, 1, 2


def default_nonce(seed: int) -> str:
    """The nonce a plan's prompts carry when none is given: the seed in hex."""
    return f"{seed:x}"


def _starts(workload: Workload) -> list[Start]:
    """Every arrival of every phase and episode, in order."""
    starts: list[Start] = []
    for episode in range(workload.repeat):
        phase_start = workload.episode_start_s(episode)
        for index, phase in enumerate(workload.phases):
            # Episode 0 keeps the stream it always had, so plans without repeat never move.
            stream = [workload.seed, _ARRIVALS, index] + ([episode] if episode else [])
            for offset in arrival_times(phase, np.random.default_rng(stream)):
                starts.append(Start(phase.name, phase_start + float(offset), episode))
            phase_start += phase.duration_s
    return starts


def _single_requests(
    workload: Workload,
    starts: list[Start],
    shapes: np.random.Generator,
    nonce: str,
    prefixes: PrefixPlanner | None,
) -> list[PlannedRequest]:
    low, high = workload.input_tokens
    requests: list[PlannedRequest] = []
    for request_id, start in enumerate(starts):
        input_tokens = int(shapes.integers(low, high + 1))
        prompt = make_prompt(request_id, input_tokens, shapes, nonce)
        group = prefixes.draw() if prefixes is not None else None
        blocks: tuple[int, ...] = ()
        if group is not None and prefixes is not None:
            prompt = prefixes.text(group) + " " + prompt
            input_tokens += prefixes.prefix.tokens
            blocks = prefixes.blocks(group)
        requests.append(
            PlannedRequest(
                id=request_id,
                phase=start.phase,
                intended_s=start.intended_s,
                input_tokens=input_tokens,
                output_tokens=workload.output_tokens,
                prompt=prompt,
                episode=start.episode,
                prefix_blocks=blocks,
            )
        )
    return requests


def build_plan(workload: Workload, nonce: str | None = None) -> Plan:
    """Every request the run will offer; the same workload, seed and nonce give the same
    plan, prompts included, byte for byte.

    With ``repeat: k`` the phases run k times, a cool-down apart; each episode draws its
    own arrivals, and its requests carry the episode number. ``nonce`` (default: the seed
    in hex) starts every prompt and shared prefix: a fresh one per run keeps a server's
    prefix cache from carrying hits from one run into the next. With ``sessions:`` the
    arrivals start conversations (workload/sessions.py).
    """
    nonce = default_nonce(workload.seed) if nonce is None else nonce
    shapes = np.random.default_rng([workload.seed, _SHAPES])
    prefixes = None
    if workload.prefix is not None:
        prefixes = PrefixPlanner(workload.prefix, workload.seed, nonce)
    starts = _starts(workload)
    if workload.sessions is not None:
        requests = plan_sessions(workload, starts, shapes, nonce, prefixes)
    else:
        requests = _single_requests(workload, starts, shapes, nonce, prefixes)
    low = workload.input_tokens[0]
    warmup_rng = np.random.default_rng([workload.seed, _WARMUP])
    warmup = tuple(
        PlannedRequest(
            id=-(number + 1),
            phase="warmup",
            intended_s=0.0,
            input_tokens=low,
            output_tokens=min(workload.output_tokens, 8),
            prompt=make_prompt(-(number + 1), low, warmup_rng, nonce),
        )
        for number in range(workload.warmup_requests)
    )
    return Plan(workload=workload, requests=tuple(requests), warmup=warmup)
