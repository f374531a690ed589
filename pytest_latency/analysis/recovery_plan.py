"""Recovery objectives checked before sending: enough episodes for a bound on the median.

A recovery objective is decided over episodes (:mod:`.recovery`): one burst is one
event, and the verdict is the order-statistic interval for the median episode's
recovery time, which exists only from a number of episodes that depends on the
confidence alone (8 at 99%). A plan with fewer episodes (``repeat:``, or what an
``until_decided`` budget holds at its last look's share) can never decide the
objective, so the plan check refuses it before anything is sent, with the fix: a
``repeat:`` with a cool-down, or an ``until_decided`` budget sized as the rounds are
planned (:mod:`.looks`). Pure: no I/O, nothing sent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pytest_latency.analysis.looks import drain_allowance_s, episode_cost_s, plan_looks
from pytest_latency.analysis.percentiles import bound_ranks
from pytest_latency.analysis.planning import ObjectivePower
from pytest_latency.spec.model import Objective, Workload

MAX_EPISODES_SEARCHED = 400  # as for burst objectives (analysis/bursts.py)
SUGGESTED_COOLDOWN_S = 10.0  # when the workload has none: a queue drains in far less


def median_episodes_floor(confidence: float) -> int | None:
    """Fewest episodes whose median has both order-statistic bounds at ``confidence``
    (the sign test's interval, as :func:`.recovery.median_recovery_bounds` takes it)."""
    for episodes in range(1, MAX_EPISODES_SEARCHED + 1):
        lower, upper = bound_ranks(episodes, 0.5, confidence)
        if lower is not None and upper is not None:
            return episodes
    return None


def recovery_budget(workload: Workload, confidence: float) -> tuple[int, float] | None:
    """The fewest episodes, and an ``until_decided`` budget in seconds (rounded up to
    10 s), whose last look holds enough episodes for the median's bounds at its share."""
    first = workload.duration_s + drain_allowance_s(workload)
    start = max(median_episodes_floor(confidence) or MAX_EPISODES_SEARCHED, workload.repeat)
    for episodes in range(start, MAX_EPISODES_SEARCHED + 1):
        budget = first + (episodes - workload.repeat) * episode_cost_s(workload)
        schedule = plan_looks(workload, budget)
        floor = median_episodes_floor(schedule.confidences(confidence)[-1])
        if floor is not None and floor <= schedule.episodes:
            return schedule.episodes, 10.0 * math.ceil(budget / 10.0)
    return None


def planned_episodes(workload: Workload, confidence: float) -> tuple[int, float]:
    """Episodes the plan runs at most, and the confidence its verdict is decided at: the
    last look's share when the workload extends ``until_decided``."""
    if workload.until_decided_s is None:
        return workload.repeat, confidence
    schedule = plan_looks(workload, workload.until_decided_s)
    return schedule.episodes, schedule.confidences(confidence)[-1]


def recovery_power(
    workload: Workload, objectives: Sequence[Objective], confidences: Sequence[float]
) -> list[ObjectivePower]:
    """The recovery objectives whose plan holds too few episodes, each with the fix;
    ``confidences``: each objective's (before any looks)."""
    short = []
    for objective, confidence in zip(objectives, confidences, strict=True):
        if objective.metric != "recovery":
            continue
        episodes, decided_at = planned_episodes(workload, confidence)
        floor = median_episodes_floor(decided_at)
        if floor is not None and episodes >= floor:
            continue
        repeat = median_episodes_floor(confidence)  # the fix without looks
        fix = _recovery_fix(workload, repeat, recovery_budget(workload, confidence))
        short.append(ObjectivePower(objective, episodes, floor, decided_at, fix))
    return short


def _recovery_fix(workload: Workload, repeat: int | None, budget: tuple[int, float] | None) -> str:
    head = (
        "one burst is one event, so recovery is decided over episodes (a bound on the"
        " median episode)"
    )
    if repeat is None or budget is None:
        return f"{head}, and no number of episodes up to {MAX_EPISODES_SEARCHED} can: relax it"
    cooldown = workload.cooldown_s or SUGGESTED_COOLDOWN_S
    episodes, seconds = budget
    return (
        f"{head}: give repeat: {repeat}, cooldown: {cooldown:g}s, or until_decided:"
        f" {{max: {seconds:g}s}} (room for {episodes} episodes, added in rounds until decided)"
    )
