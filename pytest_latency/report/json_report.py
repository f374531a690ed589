"""The ``--latency-json`` document and saved baselines: schema ``pytest-latency/1``.

docs/json.md describes every field; ``docs/schema/pytest-latency-1.json`` is its JSON
Schema.

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
from pytest_latency.analysis.baseline import SaveReport, merge_for_save, run_keys
from pytest_latency.analysis.classes import class_summaries
from pytest_latency.analysis.cohorts import summarise_cohorts
from pytest_latency.analysis.diagnosis import findings_to_json
from pytest_latency.analysis.result import LatencyResult
from pytest_latency.analysis.retries import retry_summary
from pytest_latency.analysis.samples import sent_records
from pytest_latency.analysis.slots import slot_wait_summary
from pytest_latency.analysis.summary import PhaseSummary
from pytest_latency.analysis.verdict import ObjectiveResult, Verdict
from pytest_latency.records import (
    RUN_SCHEMA,
    RequestRecord,
    baseline_row,
    plugin_version,
    read_runs,
    records_to_dicts,
    write_runs,
)
from pytest_latency.servers.environment import describe_environment
from pytest_latency.spec.model import Objective


def gate_fields(objective: Objective) -> dict[str, Any]:
    """A release gate's own fields (docs/metrics.md); none for other objectives."""
    if objective.metric == "attainment":
        return {"thresholds_s": dict(objective.thresholds), "min": objective.min_value}
    if objective.metric == "recovery":
        return {"after": objective.after}
    if objective.metric == "capacity":
        return {"min": objective.min_value}
    return {}


def capacity_dict(run: LatencyResult) -> dict[str, Any]:
    """A capacity run's search (docs/json.md): the bracket, every probe, and the search's
    settings and assumption; each probe's requests are in phase ``probe-<number>``."""
    from pytest_latency.analysis.capacity import DEFAULT_LOOKS
    from pytest_latency.analysis.probe_counts import each_probe

    assert run.capacity is not None
    settings = run.capacity_spec.to_json() if run.capacity_spec is not None else {}
    found = run.capacity.to_json()
    counted = each_probe(run.records, [probe.offered for probe in run.capacity.probes])
    probes = [
        {
            **probe.to_json(),
            "phase": f"probe-{number}",
            **counts.to_json(),
            "server": server.to_json(),
        }
        for number, (probe, (counts, server)) in enumerate(
            zip(run.capacity.probes, counted, strict=True), start=1
        )
    ]
    return {
        **settings,
        **found,
        "probes": probes,
        "confidence": run.confidence,
        "looks": list(DEFAULT_LOOKS),
    }


def _unit(objective: Objective) -> str:
    if objective.relative:
        return "ratio"
    if objective.metric == "capacity":
        return "rps"
    return "fraction" if objective.metric in ("error_rate", "attainment") else "seconds"


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
    throughput = summary.throughput
    # Goodput counts over the same window as throughput, so the two sit side by side.
    window_s = throughput.window_s if throughput is not None else summary.duration_s
    # Of the requests sent: one never sent was never offered (docs/metrics.md).
    goodput = phase_goodput(sent_records(records), objectives, window_s)
    return {
        "name": summary.name,
        "offered": summary.offered,
        "completed": summary.completed,
        "failed": summary.failed,
        "unsent": summary.unsent,
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
        "throughput": None if throughput is None else throughput.to_json(),
        "throughput_window_s": window_s,  # analysis/throughput.py: start to last response
        "slot_wait_s": slot_wait_summary(records),  # null without max_concurrency
        "retries": retry_summary(records),  # null when no request was retried
    }


