"""The plan: every request a run will offer, computed up front from the workload and seed."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_latency.records import InputTokenSource, RequestRecord
from pytest_latency.spec.model import Workload


@dataclass(frozen=True, slots=True)
class PlannedRequest:
    """One request to offer: when (relative to run start) and what shape."""

    id: int
    phase: str
    intended_s: float
    input_tokens: int
    output_tokens: int
    prompt: str
    episode: int = 0  # which repeat of the phases (``repeat: k``)
    # A multi-turn conversation's id and this request's turn in it (0, 1, ...); None
    # outside sessions.
    session: int | None = None
    turn: int | None = None
    # Whether ``input_tokens`` is exact ("tokenizer": built with the model's tokenizer) or
    # the planned length in words ("estimate"); the server's own count is recorded apart.
    input_tokens_source: InputTokenSource = "estimate"
    # Hash ids of the shared-prefix blocks the prompt starts with (a trace's ``hash_ids``,
    # a ``prefix:`` group's blocks); empty when the prompt shares nothing by design.
    prefix_blocks: tuple[int, ...] = ()
    # A closed-loop phase's user (unique in the plan): the request is sent when that user
    # is free, and dropped (never offered) if the phase ends first. None: open loop.
    user: int | None = None
    service_class: str | None = None  # the workload's class it belongs to (classes:)

    def blank_record(self) -> RequestRecord:
        """The record this request starts with (cancelled, unsent), carrying what the plan
        knows of it; the driver fills in the rest. The one place a plan becomes records."""
        return RequestRecord(
            id=self.id,
            phase=self.phase,
            intended_s=self.intended_s,
            input_tokens=self.input_tokens,
            max_tokens=self.output_tokens,
            episode=self.episode,
            session=self.session,
            turn=self.turn,
            input_tokens_source=self.input_tokens_source,
            service_class=self.service_class,
        )


@dataclass(frozen=True, slots=True)
class Plan:
    """The whole offered load. ``warmup`` requests are sent before time zero, never recorded."""

    workload: Workload
    requests: tuple[PlannedRequest, ...]
    warmup: tuple[PlannedRequest, ...] = ()

    @property
    def duration_s(self) -> float:
        return self.workload.duration_s

    def offered_in(self, phase: str) -> int:
        return sum(1 for request in self.requests if request.phase == phase)
