"""The Markdown summary: ``--latency-markdown``, the GitHub step summary, ``report --markdown``.

Rendered from the same :class:`~pytest_latency.report.html.model.ReportRun` objects as
the HTML report, so a session and its saved ``--latency-json`` give the same text. Per
test: the verdict table, the slowest requests with trace links, failures by kind, and
the diagnosis. Every string from a run is escaped (HTML and Markdown), so a test id
like ``<script>|x`` shows as text and cannot break a table. The whole text is at most
:data:`MAX_BYTES` (GitHub's step summary limit), cut between tests with a note.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pytest_latency._units import format_seconds
from pytest_latency.analysis.classes import class_lines
from pytest_latency.records import RequestRecord
from pytest_latency.report.capacity_table import probe_count_cells
from pytest_latency.report.confidence_note import note_for
from pytest_latency.report.environment_text import environment_line
from pytest_latency.report.evidence import failed_count
from pytest_latency.report.html.model import ReportRun, number, trace_link, ttft_rank
from pytest_latency.report.html.tables import objective_label, objective_value, percentile_keys
from pytest_latency.report.throughput_table import markdown_lines as throughput_markdown

if TYPE_CHECKING:
    from pytest_latency.analysis.baseline import Baseline
    from pytest_latency.analysis.result import LatencyResult
    from pytest_latency.records import StoredRun

MAX_BYTES = 1024 * 1024  # GitHub refuses a step summary over 1 MiB
MIN_BYTES = 4096  # less room than this left in the step summary: nothing is appended
SLOWEST_ROWS = 5
FAILURE_KINDS = 5
MAX_CELL_CHARS = 300  # an error text longer than this is cut (the JSON keeps it whole)
STEP_SUMMARY_VARIABLE = "GITHUB_STEP_SUMMARY"

# Inline Markdown that text inside a line could start (every line we write begins with
# our own "| ", "- " or "### "); < > & are written as entities, so no HTML passes.
_MARKDOWN_PUNCTUATION = re.compile(r"([\\`*_\[\]|~#])")
_URL_UNSAFE = {"(": "%28", ")": "%29", " ": "%20", "<": "%3C", ">": "%3E", "|": "%7C"}


def md_text(value: object, limit: int = MAX_CELL_CHARS) -> str:
    """``value`` as literal text in Markdown and in a table cell: one line, no markup."""
    text = " ".join(str(value).split())
    if len(text) > limit:
        text = text[: limit - 1] + "…"
    text = _MARKDOWN_PUNCTUATION.sub(r"\\\1", text)
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def md_link(text: str, url: str | None) -> str:
    """``[text](url)``, or the text alone without a URL (only http(s) URLs get here)."""
    if url is None:
        return text
    safe = "".join(_URL_UNSAFE.get(char, char) for char in url)
    return f"[{text}]({safe})"


def table(head: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A GitHub table; cells are already escaped."""
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines.extend("| " + " | ".join(row) + " |" for row in rows)
    return lines


def objective_rows(run: ReportRun) -> list[Mapping[str, Any]]:
    rows = run.section("objectives")
    return [row for row in rows if isinstance(row, Mapping)] if isinstance(rows, list) else []


def verdict_lines(run: ReportRun) -> list[str]:
    rows = []
    for row in objective_rows(run):
        verdict = str(row.get("verdict", "?"))
        effective = number(row.get("n_effective"))
        shown = md_text(verdict.upper())
        rows.append(
            [
                f"**{shown}**" if verdict == "fail" else shown,
                md_text(objective_label(row)),
                md_text(objective_value(row, "estimate_s")),
                md_text(f"{objective_value(row, 'lower_s')} .. {objective_value(row, 'upper_s')}"),
                md_text(row.get("n", "-")),
                md_text(f"{effective:.0f}" if effective is not None else "-"),
                md_text(row.get("reason") or ""),
            ]
        )
    if not rows:
        return ["No objective was decided in this run."]
    head = ["verdict", "objective", "estimate", "bounds", "n", "effective n", "why"]
    return table(head, rows)


def latency_lines(run: ReportRun) -> list[str]:
    """Each phase's latency percentiles: the ones ``--latency-percentiles`` chose and the
    objectives' own, as the terminal summary shows them (none in the run: no table)."""
    listed = run.section("phases")
    phases = [
        row
        for row in (listed if isinstance(listed, list) else [])
        if isinstance(row, Mapping) and isinstance(row.get("percentiles_s"), Mapping)
    ]
    keys = percentile_keys(phases)
    rows = [
        [md_text(phase.get("name")), md_text(metric)]
        + [md_text(format_seconds(number(values.get(key)))) for key in keys]
        for phase in phases
        for metric, values in phase["percentiles_s"].items()
        if isinstance(values, Mapping)
    ]
    if not rows:
        return []
    note = "**Latency** (each phase's percentiles: the chosen ones and the objectives' own):"
    return [note, "", *table(["phase", "metric", *keys], rows), ""]


