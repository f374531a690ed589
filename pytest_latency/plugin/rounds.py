"""Runs that extend until decided: the workload, then more episodes in rounds.

The first round is the workload as written; each later round offers more episodes (the
phases in order, as ``repeat:`` does, a cooldown before each). After every round the
objectives are judged on every record so far at that look's share of the error budget
(:mod:`pytest_latency.analysis.looks`); the run stops when none is inconclusive, when
the next round would not fit in the budget, or when the run cannot be trusted (the
generator fell behind, Ctrl-C). Each round's drive is bounded like any run's, and a
round starts only when its planned length and drain allowance fit in what is left, so
the run ends within the budget plus at most one request timeout.

Every round's records go on one timeline, the plan's own for that many episodes (the
drains between rounds are not on it); request ids and episodes run on, so every
offered request has exactly one record and episodes stay the independent units.
"""

from __future__ import annotations

import dataclasses
import secrets
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pytest_latency.analysis.looks import (
    Look,
    UntilDecided,
    extended,
    plan_looks,
    round_cooldown_s,
    round_cost_s,
)
from pytest_latency.driver.client_load import ClientLoad
from pytest_latency.records import RequestRecord
from pytest_latency.spec.model import MAX_SEED, Objective, SpecError, Workload
from pytest_latency.workload import Plan, build_plan

# Rounds' seeds step by this odd constant (2^64 / golden ratio): far apart, never equal.
_SEED_STRIDE = 0x9E3779B97F4A7C15

if TYPE_CHECKING:
    from pytest_latency.analysis.health import GeneratorHealth
    from pytest_latency.driver.worker_clocks import GeneratorWorker
    from pytest_latency.telemetry.join import JoinReport
    from pytest_latency.telemetry.prometheus import MetricsSeries


@dataclass(slots=True)
class Measured:
    """What one drive (or every round of one run) measured, on one timeline."""

    workload: Workload  # the timeline: the workload for the episodes that ran
    records: list[RequestRecord]
    started_at_unix: float
    elapsed_s: float
    workers: list[GeneratorWorker] = field(default_factory=list)
    client: ClientLoad | None = None  # the driving client's CPU and loop lag
    joined: JoinReport | None = None
    series: MetricsSeries | None = None  # /metrics during the first round
    interrupted: BaseException | None = None
    until_decided: UntilDecided | None = None

    def health(self, max_lag_p99_s: float) -> GeneratorHealth:
        """The generator's health over what was measured (schedule, workers, client)."""
        from pytest_latency.analysis.health import check_generator

        return check_generator(
            self.records,
            self.workload,
            max_lag_p99_s=max_lag_p99_s,
            workers=self.workers,
            client=self.client,
        )


#: drive(plan) -> what it measured (records relative to the plan's time zero)
Drive = Callable[[Plan], Measured]


def with_budget(
    workload: Workload, objectives: Sequence[Objective], default_s: float | None
) -> Workload:
    """``workload`` with ``default_s`` (``--latency-until-decided``) as its budget when it
    has none of its own and has objectives to wait for; SpecError for a budget without
    objectives (nothing to wait for)."""
    if workload.until_decided_s is None:
        if default_s is None or not objectives:
            return workload
        return dataclasses.replace(workload, until_decided_s=default_s)
    if not objectives:
        raise SpecError(
            "until_decided runs until its objectives are decided: pass them,"
            " e.g. latency.run(..., objectives=[objective(...)], until_decided_s=180)"
        )
    return workload


def fresh_plan(workload: Workload) -> Plan:
    """The workload's plan with a fresh nonce in every prompt: no prefix-cache hits
    carried over from an earlier run (or round) against the same server."""
    return build_plan(workload, nonce=secrets.token_hex(4))


def round_plan(workload: Workload, before: int, size: int, first_id: int) -> tuple[Plan, float]:
    """``size`` more episodes as a plan of their own, from time zero, and the offset of
    its time zero on the run's timeline (episode ``before`` starts there). Each round
    draws its own arrivals and shapes (a seed derived from the workload's and the
    round's first episode); its episodes are numbered on from ``before`` and its ids
    from ``first_id``. Only the round is planned: a long run does not re-plan its past."""
    seed = (workload.seed + before * _SEED_STRIDE) % (MAX_SEED + 1)
    cooldown = round_cooldown_s(workload)
    own = dataclasses.replace(
        workload, repeat=size, cooldown_s=cooldown, warmup_requests=0, seed=seed
    )
    requests = tuple(
        dataclasses.replace(request, id=first_id + request.id, episode=before + request.episode)
        for request in fresh_plan(own).requests
    )
    return Plan(workload=own, requests=requests), extended(workload, before + size).episode_start_s(
        before
    )


def _shift(instant: float | None, offset: float) -> float | None:
    return None if instant is None else instant + offset


