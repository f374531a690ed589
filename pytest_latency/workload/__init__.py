"""Workloads: the whole offered load computed up front from a seed (pure, no I/O).

Prompts are built up front with the plan: memory grows with requests x prompt length
(about 6 bytes per word); a dataset's prompts are shared, never copied.
"""

from __future__ import annotations

import numpy as np

from pytest_latency.spec import Phase, Workload
from pytest_latency.workload.arrivals import arrival_times
from pytest_latency.workload.datasets import DatasetSampler, output_tokens
from pytest_latency.workload.plan import Plan, PlannedRequest
from pytest_latency.workload.prompts import make_prompt
from pytest_latency.workload.shaper import PromptShaper
from pytest_latency.workload.traces import trace_requests

__all__ = ("Plan", "PlannedRequest", "arrival_times", "build_plan", "make_prompt")

# Independent random streams per purpose, so changing request shapes never moves arrivals.
# (Streams 3 and 4 are kept for shared prefixes and sessions; shaper.py uses 7.)
_ARRIVALS, _SHAPES, _WARMUP, _DATASET, _TRACE = 0, 1, 2, 5, 6


class _Planner:
    """The state one plan's phases share: request shapes, the dataset, the shaper."""

    def __init__(self, workload: Workload) -> None:
        self.workload = workload
        self.shapes = np.random.default_rng([workload.seed, _SHAPES])
        self.traces = np.random.default_rng([workload.seed, _TRACE])
        self.shaper = PromptShaper(workload.seed, workload.tokenizer)
        self.dataset = (
            DatasetSampler(workload.prompts, np.random.default_rng([workload.seed, _DATASET]))
            if workload.prompts is not None
            else None
        )
        self.requests: list[PlannedRequest] = []

    def add_phase(self, phase: Phase, index: int, phase_start: float, episode: int) -> None:
        workload = self.workload
        if phase.trace is not None:
            self.requests.extend(
                trace_requests(
                    workload, phase, phase_start, len(self.requests), episode, self.shaper,
                    self.traces,
                )
            )  # fmt: skip
            return
        # Episode 0 keeps the stream it always had, so plans without repeat never move.
        stream = [workload.seed, _ARRIVALS, index] + ([episode] if episode else [])
        for offset in arrival_times(phase, np.random.default_rng(stream)):
            request_id = len(self.requests)
            prompt, tokens, cap = self._shape(request_id)
            self.requests.append(
                PlannedRequest(
                    id=request_id,
                    phase=phase.name,
                    intended_s=phase_start + float(offset),
                    input_tokens=tokens,
                    output_tokens=cap,
                    prompt=prompt,
                    episode=episode,
                    input_tokens_source=self.shaper.source,
                )
            )

    def _shape(self, request_id: int) -> tuple[str, int, int]:
        """Prompt, input tokens and output tokens of one request of a rate phase."""
        if self.dataset is not None:
            entry = self.dataset.next()
            cap = output_tokens(entry, self.workload.output_tokens)
            return entry.text, self.shaper.count(entry.text), cap
        low, high = self.workload.input_tokens
        planned = int(self.shapes.integers(low, high + 1))
        prompt, tokens = self.shaper.made_up(request_id, planned, self.shapes)
        return prompt, tokens, self.workload.output_tokens


def build_plan(workload: Workload) -> Plan:
    """Every request the run will offer; the same workload (and seed) gives the same plan.

    With ``repeat: k`` the phases run k times, a cool-down apart; each episode draws its
    own arrivals, and its requests carry the episode number.
    """
    planner = _Planner(workload)
    for episode in range(workload.repeat):
        phase_start = workload.episode_start_s(episode)
        for index, phase in enumerate(workload.phases):
            planner.add_phase(phase, index, phase_start, episode)
            phase_start += phase.duration_s
    low = workload.input_tokens[0]
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
    return Plan(workload=workload, requests=tuple(planner.requests), warmup=warmup)