def _trace_cell(run: ReportRun, record: RequestRecord) -> str:
    if not record.trace_id:
        return "no trace id"
    return md_link(md_text(record.trace_id), trace_link(run.trace_url, record.trace_id))


def slowest_lines(run: ReportRun) -> list[str]:
    """The slowest completed requests by TTFT, with their trace links."""
    completed = [record for record in ttft_rank(run.records) if record.ok][:SLOWEST_ROWS]
    if not completed:
        return ["No request completed."]
    rows = [
        [
            md_text(record.id),
            md_text(record.phase),
            md_text(format_seconds(record.ttft_s)),
            md_text(format_seconds(record.queue_wait_s)),
            md_text(format_seconds(record.e2e_s)),
            _trace_cell(run, record),
        ]
        for record in completed
    ]
    return table(["request", "phase", "TTFT", "queue wait", "e2e", "trace"], rows)


def failure_lines(run: ReportRun) -> list[str]:
    """Failed requests counted by status and error, each kind with its first request."""
    groups: dict[tuple[str, str], list[RequestRecord]] = {}
    for record in run.records:
        if not record.ok and not record.never_sent:
            groups.setdefault((record.status.value, record.error or ""), []).append(record)
    if not groups:
        return []
    failed = sum(len(members) for members in groups.values())
    ranked = sorted(groups.items(), key=lambda item: -len(item[1]))[:FAILURE_KINDS]
    rows = [
        [
            md_text(status),
            md_text(error or "-"),
            md_text(len(members)),
            _trace_cell(run, members[0]),
        ]
        for (status, error), members in ranked
    ]
    return [
        f"{md_text(failed_count(failed, run.records))} (each counts as unbounded):",
        "",
        *table(["status", "error", "requests", "first one's trace"], rows),
    ]


def diagnosis_lines(run: ReportRun) -> list[str]:
    findings = run.section("diagnosis")
    lines = [
        f"- **{md_text(finding.get('hypothesis', ''))}** Evidence: "
        f"{md_text(finding.get('evidence', ''))} Next: {md_text(finding.get('check', ''))}"
        for finding in (findings if isinstance(findings, list) else [])
        if isinstance(finding, Mapping)
    ]
    return lines or ["No rule found a bottleneck with enough evidence."]


def capacity_lines(run: ReportRun) -> list[str]:
    """A capacity search's probes and bracket (none for other runs)."""
    search = run.section("capacity")
    if not isinstance(search, Mapping):
        return []
    rows = [
        [md_text(f"{probe.get('rate', 0):.3g}/s"), *(md_text(n) for n in probe_count_cells(probe)),
         md_text(probe.get("outcome")), "yes" if probe.get("stopped_early") else "no"]
        for probe in search.get("probes") or [] if isinstance(probe, Mapping)
    ]  # fmt: skip
    passed, failed = number(search.get("passed_rps")), number(search.get("failed_rps"))
    bracket = (
        f"**Capacity**: passed at {'-' if passed is None else f'{passed:.3g}/s'}, failed at"
        f" {'-' if failed is None else f'{failed:.3g}/s'}; {md_text(search.get('stopped'))}"
    )
    heads = ("rate", "planned", "sent", "cancelled", "decided on", "outcome", "stopped early")
    return [bracket, "", *table(heads, rows), ""]


def run_mark(run: ReportRun) -> str:
    """What names the run: INVALID when it decides nothing (whatever its verdicts say),
    else its worst verdict (one failed objective fails the test), else its outcome."""
    if run.invalid_reasons():
        return "INVALID"
    verdicts = {str(row.get("verdict")) for row in objective_rows(run)}
    for verdict in ("fail", "invalid", "inconclusive", "pass"):
        if verdict in verdicts:
            return verdict.upper()
    outcome = run.section("outcome")
    return "ERROR" if outcome in ("error", "interrupted") else "NO OBJECTIVE"


def invalid_lines(run: ReportRun) -> list[str]:
    """Why an invalid run decides nothing, before its verdicts (none when valid)."""
    reasons = run.invalid_reasons()
    if not reasons:
        return []
    return [
        "**Invalid run: nothing was decided.** " + md_text("; ".join(reasons), limit=1000),
        "",
    ]


def classes_lines(run: ReportRun) -> list[str]:
    """One line per service class (docs/service-classes.md); none without classes."""
    rows = run.section("classes")
    if not isinstance(rows, list) or not rows:
        return []
    return ["**Service classes:**", "", *(f"- {md_text(line)}" for line in class_lines(rows)), ""]


def environment_lines(run: ReportRun) -> list[str]:
    """Where the run ran (docs/environment.md); none for files from before it was kept."""
    line = environment_line(run.section("environment"))
    return [] if line is None else [f"Environment: {md_text(line, limit=1000)}", ""]


