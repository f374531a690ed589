"""Workloads: the whole offered load computed up front from a seed (pure, no I/O).

Prompts are built up front with the plan: memory grows with requests x prompt length
(about 6 bytes per word); a dataset's prompts are shared, never copied.
"""

from __future__ import annotations

import numpy as np

from pytest_latency.spec.model import Phase, Workload
from pytest_latency.workload.arrivals import arrival_times
from pytest_latency.workload.classes import assign_classes
from pytest_latency.workload.datasets import DatasetSampler, output_tokens
from pytest_latency.workload.plan import Plan, PlannedRequest
from pytest_latency.workload.prefixes import PrefixPlanner
from pytest_latency.workload.prompts import make_prompt
from pytest_latency.workload.sessions import Start, plan_sessions
from pytest_latency.workload.shaper import PromptShaper
from pytest_latency.workload.traces import trace_request

__all__ = ("Plan", "PlannedRequest", "arrival_times", "build_plan", "default_nonce", "make_prompt")

# Independent random streams per purpose, so changing request shapes never moves arrivals.
# (prefixes.py and sessions.py use streams 3 and 4, shaper.py 7.)
_ARRIVALS, _SHAPES, _WARMUP, _DATASET, _TRACE = 0, 1, 2, 5, 6


def default_nonce(seed: int) -> str:
    """The nonce a plan's prompts carry when none is given: the seed in hex."""
    return f"{seed:x}"


def _pool(phase: Phase, phase_start: float, episode: int, first_user: int) -> list[Start]:
    """A closed-loop phase's requests: ``requests_per_user`` for each user, all planned at
    the phase start (the driver sets each one's send time when its user is free) and
    numbered round by round, so ids follow the order users send them."""
    users = phase.users or 0
    return [
        Start(phase.name, phase_start, episode, None, first_user + user)
        for _ in range(phase.requests_per_user)
        for user in range(users)
    ]


def _starts(workload: Workload) -> list[Start]:
    """Every arrival of every phase and episode, in order (a trace phase's: its lines)."""
    starts: list[Start] = []
    users = 0  # closed-loop users so far: each has its own number in the plan
    for episode in range(workload.repeat):
        phase_start = workload.episode_start_s(episode)
        for index, phase in enumerate(workload.phases):
            if phase.closed_loop:
                starts.extend(_pool(phase, phase_start, episode, users))
                users += phase.users or 0
                phase_start += phase.duration_s
                continue
            # Episode 0 keeps the stream it always had, so plans without repeat never move.
            stream = [workload.seed, _ARRIVALS, index] + ([episode] if episode else [])
            offsets = arrival_times(phase, np.random.default_rng(stream))
            lines = phase.trace.requests if phase.trace is not None else [None] * len(offsets)
            for offset, line in zip(offsets, lines, strict=True):
                starts.append(Start(phase.name, phase_start + float(offset), episode, line))
            phase_start += phase.duration_s
    return starts


class _Shapes:
    """What one plan's requests draw from: seeded streams, dataset, prefixes, the shaper."""

    def __init__(self, workload: Workload, nonce: str) -> None:
        self.workload = workload
        self.shapes = np.random.default_rng([workload.seed, _SHAPES])
        self.traces = np.random.default_rng([workload.seed, _TRACE])
        self.shaper = PromptShaper(workload.seed, nonce, workload.tokenizer)
        self.prefixes = None
        if workload.prefix is not None:
            self.prefixes = PrefixPlanner(workload.prefix, workload.seed, nonce)
        self.dataset = None
        if workload.prompts is not None:
            stream = np.random.default_rng([workload.seed, _DATASET])
            self.dataset = DatasetSampler(workload.prompts, stream)

    def request(self, request_id: int, start: Start) -> PlannedRequest:
        if start.line is not None:  # a trace line brings its own shape and blocks
            return trace_request(self.workload, start, request_id, self.shaper, self.traces)
        prompt, input_tokens, cap = self._prompt(request_id)
        group = self.prefixes.draw() if self.prefixes is not None else None
        blocks: tuple[int, ...] = ()
        if group is not None and self.prefixes is not None:
            prompt = self.prefixes.text(group) + " " + prompt
            input_tokens += self.prefixes.prefix.tokens
            blocks = self.prefixes.blocks(group)
            if self.shaper.source == "tokenizer":  # the prefix's words are not its tokens
                input_tokens = self.shaper.count(prompt)
        return PlannedRequest(
            id=request_id,
            phase=start.phase,
            intended_s=start.intended_s,
            input_tokens=input_tokens,
            output_tokens=cap,
            prompt=prompt,
            episode=start.episode,
            input_tokens_source=self.shaper.source,
            prefix_blocks=blocks,
            user=start.user,
        )

    def _prompt(self, request_id: int) -> tuple[str, int, int]:
        """Prompt, input tokens and output tokens of one request of a rate phase."""
        if self.dataset is not None:
            entry = self.dataset.next()
            cap = output_tokens(entry, self.workload.output_tokens)
            return entry.text, self.shaper.count(entry.text), cap
        low, high = self.workload.input_tokens
        planned = int(self.shapes.integers(low, high + 1))
        prompt, tokens = self.shaper.made_up(request_id, planned, self.shapes)
        return prompt, tokens, self.workload.output_tokens


def build_plan(workload: Workload, nonce: str | None = None) -> Plan:
    """Every request the run will offer; the same workload, seed and nonce give the same
    plan, prompts included, byte for byte.

    With ``repeat: k`` the phases run k times, a cool-down apart; each episode draws its
    own arrivals, and its requests carry the episode number. ``nonce`` (default: the seed
    in hex) starts every prompt and shared prefix: a fresh one per run keeps a server's
    prefix cache from carrying hits from one run into the next. With ``sessions:`` the
    arrivals start conversations (workload/sessions.py); trace phases send their lines
    (workload/traces.py), and ``prompts:`` deals the user's prompts (workload/datasets.py).
    """
    nonce = default_nonce(workload.seed) if nonce is None else nonce
    shapes = _Shapes(workload, nonce)
    starts = _starts(workload)
    if workload.sessions is not None:
        requests = plan_sessions(workload, starts, shapes.shapes, nonce, shapes.prefixes)
    else:
        requests = [shapes.request(request_id, start) for request_id, start in enumerate(starts)]
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
    return Plan(
        workload=workload, requests=tuple(assign_classes(requests, workload)), warmup=warmup
    )