def objective_dict(result: ObjectiveResult) -> dict[str, Any]:
    """One decided objective as the JSON object of a run's ``objectives`` (and judge's)."""
    return {
        "metric": result.objective.metric,
        "p": result.objective.p,
        "max_s": result.objective.max_s,
        "max_regression": result.objective.max_regression,
        "unit": _unit(result.objective),
        "input_tokens": result.objective.input_tokens,
        "output_tokens": result.objective.output_tokens,
        "phase": result.objective.phase,
        "class": result.objective.service_class,
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
        **({"outage_s": result.objective.outage_s} if result.objective.outage_s else {}),
        **({"limit_text": result.objective.limit_text} if result.objective.limit_text else {}),
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


OUTCOMES = ("passed", "failed", "inconclusive", "error", "interrupted")


def run_outcome(run: LatencyResult, test_outcome: str | None = None) -> str:
    """How the run ended, one of :data:`OUTCOMES` (docs/json.md).

    Decided by the run itself: cut short, invalid (the generator fell behind), or its
    objectives' verdicts (a failed one first, then an inconclusive one, whatever the
    inconclusive policy made of it). A run that decided no objective takes its test's
    outcome (``test_outcome``: passed, failed, error, or inconclusive for a skipped test);
    unknown, it is an error.
    """
    if run.interrupted is not None:
        return "interrupted"
    verdicts = {result.verdict for result in run.objective_results}
    if (run.health is not None and not run.health.valid) or Verdict.INVALID in verdicts:
        return "error"
    if Verdict.FAIL in verdicts:
        return "failed"
    if test_outcome == "error":
        return "error"
    if Verdict.INCONCLUSIVE in verdicts:
        return "inconclusive"
    if verdicts:
        return "passed"
    return test_outcome if test_outcome in ("passed", "failed", "inconclusive") else "error"


def run_dict(
    run: LatencyResult,
    *,
    outcome: str | None = None,
    keep_gaps: bool = True,
    key: str | None = None,
) -> dict[str, Any]:
    """One run as the JSON object of a document's ``runs`` (docs/json.md).

    ``outcome``: the run's outcome (default: :func:`run_outcome` without the test's);
    without ``keep_gaps`` requests keep their gap summaries only (a saved baseline);
    ``key``: the baseline key when the run has none (made outside a session).
    """
    objectives = [result.objective for result in run.objective_results]
    return {
        "test": run.test,
        "baseline_key": run.baseline_key or key or run.test,
        "outcome": outcome or run_outcome(run),
        "inconclusive_policy": run.inconclusive_policy,
        "plugin_version": plugin_version(),
        "server": {
            **server_identity(run),
            "cold_start_s": run.server.cold_start_s,
            "exited_during_run": run.server_exit,
        },
        "environment": describe_environment(run.server),
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
        **(
            {"classes": class_summaries(run.records, run.workload, objectives)}
            if run.workload.classes
            else {}
        ),
        "diagnosis": findings_to_json(run.diagnosis()),
        "cohorts": [cohort.to_json() for cohort in summarise_cohorts(run.records)],
        "server_timings": run.server_join.to_json() if run.server_join else None,
        "server_metrics": run.server_metrics.to_json() if run.server_metrics else None,
        "requests": records_to_dicts(run.records, keep_gaps=keep_gaps),
        **({"capacity": capacity_dict(run)} if run.capacity is not None else {}),
        **(until_decided_dict(run) if run.until_decided is not None else {}),
    }


def until_decided_dict(run: LatencyResult) -> dict[str, Any]:
    """A run extended until decided: its budget and every look (docs/json.md)."""
    assert run.until_decided is not None
    return {
        "until_decided": run.until_decided.to_json(),
        "looks": [look.to_json() for look in run.until_decided.looks],
    }


def write_json(
    path: Path, runs: Sequence[LatencyResult], outcomes: Sequence[str] | None = None
) -> None:
    """Write every run of the session (``outcomes``: each run's, as :func:`run_outcome`)."""
    chosen = outcomes if outcomes is not None else [run_outcome(run) for run in runs]
    write_runs(
        path,
        [
            run_dict(run, outcome=outcome, key=key)
            for run, outcome, key in zip(runs, chosen, _default_keys(runs), strict=True)
        ],
    )


def _default_keys(runs: Sequence[LatencyResult]) -> list[str]:
    """Keys for runs made outside a session (no ``baseline_key``): numbered test ids."""
    return run_keys([run.test for run in runs])


def save_baseline(
    path: Path,
    runs: Sequence[LatencyResult],
    history: int = 1,
    outcomes: Sequence[str] | None = None,
) -> list[str]:
    """Merge this session's valid runs into the baseline file at ``path``; say what happened.

    Other tests' runs in the file are kept, so saving after ``-k`` wipes nothing. Requests
    keep their gap summaries, not every gap. Returns the lines to print. RunFileError
    when ``path`` exists but is not a run file (it is left as it was); OSError when it
    cannot be written.
    """
    if not runs:
        return [f"latency baseline {path}: not written: no latency test ran in this session"]
    chosen = outcomes if outcomes is not None else [run_outcome(run) for run in runs]
    keyed = [
        run_dict(run, outcome=outcome, keep_gaps=False, key=key)
        for run, outcome, key in zip(runs, chosen, _default_keys(runs), strict=True)
    ]
    existing = [run.document for run in read_runs(path)] if path.exists() else []
    merged, report = merge_for_save(existing, keyed, history)
    if report.saved:
        write_runs(path, [_stored_run(run) for run in merged])
    return save_lines(path, report)


# Run fields older files lack: null in the runs carried over from them (unknown).
_RECORDED_SINCE_0_1 = ("outcome", "inconclusive_policy", "plugin_version")


def _stored_run(run: dict[str, Any]) -> dict[str, Any]:
    """A run as a baseline keeps it (compact requests); older runs get null for fields
    their writer did not record."""
    unknown = {name: None for name in _RECORDED_SINCE_0_1 if name not in run}
    return {**run, **unknown, "requests": list(map(baseline_row, run["requests"]))}


def save_lines(path: Path, report: SaveReport) -> list[str]:
    """What saving a baseline did, for the terminal: where, and per key what."""
    if not report.saved:
        head = f"latency baseline {path}: not written: no run of this session could be saved"
    else:
        head = (
            f"latency baseline saved to {path.resolve()}: {len(report.new)} new,"
            f" {len(report.updated)} updated, {report.kept} other key(s) kept as they were"
        )
    lines = [head]
    lines += [f"  new       {key}" for key in report.new]
    lines += [f"  updated   {key} ({count} run(s) of history)" for key, count in report.updated]
    lines += [f"  renamed   {old} -> {new}" for old, new in report.renamed]
    lines += [f"  not saved {key}: {why}" for key, why in report.refused]
    return lines
