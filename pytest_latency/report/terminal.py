"""The latency summary: per run its tables, telemetry, diagnosis and every verdict.

Every line fits the terminal width (``COLUMNS`` or the terminal's; see
:mod:`.wrapping` for the one exception, tokens longer than a line). This is the one
place where verdicts (estimate, bounds, n, reason) and the diagnosis print; a failed
test's message names its failed objectives and their slowest requests, and warnings
say only what the policy did and where (:mod:`pytest_latency.plugin.gate`).
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_latency.analysis.attainment import goodput_lines
from pytest_latency.analysis.attribution import attribute, describe_attribution
from pytest_latency.analysis.classes import class_lines, class_summaries
from pytest_latency.analysis.diagnosis import CAVEAT, Finding, format_findings
from pytest_latency.analysis.result import LatencyResult
from pytest_latency.analysis.retries import retry_line
from pytest_latency.analysis.samples import sent_records
from pytest_latency.analysis.slots import slot_wait_line
from pytest_latency.analysis.summary import CLOSED_LOOP_NOTE, PhaseSummary
from pytest_latency.driver.worker_clocks import describe_workers
from pytest_latency.report.capacity_table import capacity_lines
from pytest_latency.report.confidence_note import confidence_note
from pytest_latency.report.evidence import verdict_text
from pytest_latency.report.tables import RATE_LEGEND, phase_tables
from pytest_latency.report.wrapping import wrap

BOUNDARY = (
    "boundary: client-side, from each request's planned send time; failed requests count"
    " as unbounded; ITL is each request's median gap"
)
_VERDICT_COLUMN = 13  # "INCONCLUSIVE " and the objective after it line up


def format_summary(runs: Sequence[LatencyResult], width: int) -> list[str]:
    """The whole latency summary: what every table means (once), then each run."""
    lines = [*wrap(BOUNDARY, width), *wrap(RATE_LEGEND, width)]
    diagnosed = False
    for run in runs:
        findings = run.diagnosis()
        lines.extend(format_run(run, width, findings))
        diagnosed = diagnosed or bool(findings)
    if diagnosed:
        lines.extend(wrap("diagnosis: " + CAVEAT, width))
    if (note := confidence_note(runs)) is not None:  # once per summary
        lines.extend(wrap(note, width, hanging="    "))
    return lines


def format_run(
    run: LatencyResult, width: int = 100, findings: Sequence[Finding] | None = None
) -> list[str]:
    """Lines describing one run: header, per-phase tables, telemetry, diagnosis, verdicts."""
    lines = [
        *wrap(
            f"{run.test}  server={run.server.kind} {run.server.url} model={run.server.model}  "
            f"seed={run.workload.seed}  {run.offered} offered in {run.elapsed_s:.1f}s",
            width,
            hanging="  ",
        )
    ]
    if run.server.cold_start_s is not None:
        lines.append(f"  server cold start (start to healthy): {run.server.cold_start_s:.1f}s")
    if run.server_exit:
        lines.extend(wrap(f"SERVER EXITED DURING THE RUN: {run.server_exit}", width, "  "))
    summaries = run.summaries()
    lines.extend(phase_tables(summaries, width))
    for summary in summaries:
        attribution = describe_attribution(attribute(run.phase_records(summary.name)))
        lines.extend(wrap(f"{summary.name}: {attribution}", width, "  "))
        gates = [result.objective for result in run.objective_results]
        throughput = summary.throughput
        window_s = summary.duration_s if throughput is None else throughput.window_s
        sent = sent_records(run.phase_records(summary.name))  # as json_report counts
        extra = goodput_lines(sent, gates, window_s)
        if throughput is not None:
            extra.insert(0, f"{summary.name}: {throughput.describe()}")
        if any(p.closed_loop for p in run.workload.phases if p.name == summary.name):
            extra.insert(0, f"{summary.name}: {CLOSED_LOOP_NOTE}")
        phase_records = run.phase_records(summary.name)
        for line in [*extra, *slot_wait_line(phase_records), *retry_line(phase_records)]:
            lines.extend(wrap(line.strip(), width, "  "))
        if failed := _failures_line(summary):
            lines.extend(wrap(failed, width, "  "))
    gates = [result.objective for result in run.objective_results]
    for line in class_lines(class_summaries(run.records, run.workload, gates)):
        lines.extend(wrap(line, width, "  "))
    lines.extend(_telemetry_lines(run, width))
    infrastructure = run.infrastructure()
    if infrastructure is not None:
        lines.extend(wrap(f"INVALID RUN: {infrastructure.headline}", width, "  "))
    if run.health is not None and not run.health.valid:
        for reason in run.health.reasons:
            lines.extend(wrap(f"INVALID RUN: {reason}", width, "  "))
    if run.capacity is not None:
        lines.extend(capacity_lines(run.capacity, run.capacity_spec, width, run.records))
    if run.until_decided is not None:
        lines.extend(wrap(run.until_decided.summary(), width, "  ", "    "))
    for finding in format_findings(run.diagnosis() if findings is None else findings):
        lines.extend(wrap(f"diagnosis: {finding}", width, "  "))
    hanging = " " * _VERDICT_COLUMN
    for result in run.objective_results:
        verdict = f"{result.verdict.value.upper():<{_VERDICT_COLUMN - 1}} "
        lines.extend(wrap(verdict + verdict_text(result), width, "  ", hanging))
    return lines


def _telemetry_lines(run: LatencyResult, width: int) -> list[str]:
    texts = []
    join = run.server_join
    if join is not None and join.receiver is not None:
        texts.append(
            f"server spans at {join.receiver}: {join.joined}/{join.requests} requests joined"
            f" (waited {join.waited_s:.1f}s; {join.unknown_traces} traces from outside the run)"
        )
    if join is not None and join.span_problem is not None:
        texts.append(f"WARNING: {join.span_problem}")
    series = run.server_metrics
    if series is not None:
        waiting = [value for value in series.waiting if value is not None]
        running = [value for value in series.running if value is not None]
        if waiting or running:
            texts.append(
                f"server /metrics ({series.kind}, {series.scrapes} scrapes): "
                f"waiting max {max(waiting, default=0):g}, running max {max(running, default=0):g}"
            )
        else:
            texts.append(f"server /metrics: no data ({series.last_error or 'not scraped'})")
    if run.health is not None and (workers := describe_workers(run.health.workers)):
        texts.append(workers)
    return [line for text in texts for line in wrap(text, width, "  ")]


def _failures_line(summary: PhaseSummary) -> str:
    """``steady: failures: timeout=2, cancelled=1``: the sent requests that failed by
    status (cut off mid-stream as ``cancelled``), then those never sent, which are not
    failures; empty when there are neither."""
    failures = {k: v for k, v in summary.statuses.items() if k != "ok"}
    failures["cancelled"] = failures.get("cancelled", 0) - summary.unsent  # the cut off
    counts = ", ".join(f"{name}={count}" for name, count in failures.items() if count)
    unsent = f"{summary.unsent} never sent (not failures)" if summary.unsent else ""
    if not counts:
        return f"{summary.name}: {unsent}" if unsent else ""
    return f"{summary.name}: failures: {counts}" + (f"; {unsent}" if unsent else "")
