"""Objectives over a burst: the episodes they need, checked before anything is sent.

A burst (a rate well above the phase before it, or a ramp) is a transient: its queue
builds through the phase, so the requests of one burst share one fate and the whole
phase holds about one sample of it. The serial estimates of :mod:`.dependence` assume
load that holds still, and see correlation only up to an eighth of the scope, so an
objective over one burst episode cannot be decided honestly: it is decided over
episodes (``repeat: k``, or ``until_decided`` adding them in rounds). The floor here is
the fewest episodes whose bound could exist when the burst's count is correlated (the
bound then pays Student's t at ``k - 1`` degrees of freedom); real bursts that differ
from one another need more. Pure: no I/O, nothing sent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pytest_latency.analysis.dependence import Dependence, episode_degrees
from pytest_latency.analysis.looks import (
    drain_allowance_s,
    episode_cost_s,
    extended,
    plan_looks,
)
from pytest_latency.analysis.percentiles import adjusted_confidence
from pytest_latency.analysis.planning import (
    ObjectivePower,
    burst_phases,
    needed_requests,
    plan_power,
    planned_samples,
)
from pytest_latency.analysis.recovery_plan import recovery_power
from pytest_latency.spec.model import Objective, Workload
from pytest_latency.workload import Plan, build_plan

MAX_EPISODES_SEARCHED = 400  # fewest-episodes searches stop here (MAX_REPEAT allows more)
# The until_decided budget a refusal suggests holds this many times the floor's episodes.
# The floor takes each burst's requests as independent, and they share a queue: the
# README burst against the embedded server has a design effect of about 5 within its
# episodes, so 6 episodes (the floor's budget) left its p95 undecided; the suggested
# 810 s decided it after 16 (581 s). The rounds stop as soon as every objective is
# decided, so unused room costs nothing.
SUGGESTED_ROOM = 3


def episode_floor(objective: Objective, per_episode: int, confidence: float) -> int | None:
    """Fewest episodes whose bound could decide ``objective`` when its count is correlated
    within each episode: Student's t at ``k - 1`` degrees of freedom (:mod:`.percentiles`),
    ``per_episode`` samples each, and no more correlation than that. None: not within
    ``MAX_EPISODES_SEARCHED`` (or no count can)."""
    for k in range(2, MAX_EPISODES_SEARCHED + 1):
        n = k * per_episode
        correlated = Dependence(n, 1.0 + 1e-9, episode_degrees(k), "episodes", episodes=k)
        adjusted = adjusted_confidence(confidence, correlated)
        if adjusted >= 1.0 or n < _closed_form_need(objective, adjusted):
            continue  # the closed form is a few requests from the exact count: skip early
        needed = needed_requests(objective, adjusted)
        if needed is not None and n >= needed:
            return k
    return None


def _closed_form_need(objective: Objective, confidence: float) -> float:
    """A little under :func:`needed_requests`, without its exact search (cheap)."""
    tail = (1.0 - confidence) / 2.0
    if objective.p is not None and not objective.relative:
        return math.log(tail) / math.log(objective.p / 100.0) - 5.0
    return 0.0


def until_decided_budget(
    workload: Workload, objective: Objective, per_episode: int, confidence: float
) -> tuple[int, float] | None:
    """The fewest episodes, and an ``until_decided`` budget in seconds, whose last look
    could decide ``objective`` (the looks' alpha spending included); None if none."""
    floor = episode_floor(objective, per_episode, confidence)
    if floor is None:
        return None
    for episodes in range(max(floor, workload.repeat), MAX_EPISODES_SEARCHED + 1):
        budget = _budget_for(workload, episodes)
        schedule = plan_looks(workload, budget)
        last = schedule.confidences(confidence)[-1]
        if episode_floor(objective, per_episode, last) in range(2, schedule.episodes + 1):
            return schedule.episodes, 10.0 * math.ceil(budget / 10.0)
    return None


def suggested_budget(
    workload: Workload, objective: Objective, per_episode: int, confidence: float
) -> tuple[int, float] | None:
    """The ``until_decided`` budget a refusal suggests: room for :data:`SUGGESTED_ROOM`
    times the episodes of :func:`until_decided_budget`, at least its own budget."""
    fewest = until_decided_budget(workload, objective, per_episode, confidence)
    if fewest is None:
        return None
    budget = _budget_for(workload, SUGGESTED_ROOM * fewest[0])
    budget = max(fewest[1], 10.0 * math.ceil(budget / 10.0))
    return plan_looks(workload, budget).episodes, budget


def _budget_for(workload: Workload, episodes: int) -> float:
    """Seconds an ``until_decided`` budget needs to run ``episodes`` episodes as planned:
    the workload once with its drain, then each added episode's cost."""
    first = workload.duration_s + drain_allowance_s(workload)
    return first + (episodes - workload.repeat) * episode_cost_s(workload)


def correlated_power(
    plan: Plan, objectives: Sequence[Objective], confidences: Sequence[float]
) -> list[ObjectivePower]:
    """Objectives scoped to a burst phase that the plan's episodes cannot decide.

    A burst is one correlated unit (its queue builds through it): one episode holds the
    evidence of about one sample, so its objectives are decided over episodes. Refused:
    a burst objective with one episode and no ``until_decided``, or with fewer episodes
    (or budget) than the floor of :func:`episode_floor`.
    """
    workload = plan.workload
    bursts = burst_phases(workload)
    short = []
    for objective, confidence in zip(objectives, confidences, strict=True):
        if objective.phase not in bursts or objective.metric in ("recovery", "capacity"):
            continue
        per_episode = math.ceil(planned_samples(plan, objective) / workload.repeat)
        fix = suggested_budget(workload, objective, per_episode, confidence)
        episodes = workload.repeat
        if workload.until_decided_s is not None:
            schedule = plan_looks(workload, workload.until_decided_s)
            episodes = schedule.episodes
            confidence = schedule.confidences(confidence)[-1]
        floor = episode_floor(objective, per_episode, confidence)
        if floor is not None and episodes >= floor:
            continue
        needed = None if floor is None else floor * per_episode
        suggestion = _episodes_fix(workload, floor, fix)
        short.append(
            ObjectivePower(objective, episodes * per_episode, needed, confidence, suggestion)
        )
    return short


def _episodes_fix(workload: Workload, floor: int | None, fix: tuple[int, float] | None) -> str:
    head = (
        f"a {'burst' if workload.repeat == 1 else 'burst over episodes'} is one correlated"
        " unit (its queue builds through the phase), so it is decided over episodes"
    )
    if floor is None or fix is None:
        return f"{head}, and no number of episodes up to {MAX_EPISODES_SEARCHED} can: relax it"
    cooldown = f", cooldown: {workload.cooldown_s or 10.0:g}s"
    episodes, budget = fix
    return (
        f"{head}: give repeat: {floor}{cooldown} (at least {floor} episodes; correlated"
        f" episodes need more), or until_decided: {{max: {budget:g}s}} (room for {episodes}"
        " episodes, added in rounds until every objective is decided: a burst's requests"
        " share a queue, so it often needs several times the floor)"
    )


def check_power(
    workload: Workload, objectives: Sequence[Objective], confidence: float
) -> list[ObjectivePower]:
    """Each objective's power for the plan the session checks before sending: the count
    floor of :func:`plan_power` (with ``until_decided``: at the most episodes the budget
    holds, at its last look's confidence) and, for an objective over a burst or a
    recovery after one, the episodes it needs (:func:`correlated_power`,
    :func:`.recovery_plan.recovery_power`). ``confidence``: each objective's."""
    plan = build_plan(workload)
    counted, last = plan, confidence
    if workload.until_decided_s is not None:
        schedule = plan_looks(workload, workload.until_decided_s)
        counted = build_plan(extended(workload, schedule.episodes))
        last = schedule.confidences(confidence)[-1]
    powers = plan_power(counted, objectives, [last] * len(objectives))
    bursts = correlated_power(plan, objectives, [confidence] * len(objectives))
    bursts += recovery_power(workload, objectives, [confidence] * len(objectives))
    short = {power.objective: power for power in bursts}
    # Over a burst, more requests in one episode never help: the episodes' fix wins.
    return [short.get(power.objective, power) for power in powers]