def placed(records: Sequence[RequestRecord], offset: float) -> list[RequestRecord]:
    """``records`` moved ``offset`` seconds later on the run's timeline."""
    return [
        dataclasses.replace(
            record,
            intended_s=record.intended_s + offset,
            sent_s=_shift(record.sent_s, offset),
            first_token_s=_shift(record.first_token_s, offset),
            end_s=_shift(record.end_s, offset),
        )
        for record in records
    ]


def _merge_joins(first: JoinReport | None, later: JoinReport | None) -> JoinReport | None:
    if first is None or later is None:
        return first or later
    sources = dict(first.sources)
    for name, count in later.sources.items():
        sources[name] = sources.get(name, 0) + count
    return dataclasses.replace(
        first,
        requests=first.requests + later.requests,
        joined=first.joined + later.joined,
        sources=sources,
        unknown_traces=first.unknown_traces + later.unknown_traces,
        waited_s=first.waited_s + later.waited_s,
        span_problem=later.span_problem or first.span_problem,  # the latest round's first
    )


class Rounds:
    """One ``until_decided`` run: drives rounds and judges after each."""

    def __init__(
        self,
        drive: Drive,
        workload: Workload,
        objectives: Sequence[Objective],
        *,
        confidence: float,
        max_lag_s: float,
        pause: Callable[[float], None] = time.sleep,
    ) -> None:
        """``confidence``: each objective's whole budget (shared over the looks);
        ``pause``: how the cooldown between rounds is waited (a simulation skips it)."""
        assert workload.until_decided_s is not None  # the session asks only then
        self.drive, self.workload, self.max_lag_s = drive, workload, max_lag_s
        self.pause = pause
        # Relative objectives need the baseline and capacity a search: judged after.
        self.judged = [goal for goal in objectives if not goal.relative]
        self.judged = [goal for goal in self.judged if goal.metric != "capacity"]
        budget = workload.until_decided_s
        self.log = UntilDecided(budget, plan_looks(workload, budget))
        self.confidences = self.log.schedule.confidences(confidence)

    def run(self) -> Measured:
        """Every round that the budget holds and the objectives need."""
        started = time.monotonic()
        measured = self.drive(fresh_plan(self.workload))
        episodes = self.workload.repeat
        for index, size in enumerate(self.log.schedule.rounds):
            if index > 0:
                left = max(0.0, self.log.max_s - (time.monotonic() - started))
                if round_cost_s(self.workload, size) > left:
                    self.log.stopped = f"budget: {left:.0f}s left, a round needs more"
                    break
                episodes += self._next_round(measured, episodes, size)
            measured.workload = extended(self.workload, episodes)
            if measured.interrupted is not None:
                self.log.stopped = "interrupted"
                break
            if (why := self._look(index, measured, started)) is not None:
                self.log.stopped = why
                break
        else:
            self.log.stopped = "budget: every planned round ran"
        self.log.used_s = time.monotonic() - started
        measured.elapsed_s = self.log.used_s
        measured.until_decided = self.log
        return measured

    def _next_round(self, measured: Measured, before: int, size: int) -> int:
        """Drive ``size`` more episodes into ``measured``; the episodes it added."""
        plan, offset = round_plan(self.workload, before, size, len(measured.records))
        try:  # the cooldown before the round's first episode (the timeline has it too)
            self.pause(round_cooldown_s(self.workload))
        except KeyboardInterrupt as stop:  # Ctrl-C or SIGTERM: keep the rounds so far
            measured.interrupted = stop
            return 0
        later = self.drive(plan)
        measured.records.extend(placed(later.records, offset))
        measured.joined = _merge_joins(measured.joined, later.joined)
        measured.workers.extend(later.workers)
        measured.client = ClientLoad.worst([measured.client, later.client])
        measured.interrupted = later.interrupted
        return size

    def _look(self, index: int, measured: Measured, started: float) -> str | None:
        """Judge the objectives at look ``index``; why to stop, or None to go on."""
        from pytest_latency.analysis.objectives import decide_objectives
        from pytest_latency.analysis.verdict import Verdict

        health = measured.health(self.max_lag_s)
        results = decide_objectives(
            self.judged,
            measured.records,
            confidence=self.confidences[index],
            workload=measured.workload,
        )
        undecided = tuple(r.objective.label for r in results if r.verdict is Verdict.INCONCLUSIVE)
        self.log.looks.append(
            Look(
                round=index + 1,
                episodes=measured.workload.repeat,
                requests=len(measured.records),
                elapsed_s=time.monotonic() - started,
                confidence=self.confidences[index],
                undecided=undecided,
            )
        )
        if not health.valid:
            return "the run is invalid: " + "; ".join(health.reasons)
        return None if undecided else "every objective decided"