def run_section(run: ReportRun) -> str:
    parts = [
        f"### {run_mark(run)}: {md_text(run.test, limit=1000)}",
        "",
        *environment_lines(run),
        *invalid_lines(run),
        *verdict_lines(run),
        "",
        *latency_lines(run),
        *classes_lines(run),
        *capacity_lines(run),
        *throughput_markdown(run.section("phases")),
        "**Slowest requests** (by time to first token, from the planned send):",
        "",
        *slowest_lines(run),
        "",
    ]
    failures = failure_lines(run)
    if failures:
        parts.extend([*failures, ""])
    parts.extend(
        ["**Diagnosis** (hypotheses with evidence, not causation):", "", *diagnosis_lines(run)]
    )
    return "\n".join(parts) + "\n\n"


def headline(runs: Sequence[ReportRun]) -> str:
    """How many runs, each counted by its mark (INVALID first), then the objectives."""
    marks: dict[str, int] = {}
    counts: dict[str, int] = {}
    for run in runs:
        mark = run_mark(run)
        marks[mark] = marks.get(mark, 0) + 1
        for row in objective_rows(run):
            verdict = str(row.get("verdict"))
            counts[verdict] = counts.get(verdict, 0) + 1
    order = ("INVALID", "ERROR", "FAIL", "INCONCLUSIVE", "NO OBJECTIVE", "PASS")
    shown = ", ".join(f"{marks[mark]} {mark}" for mark in order if mark in marks)
    tally = ", ".join(f"{count} {verdict}" for verdict, count in sorted(counts.items()))
    confidences = [
        row["confidence"]
        for run in runs
        for row in objective_rows(run)
        if isinstance(row.get("confidence"), float)
    ]
    note = note_for(confidences)
    return (
        f"## Latency objectives\n\n{len(runs)} run(s): {shown}; objectives: {tally or 'none'}\n\n"
        + ("" if note is None else f"{md_text(note, limit=2000)}\n\n")
    )


def fit(head: str, sections: Sequence[str], limit: int) -> str:
    """``head`` and as many whole sections as fit in ``limit`` UTF-8 bytes, with a note
    when some did not (the first one cut at a line if even it is too long)."""

    def size(text: str) -> int:
        return len(text.encode("utf-8"))

    note = (
        "\n> The summary stops here: it may hold at most {limit:,} bytes. {shown} of {total} "
        "runs are shown; `--latency-html` and `--latency-json` have every run.\n"
    )
    reserve = size(note.format(limit=limit, shown=len(sections), total=len(sections))) + 16
    text, shown = head, 0
    for section in sections:
        if size(text) + size(section) > limit - (reserve if shown + 1 < len(sections) else 0):
            break
        text, shown = text + section, shown + 1
    if shown == len(sections):
        return text
    if shown == 0 and sections:
        room = max(limit - reserve - size(text), 0)
        cut = sections[0].encode("utf-8")[:room].decode("utf-8", "ignore")
        text += cut[: cut.rfind("\n") + 1]
    return text + note.format(limit=limit, shown=shown, total=len(sections))


def render_markdown(runs: Sequence[ReportRun], limit: int = MAX_BYTES) -> str:
    if not runs:
        return "## Latency objectives\n\nThis session ran no latency test.\n"
    return fit(headline(runs), [run_section(run) for run in runs], limit)


def write_session_markdown(
    results: Sequence[LatencyResult], path: Path | None, environ: Mapping[str, str] = os.environ
) -> None:
    """The session's summary to ``--latency-markdown PATH`` (replaced) and to
    ``$GITHUB_STEP_SUMMARY`` (appended, when set and the session ran latency tests)."""
    from pytest_latency.report.html import report_runs, write_text_atomically

    runs = report_runs(results)
    if path is not None:
        write_text_atomically(path, render_markdown(runs))
    target = environ.get(STEP_SUMMARY_VARIABLE)
    if target and runs:
        append_step_summary(Path(target), runs)


def write_markdown_from_file(
    path: Path,
    runs: Sequence[StoredRun],
    baseline: Baseline | None = None,
    trace_url: str | None = None,
) -> None:
    from pytest_latency.report.html import stored_report_runs, write_text_atomically

    write_text_atomically(path, render_markdown(stored_report_runs(runs, baseline, trace_url)))


def append_step_summary(path: Path, runs: Sequence[ReportRun]) -> bool:
    """Append the summary to ``path``; what was there before is kept and counts against
    the 1 MiB limit. False (nothing written) when less than :data:`MIN_BYTES` is left."""
    existing = path.stat().st_size if path.exists() else 0
    budget = MAX_BYTES - existing - 1
    if budget < MIN_BYTES:
        return False
    with path.open("a", encoding="utf-8") as summary:
        summary.write(("\n" if existing else "") + render_markdown(runs, limit=budget))
    return True
