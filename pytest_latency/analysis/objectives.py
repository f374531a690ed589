"""Deciding a set of objectives on one run's records: the one path the plugin and judge share."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

from pytest_latency.analysis.attainment import decide_attainment
from pytest_latency.analysis.capacity_gate import capacity_objective_result
from pytest_latency.analysis.capacity_result import CapacityResult
from pytest_latency.analysis.cohorts import in_range, output_length
from pytest_latency.analysis.recovery import decide_recovery
from pytest_latency.analysis.relative import decide_relative
from pytest_latency.analysis.verdict import ObjectiveResult, Verdict, decide
from pytest_latency.records import RequestRecord
from pytest_latency.spec.model import Objective, Workload

ERROR_CONTROLS: tuple[str, ...] = ("test", "session")


def in_scope(records: Sequence[RequestRecord], objective: Objective) -> list[RequestRecord]:
    """The requests an objective is about: its phase, class and planned token-length cohort,
    sent to the server (one never sent was never offered: no sample, no error)."""
    return [record for record in records if not record.never_sent and _in_cohort(record, objective)]


def _in_cohort(record: RequestRecord, objective: Objective) -> bool:
    return (
        (objective.phase is None or record.phase == objective.phase)
        and (objective.service_class is None or record.service_class == objective.service_class)
        and in_range(record.input_tokens, objective.input_tokens)
        and in_range(output_length(record), objective.output_tokens)
    )


def empty_cohort(
    objective: Objective, offered: int, confidence: float, where: str, unsent: int = 0
) -> ObjectiveResult:
    """INCONCLUSIVE for an objective whose scope holds no request: nothing was measured.

    Not the server's doing: the objective's phase or token ranges select none of the
    planned requests (or the phase planned none), so the reason says so. ``unsent``:
    requests in the scope that were planned but never sent (a stop rule kept them back).
    """
    cohort = objective.scope or "all phases"
    reason = (
        f"no requests in cohort [{cohort}] in {where} ({offered} requests offered in all):"
        " nothing measured, nothing decided; check the objective's phase and token ranges"
        " against the workload's"
    )
    if unsent:
        reason = (
            f"none of the {unsent} requests in cohort [{cohort}] in {where} was sent (kept"
            " back before sending: stopped early or cut short): nothing measured, nothing"
            " decided"
        )
    lower, upper = -math.inf, math.inf
    if objective.metric in ("error_rate", "attainment") or objective.relative:
        lower, upper = 0.0, math.inf if objective.relative else 1.0
    return ObjectiveResult(
        objective, Verdict.INCONCLUSIVE, math.nan, lower, upper, 0, confidence, reason,
        n_effective=0.0,
    )  # fmt: skip


def spent_confidence(confidence: float, decided_before: int, count: int) -> float:
    """Per-objective confidence when the error budget spans the whole session.

    The k-th objective of the session gets ``alpha * 6 / (pi^2 k^2)`` of the budget
    ``alpha = 1 - confidence``; these shares sum to at most alpha however many objectives
    the session decides, so the chance of any false verdict in the session stays under
    alpha. ``count`` objectives decided together take the share of the last of them.
    """
    alpha = 1.0 - confidence
    last = decided_before + max(count, 1)
    return 1.0 - alpha * 6.0 / (math.pi**2 * last**2)


def planned_confidence(objectives: Sequence[Objective], decided_before: int | None = None) -> float:
    """Each of ``objectives``' confidence at the default 99%: shared by them (and the
    runaway check where one waits in the queue, :func:`.runaway.counted_tests`), or
    their share of the session's budget when ``decided_before`` tests took theirs."""
    from pytest_latency.analysis.percentiles import DEFAULT_CONFIDENCE
    from pytest_latency.analysis.runaway import counted_tests
    from pytest_latency.analysis.verdict import objective_confidence

    count = counted_tests(objectives)
    if decided_before is not None:
        return spent_confidence(DEFAULT_CONFIDENCE, decided_before, count)
    return objective_confidence(count, DEFAULT_CONFIDENCE)


def decide_objectives(
    objectives: Sequence[Objective],
    records: Sequence[RequestRecord],
    *,
    confidence: float,
    baseline: Sequence[Sequence[RequestRecord]] | None = None,
    invalid_reason: str | None = None,
    workload: Workload | None = None,
    capacity: CapacityResult | None = None,
) -> list[ObjectiveResult]:
    """Decide each objective at ``confidence`` (already the per-objective confidence).

    ``baseline`` holds the stored runs of the same test for relative objectives;
    ``invalid_reason`` marks every result invalid (the generator fell behind, the run
    was cut short) while keeping its numbers for the report. ``workload`` gives
    recovery objectives the exact end of the burst phase (else it is estimated).
    ``capacity``: the run's capacity search, which capacity objectives are decided on
    (inconclusive without one).
    """
    results = []
    for objective in objectives:
        scoped = in_scope(records, objective)
        runs = None if baseline is None else [in_scope(run, objective) for run in baseline]
        if objective.metric == "capacity":
            results.append(capacity_objective_result(objective, capacity, confidence))
        elif not scoped:
            unsent = sum(r.never_sent and _in_cohort(r, objective) for r in records)
            results.append(empty_cohort(objective, len(records), confidence, "this run", unsent))
        elif objective.relative and runs and not any(runs):
            total = sum(len(run) for run in baseline or ())
            results.append(empty_cohort(objective, total, confidence, "the baseline"))
        elif objective.metric == "attainment":
            results.append(decide_attainment(objective, scoped, confidence))
        elif objective.metric == "recovery":
            results.append(decide_recovery(objective, scoped, confidence, workload))
        elif objective.relative:
            results.append(decide_relative(objective, scoped, runs, confidence))
        else:
            results.append(decide(objective, scoped, confidence))
    if workload is not None:
        from pytest_latency.analysis.overload import overload_verdicts

        def redecide(goal: Objective, part: Sequence[RequestRecord]) -> ObjectiveResult:
            return decide_objectives([goal], part, confidence=confidence)[0]

        results, advised = overload_verdicts(results, records, workload, confidence, redecide)
        results = [
            result if index in advised else _with_advice(result, workload)
            for index, result in enumerate(results)
        ]
    if invalid_reason is not None:
        results = [
            dataclasses.replace(result, verdict=Verdict.INVALID, reason=invalid_reason)
            for result in results
        ]
    return results


def _with_advice(result: ObjectiveResult, workload: Workload) -> ObjectiveResult:
    """An inconclusive result's reason, with what would decide it (analysis/advice.py)."""
    from pytest_latency.analysis.advice import what_would_decide

    advice = what_would_decide(result, workload)
    if not advice:
        return result
    return dataclasses.replace(result, reason=f"{result.reason}; {advice}")
