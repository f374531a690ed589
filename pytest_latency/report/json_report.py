"""The ``--latency-json`` document: schema ``pytest-latency/1`` (docs/metrics.md).

Non-finite numbers (an unbounded confidence limit, a percentile of nothing) are written
as null: JSON has no infinity, and a reader must not mistake a missing bound for a value.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_latency.analysis.attainment import phase_goodput
from pytest_latency.analysis.attribution import Attribution, attribute
from pytest_latency.analysis.cohorts import summarise_cohorts
from pytest_latency.analysis.diagnosis import findings_to_json
from pytest_latency.analysis.slots import slot_wait_summary
from pytest_latency.analysis.summary import PhaseSummary
from pytest_latency.analysis.verdict import ObjectiveResult
from pytest_latency.baseline import merge_for_save, run_keys
from pytest_latency.records import (
    RUN_SCHEMA,
    RequestRecord,
    read_runs,
    record_to_dict,
    write_runs,
)
from pytest_latency.result import LatencyResult
from pytest_latency.spec import Objective


def gate_fields(objective: Objective) -> dict[str, Any]:
    """A release gate's own fields (docs/metrics.md); none for other objectives."""
    if objective.metric == "attainment":
        return {"thresholds_s": dict(objective.thresholds), "min": objective.min_value}
    if objective.metric == "recovery":
        return {"after": objective.after}
    return {}


SCHEMA = RUN_SCHEMA


def _number(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return value


def _attribution(attribution: Attribution) -> dict[str, Any]:
    return {
        "completed": attribution.completed,
        "joined": attribution.joined,
        "sources": list(attribution.sources),
        "ttft_share": {
            "queue": attribution.queue_share,
            "prefill": attribution.prefill_share,
            "unattributed": attribution.unattributed_share,
        },
    }


def _phase(
    summary: PhaseSummary, records: Sequence[RequestRecord], objectives: Sequence[Objective] = ()
) -> dict[str, Any]:
    goodput = phase_goodput(records, objectives, summary.duration_s)
    return {
        "name": summary.name,
        "offered": summary.offered,
        "completed": summary.completed,
        "failed": summary.failed,
        "target_rate": summary.target_rate,
        "offered_rate": summary.offered_rate,
        "schedule_lag_p99_s": _number(summary.schedule_lag_p99_s),
        "duration_s": summary.duration_s,
        "statuses": summary.statuses,
        "percentiles_s": {
            metric: {f"p{p:g}": _number(value) for p, value in values.items()}
            for metric, values in summary.percentiles.items()
        },
        "server_attribution": _attribution(attribute(records)),
        "goodput": [row.to_json() for row in goodput],  # one per attainment objective
        "slot_wait_s": slot_wait_summary(records),  # null without max_concurrency
    }


def objective_dict(result: ObjectiveResult) -> dict[str, Any]:
    """One decided objective as the JSON object of a run's ``objectives`` (and judge's)."""
    return {
        "metric": result.objective.metric,
        "p": result.objective.p,
        "max_s": result.objective.max_s,
        "max_regression": result.objective.max_regression,
        "unit": "ratio"
        if result.objective.relative
        else ("fraction" if result.objective.metric in ("error_rate", "attainment") else "seconds"),
        "input_tokens": result.objective.input_tokens,
        "output_tokens": result.objective.output_tokens,
        "phase": result.objective.phase,
        "verdict": result.verdict.value,
        "estimate_s": _number(result.estimate_s),
        "lower_s": _number(result.lower_s),
        "upper_s": _number(result.upper_s),
        "n": result.n,
        "n_effective": _number(result.n_effective),
        "min_change_s": result.objective.min_change_s if result.objective.relative else None,
        "confidence": result.confidence,
        "reason": result.reason,
        "warnings": list(result.warnings),
        **gate_fields(result.objective),
    }


_objective = objective_dict  # the name this module used before judge shared it


def server_identity(run: LatencyResult) -> dict[str, Any]:
    """What server produced a run: kind, address, model, and details such as version."""
    return {
        "kind": run.server.kind,
        "url": run.server.url,
        "model": run.server.model,
        "api": run.server.api,
        **run.server.details,
    }


def run_dict(run: LatencyResult) -> dict[str, Any]:
    objectives = [result.objective for result in run.objective_results]
    return {
        "test": run.test,
        "server": {
            **server_identity(run),
            "cold_start_s": run.server.cold_start_s,
            "exited_during_run": run.server_exit,
        },
        "started_at_unix": run.started_at_unix,
        "elapsed_s": run.elapsed_s,
        "seed": run.workload.seed,
        "workload": run.workload.to_json(),
        "interrupted": run.interrupted is not None,
        "interrupted_reason": run.interrupted,
        "generator": run.health.to_json() if run.health else None,
        "boundary": "client, from the planned send time (intended_s), monotonic clock",
        "trace_url_template": run.trace_url_template,
        "phases": [
            _phase(summary, run.phase_records(summary.name), objectives)
            for summary in run.summaries()
        ],
        "objectives": [objective_dict(result) for result in run.objective_results],
        "diagnosis": findings_to_json(run.diagnosis()),
        "cohorts": [cohort.to_json() for cohort in summarise_cohorts(run.records)],
        "server_timings": run.server_join.to_json() if run.server_join else None,
        "server_metrics": run.server_metrics.to_json() if run.server_metrics else None,
        "requests": [record_to_dict(record) for record in run.records],
    }


def write_json(path: Path, runs: Sequence[LatencyResult]) -> None:
    """Write every run of the session; the parent folder is created if missing."""
    write_runs(path, [run_dict(run) for run in runs])


def save_baseline(path: Path, runs: Sequence[LatencyResult], history: int = 1) -> list[str]:
    """Merge this session's valid runs into the baseline file at ``path``; say what happened.

    Other tests' runs in the file are kept, so saving after ``-k`` wipes nothing.
    """
    keyed = [
        {**run_dict(run), "baseline_key": key}
        for run, key in zip(runs, run_keys([run.test for run in runs]), strict=True)
    ]
    existing = [run.document for run in read_runs(path)] if path.exists() else []
    merged, messages = merge_for_save(existing, keyed, history)
    write_runs(path, merged)
    return [f"latency baseline {path}: {message}" for message in messages]
