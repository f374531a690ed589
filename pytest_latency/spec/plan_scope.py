"""Objectives checked against the plan before anything is sent.

A phase or service class the workload does not have, a cohort of token lengths no
planned request can fall in, or a per-token metric on one-token answers cannot be
decided by any run of the plan: saying so after the load wastes the run. The YAML loader
reports these at each objective's line; the ``latency`` fixture checks the objectives
given to ``latency.run(..., objectives=...)`` and ``latency.plan(...)``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from pytest_latency.errors import SpecError
from pytest_latency.spec import checks as check
from pytest_latency.spec.model import Objective, Workload

#: Metrics measured between tokens of one answer: they need answers of 2+ tokens.
PER_TOKEN_METRICS = ("itl", "itl_max", "tpot")


class ScopeProblem(NamedTuple):
    """Why objective number ``number`` cannot be decided; ``key`` is its YAML key."""

    number: int
    key: str
    problem: str


def _planned_tokens(workload: Workload, name: str) -> tuple[int, int] | None:
    """The token lengths the plan asks for, where the workload alone says (else None)."""
    if workload.prompts is not None or any(p.trace for p in workload.phases):
        return None  # a trace or dataset line carries its own lengths
    if name == "output_tokens":
        return (1, workload.output_tokens)  # a cap: a server may stop before it
    if workload.prefix is not None or workload.sessions is not None:
        return None  # inputs grow with shared prefixes and turns
    return workload.input_tokens


def _problems(workload: Workload, goal: Objective) -> list[tuple[str, str]]:
    """``(key, problem)`` for each reason the plan cannot decide ``goal``."""
    names = [phase.name for phase in workload.phases]
    problems = [
        (key, check.unknown_phase(getattr(goal, key), names))
        for key in ("phase", "after")
        if getattr(goal, key) is not None and getattr(goal, key) not in names
    ]
    for key in ("input_tokens", "output_tokens"):
        cohort, planned = getattr(goal, key), _planned_tokens(workload, key)
        if cohort is None or planned is None:
            continue
        if cohort[1] < planned[0] or cohort[0] > planned[1]:
            problems.append(
                (
                    key,
                    f"{key} [{cohort[0]}, {cohort[1]}] matches no planned request: the"
                    f" workload's {key} are {_shown_range(planned)}",
                )
            )
    classes = [service_class.name for service_class in workload.classes]
    if goal.service_class is not None and goal.service_class not in classes:
        known = f"this workload has: {', '.join(classes)}" if classes else "it has no classes:"
        hint = check.did_you_mean(goal.service_class, classes) if classes else ""
        fix = "" if classes else " add them under workload: classes:"
        problems.append(("class", f"unknown class {goal.service_class!r}; {known}{fix}{hint}"))
    if goal.metric in PER_TOKEN_METRICS and workload.output_tokens < 2:
        problem = (
            f"{goal.metric} is measured between tokens of one answer; the workload asks"
            f" for output_tokens: {workload.output_tokens}: ask for 2 or more"
        )
        problems.append(("metric", problem))
    return problems


def scope_problems(workload: Workload, objectives: Sequence[Objective]) -> list[ScopeProblem]:
    """Every objective's problem with the plan, in order; empty when all can be decided."""
    return [
        ScopeProblem(number, key, problem)
        for number, goal in enumerate(objectives)
        for key, problem in _problems(workload, goal)
    ]


def _shown_range(tokens: tuple[int, int]) -> str:
    return f"[{tokens[0]}, {tokens[1]}]" if tokens[0] != tokens[1] else str(tokens[0])


def check_scopes(workload: Workload, objectives: Sequence[Objective], where: str) -> None:
    """One SpecError naming every objective the plan cannot decide, before any load."""
    __tracebackhide__ = True
    problems = scope_problems(workload, objectives)
    if problems:
        lines = [f"{objectives[p.number].label}: {p.problem}" for p in problems]
        raise SpecError(f"{where}: nothing was sent:\n" + "\n".join(f"  {line}" for line in lines))
