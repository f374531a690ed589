"""The plan: every request a run will offer, computed up front from the workload and seed."""

from __future__ import annotations

from dataclasses import dataclass

from pytest_latency.spec import Workload


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
