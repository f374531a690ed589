"""Capacity probes in virtual time: each probe plays a warm-up and a probe phase through
a simulated server, is decided at the pre-planned looks as a live probe is
(:func:`~pytest_latency.analysis.capacity_probe.decide_probe`, earlier probes at the
same rate pooled), and stops at the first look that fails. As live, an early look
waits for its requests to end until the next look is due (its cost counts the wait),
and is skipped when they have not; the last look's wait is not charged."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence

from pytest_latency.analysis.capacity_probe import (
    SATURATION_LABEL,
    check_spans,
    decide_probe,
    queue_alpha,
    queue_evidence,
    saturated,
)
from pytest_latency.analysis.capacity_result import ProbeResult
from pytest_latency.records import RequestRecord, Status
from pytest_latency.sim.config import SimConfig
from pytest_latency.sim.virtual import Arrival, simulate
from pytest_latency.spec.model import Objective, Workload
from pytest_latency.workload import build_plan

#: records(phases as (name, rate, seconds), seed) -> every request, served to the end
Serve = Callable[[list[tuple[str, float, float]], int], list[RequestRecord]]


def virtual_records(workload: Workload, config: SimConfig) -> list[RequestRecord]:
    """The workload's planned requests served by ``config``'s engine in virtual time,
    each sent on time; a request the engine refused is rejected when it was sent."""
    plan = build_plan(workload)
    arrivals = [Arrival(p.intended_s, p.input_tokens, p.output_tokens) for p in plan.requests]
    records = []
    for planned, result in zip(plan.requests, simulate(config, arrivals), strict=True):
        record = RequestRecord(planned.id, planned.phase, planned.intended_s, planned.input_tokens)
        record.sent_s = planned.intended_s
        if result.ttft_s is not None and result.e2e_s is not None:
            record.status = Status.OK
            record.first_token_s = planned.intended_s + result.ttft_s
            record.end_s = planned.intended_s + result.e2e_s
        else:
            record.status, record.end_s = Status.REJECTED, planned.intended_s
        records.append(record)
    return records


class VirtualProbes:
    """A probe function for :func:`search_capacity`; each probe its own seed."""

    def __init__(
        self,
        serve: Serve,
        criteria: Sequence[Objective],
        *,
        warmup_s: float,
        probe_s: float,
        seed: int,
        drain_s: float = 0.0,
    ) -> None:
        self.serve, self.criteria = serve, criteria
        self.warmup_s, self.probe_s, self.drain_s = warmup_s, probe_s, drain_s
        self.seed = seed
        self.history: list[tuple[float, list[RequestRecord]]] = []

    def __call__(
        self, rate: float, looks: Sequence[float], confidences: Sequence[float]
    ) -> ProbeResult:
        phases = [("warmup", rate, self.warmup_s), ("probe", rate, self.probe_s)]
        records = self.serve(phases, self.seed + 7919 * len(self.history))
        earlier = [seen for done, seen in self.history if done == rate]
        level = queue_alpha(len(self.criteria), confidences, self.probe_s, looks)
        at_looks = {look * self.probe_s for look in looks}
        due = [s for s in check_spans(self.probe_s, looks) if s not in at_looks]
        for index, (look, confidence) in enumerate(zip(looks, confidences, strict=True)):
            cutoff = self.warmup_s + look * self.probe_s
            while due and self.warmup_s + due[0] < cutoff:  # between looks, as a live probe
                checked = self.warmup_s + due.pop(0)
                before = [r for r in records if r.intended_s < checked]
                if saturated(_as_of(before, checked), self.warmup_s, checked, level):
                    seen = [r for r in before if r.phase == "probe"]
                    labels = [goal.label for goal in self.criteria]
                    verdicts = {**dict.fromkeys(labels, "inconclusive"), SATURATION_LABEL: "fail"}
                    cost = checked + self.drain_s
                    queue = queue_evidence(_as_of(before, checked), self.warmup_s, checked, level)
                    shown = () if queue is None else (queue,)
                    return ProbeResult(rate, len(seen), verdicts, True, cost, None, shown)
            seen = [r for r in records if r.phase == "probe" and r.intended_s < cutoff]
            last = look == looks[-1]
            # A live early look waits for its requests until the next look is due, and is
            # skipped (spending none of its alpha) when they are still in flight then.
            ended = max([cutoff, *(r.end_s for r in seen if r.end_s is not None)])
            if not last and ended > self.warmup_s + looks[index + 1] * self.probe_s:
                continue
            before = [r for r in records if r.intended_s < cutoff]
            verdicts, evidence = decide_probe(
                self.criteria, seen, before, rate,
                confidence=confidence, warmup_s=self.warmup_s, queue_level=level,
                earlier=earlier,
            )  # fmt: skip
            if "fail" in verdicts.values() or last:  # early looks stop on a fail only
                self.history.append((rate, seen))
                cost = (cutoff if last else ended) + self.drain_s
                return ProbeResult(rate, len(seen), verdicts, not last, cost, None, tuple(evidence))
        raise AssertionError("the last look always decides")


def _as_of(records: Sequence[RequestRecord], now: float) -> list[RequestRecord]:
    """The records as a live probe sees them at ``now``: a request not ended yet has no end."""
    return [
        dataclasses.replace(record, end_s=None)
        if record.end_s is not None and record.end_s > now
        else record
        for record in records
    ]
