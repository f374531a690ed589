"""Workloads: the whole offered load computed up front from a seed (pure, no I/O)."""

from __future__ import annotations

import numpy as np

from pytest_latency.spec import Workload
from pytest_latency.workload.arrivals import arrival_times
from pytest_latency.workload.plan import Plan, PlannedRequest
from pytest_latency.workload.prompts import make_prompt

__all__ = ("Plan", "PlannedRequest", "arrival_times", "build_plan", "make_prompt")

# Independent random streams per purpose, so changing request shapes never moves arrivals.
_ARRIVALS, _SHAPES, _WARMUP = 0, 1, 2


def build_plan(workload: Workload) -> Plan:
    """Every request the run will offer; the same workload (and seed) gives the same plan.

    With ``repeat: k`` the phases run k times, a cool-down apart; each episode draws its
    own arrivals, and its requests carry the episode number.
    """
    requests: list[PlannedRequest] = []
    shapes = np.random.default_rng([workload.seed, _SHAPES])
    low, high = workload.input_tokens
    for episode in range(workload.repeat):
        phase_start = workload.episode_start_s(episode)
        for index, phase in enumerate(workload.phases):
            # Episode 0 keeps the stream it always had, so plans without repeat never move.
            stream = [workload.seed, _ARRIVALS, index] + ([episode] if episode else [])
            for offset in arrival_times(phase, np.random.default_rng(stream)):
                request_id = len(requests)
                input_tokens = int(shapes.integers(low, high + 1))
                requests.append(
                    PlannedRequest(
                        id=request_id,
                        phase=phase.name,
                        intended_s=phase_start + float(offset),
                        input_tokens=input_tokens,
                        output_tokens=workload.output_tokens,
                        prompt=make_prompt(request_id, input_tokens, shapes, workload.seed),
                        episode=episode,
                    )
                )
            phase_start += phase.duration_s
    warmup_rng = np.random.default_rng([workload.seed, _WARMUP])
    warmup = tuple(
        PlannedRequest(
            id=-(number + 1),
            phase="warmup",
            intended_s=0.0,
            input_tokens=low,
            output_tokens=min(workload.output_tokens, 8),
            prompt=make_prompt(-(number + 1), low, warmup_rng, workload.seed),
        )
        for number in range(workload.warmup_requests)
    )
    return Plan(workload=workload, requests=tuple(requests), warmup=warmup)
