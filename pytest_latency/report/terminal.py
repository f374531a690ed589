"""The terminal summary of a run: one row per phase, the boundary stated above the table."""

from __future__ import annotations

from pytest_latency._units import format_seconds
from pytest_latency.analysis.attainment import goodput_lines
from pytest_latency.analysis.attribution import attribute, describe_attribution
from pytest_latency.analysis.diagnosis import format_findings
from pytest_latency.analysis.slots import slot_wait_line
from pytest_latency.analysis.summary import SUMMARY_METRICS, SUMMARY_PERCENTILES
from pytest_latency.report.evidence import format_estimate
from pytest_latency.result import LatencyResult

_BOUNDARY = (
    "client-side, from each request's planned send time; failed requests count as unbounded;"
    " ITL is each request's median gap"
)


def format_run(run: LatencyResult) -> list[str]:
    """Lines describing one run: header, per-phase table, objective verdicts."""
    lines = [
        f"{run.test}  server={run.server.kind} {run.server.url} model={run.server.model}  "
        f"seed={run.workload.seed}  {run.offered} offered in {run.elapsed_s:.1f}s",
        f"  boundary: {_BOUNDARY}",
    ]
    if run.server.cold_start_s is not None:
        lines.append(f"  server cold start (start to healthy): {run.server.cold_start_s:.1f}s")
    if run.server_exit:
        lines.append(f"  SERVER EXITED DURING THE RUN: {run.server_exit}")
    header = (
        f"  {'phase':<10} {'offered':>7} {'ok':>5} {'failed':>6} {'target/s':>8} {'sent/s':>7} "
        f"{'lag p99':>8}"
    )
    quantiles = "/".join(f"p{p:g}" for p in SUMMARY_PERCENTILES)
    for metric in SUMMARY_METRICS:
        header += f"  {metric + ' ' + quantiles:>26}"
    lines.append(header)
    for summary in run.summaries():
        row = (
            f"  {summary.name:<10} {summary.offered:>7} {summary.completed:>5} "
            f"{summary.failed:>6} {summary.target_rate:>8.2f} {summary.offered_rate:>7.2f} "
            f"{format_seconds(summary.schedule_lag_p99_s):>8}"
        )
        for metric in SUMMARY_METRICS:
            values = "/".join(
                format_seconds(summary.percentiles[metric][p]) for p in SUMMARY_PERCENTILES
            )
            row += f"  {values:>26}"
        lines.append(row)
        lines.append("    " + describe_attribution(attribute(run.phase_records(summary.name))))
        gates = [result.objective for result in run.objective_results]
        lines.extend(goodput_lines(run.phase_records(summary.name), gates, summary.duration_s))
        lines.extend(slot_wait_line(run.phase_records(summary.name)))
        failures = {k: v for k, v in summary.statuses.items() if k != "ok"}
        if failures:
            lines.append(
                "    failures: " + ", ".join(f"{name}={count}" for name, count in failures.items())
            )
    lines.extend(_telemetry_lines(run))
    if run.health is not None and not run.health.valid:
        lines.extend(f"  INVALID RUN: {reason}" for reason in run.health.reasons)
    lines.extend(f"  diagnosis: {line}" for line in format_findings(run.diagnosis()))
    for result in run.objective_results:
        lines.append(
            f"  {result.verdict.value.upper():<12} {result.objective.label}: "
            f"{format_estimate(result)}"
        )
        lines.extend(f"    WARNING: {caveat}" for caveat in result.warnings)
    return lines


def _telemetry_lines(run: LatencyResult) -> list[str]:
    lines = []
    join = run.server_join
    if join is not None and join.receiver is not None:
        lines.append(
            f"  server spans at {join.receiver}: {join.joined}/{join.requests} requests joined"
            f" (waited {join.waited_s:.1f}s; {join.unknown_traces} traces from outside the run)"
        )
    series = run.server_metrics
    if series is not None:
        waiting = [value for value in series.waiting if value is not None]
        running = [value for value in series.running if value is not None]
        if waiting or running:
            lines.append(
                f"  server /metrics ({series.kind}, {series.scrapes} scrapes): "
                f"waiting max {max(waiting, default=0):g}, running max {max(running, default=0):g}"
            )
        else:
            lines.append(f"  server /metrics: no data ({series.last_error or 'not scraped'})")
    return lines
