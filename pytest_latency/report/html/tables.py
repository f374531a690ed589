"""The report's HTML tables: they read without JavaScript and every cell is escaped."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from pytest_latency.records import RequestRecord
from pytest_latency.report.evidence import failed_count
from pytest_latency.report.html.model import ReportRun, number, objective_of, trace_link, ttft_rank
from pytest_latency.report.html.svg import esc, seconds

SLOWEST_TABLE_ROWS = 10
FAILURE_KINDS = 10


def table(head: Sequence[str], rows: Iterable[Sequence[str]], cls: str = "") -> str:
    """A table whose cells are already markup (escape text before passing it)."""
    header = "".join(f"<th>{cell}</th>" for cell in head)
    body = "".join("<tr>" + "".join(f"<td>{cell}</td>" for cell in row) + "</tr>" for row in rows)
    klass = f' class="{esc(cls)}"' if cls else ""
    return f"<table{klass}><thead><tr>{header}</tr></thead><tbody>{body}</tbody></table>"


def objective_label(row: Mapping[str, Any]) -> str:
    objective = objective_of(row)
    if objective is not None:
        return objective.label
    return f"{row.get('metric', '?')} (unreadable objective)"


def objective_value(row: Mapping[str, Any], key: str) -> str:
    """A stored objective's estimate or bound as shown: its unit, ``unbounded`` for a
    bound that does not exist, ``inf`` where failed requests put it (JSON writes both
    as null: a latency that FAILed without a lower bound has an infinite one)."""
    value = number(row.get(key))
    unit = row.get("unit")
    if value is None:
        failed_requests = (
            row.get("verdict") == "fail"
            and unit in (None, "seconds")
            and number(row.get("lower_s")) is None
        )
        if failed_requests:
            return "inf"
        return "unbounded" if key in ("lower_s", "upper_s") else "-"
    if unit == "ratio":
        return f"{value:.3g}x"
    if unit == "fraction":
        return f"{value:.2%}"
    if unit == "rps":  # a capacity objective: its bracket in requests per second
        return f"{value:.3g}/s"
    return seconds(value)


def objectives_table(objectives: object) -> str:
    rows = []
    for row in objectives if isinstance(objectives, list) else []:
        if not isinstance(row, Mapping):
            continue
        verdict = str(row.get("verdict", "?"))
        effective = number(row.get("n_effective"))
        confidence = number(row.get("confidence"))
        notes = [str(row.get("reason") or ""), *map(str, row.get("warnings") or [])]
        rows.append(
            [
                f'<span class="verdict v-{esc(verdict)}">{esc(verdict.upper())}</span>',
                esc(objective_label(row)),
                esc(objective_value(row, "estimate_s")),
                f"{esc(objective_value(row, 'lower_s'))} .. {esc(objective_value(row, 'upper_s'))}",
                esc(f"{confidence:.3%}" if confidence is not None else "-"),
                esc(row.get("n", "-")),
                esc(f"{effective:.0f}" if effective is not None else "-"),
                "<br>".join(esc(note) for note in notes if note),
            ]
        )
    if not rows:
        return '<p class="note">No objective was decided in this run.</p>'
    head = ["verdict", "objective", "estimate", "bounds", "confidence", "n", "effective n", "why"]
    return table(head, rows, "objectives")


def link_cell(run: ReportRun, record: RequestRecord) -> str:
    if not record.trace_id:
        return "no trace id"
    url = trace_link(run.trace_url, record.trace_id)
    shown = f"<code>{esc(record.trace_id)}</code>"
    if url is None:
        return shown
    return f'<a href="{esc(url)}" rel="noopener noreferrer" target="_blank">{shown}</a>'


def _request_row(run: ReportRun, record: RequestRecord) -> list[str]:
    status = record.status.value + (f": {record.error}" if record.error else "")
    return [
        esc(record.id),
        esc(record.phase),
        esc(status),
        esc(seconds(record.ttft_s)),
        esc(seconds(record.queue_wait_s)),
        esc(seconds(record.prefill_s)),
        esc(seconds(record.unattributed_s)),
        esc(seconds(record.e2e_s)),
        link_cell(run, record),
    ]


REQUEST_HEAD = [
    "request",
    "phase",
    "status",
    "TTFT",
    "queue wait",
    "prefill",
    "unattributed",
    "e2e",
    "trace",
]


def slowest_table(run: ReportRun) -> str:
    """The requests to open first: the slowest completed by TTFT, with their trace links."""
    completed = [record for record in ttft_rank(run.records) if record.ok]
    if not completed:
        return '<p class="note">No request completed.</p>'
    rows = [_request_row(run, record) for record in completed[:SLOWEST_TABLE_ROWS]]
    return table(REQUEST_HEAD, rows, "requests")


def failures_table(run: ReportRun) -> str:
    """How many requests failed, by status and error, each with its first request."""
    groups: dict[tuple[str, str], list[RequestRecord]] = {}
    for record in run.records:
        if not record.ok and not record.never_sent:
            groups.setdefault((record.status.value, record.error or ""), []).append(record)
    if not groups:
        return ""
    rows = [
        [
            esc(status),
            esc(error or "-"),
            esc(len(members)),
            esc(members[0].id),
            esc(members[0].phase),
            link_cell(run, members[0]),
        ]
        for (status, error), members in sorted(groups.items(), key=lambda item: -len(item[1]))
    ][:FAILURE_KINDS]
    head = ["status", "error", "requests", "first request", "its phase", "its trace"]
    failed = sum(len(members) for members in groups.values())
    return (
        f'<p class="failed-count">{esc(failed_count(failed, run.records))} '
        "(each counts as unbounded in every latency objective):</p>" + table(head, rows, "failures")
    )


def percentile_keys(phases: list[Any]) -> list[str]:
    """The phases' percentile keys (``p50``, ``p99.9``...), rising; p50/p95/p99 if none."""
    keys: set[str] = set()
    for row in phases:
        values = row.get("percentiles_s") if isinstance(row, Mapping) else None
        ttft = values.get("ttft") if isinstance(values, Mapping) else None
        keys.update(key for key in ttft or {} if isinstance(key, str) and key.startswith("p"))

    def rank(key: str) -> float:
        try:
            return float(key[1:])
        except ValueError:
            return float("inf")

    return sorted(keys, key=rank) or ["p50", "p95", "p99"]


def phases_table(phases: object) -> str:
    rows = []
    listed = phases if isinstance(phases, list) else []
    keys = percentile_keys(listed)
    # Never-sent requests (a stop rule kept them back) get a column only when there are some.
    unsent = any(isinstance(row, Mapping) and row.get("unsent") for row in listed)
    for row in listed:
        if not isinstance(row, Mapping):
            continue
        values = row.get("percentiles_s") or {}

        def trio(metric: str, values: Mapping[str, Any] = values) -> str:
            found = values.get(metric) or {}
            return " / ".join(seconds(number(found.get(p))) for p in keys)

        rows.append(
            [
                esc(row.get("name")),
                esc(row.get("offered")),
                esc(row.get("completed")),
                esc(row.get("failed")),
                *([esc(row.get("unsent", 0))] if unsent else []),
                esc(_rate(row.get("target_rate"))),
                esc(_rate(_planned_rate(row))),
                esc(_rate(row.get("offered_rate"))),
                esc(seconds(number(row.get("schedule_lag_p99_s")))),
                esc(trio("ttft")),
                esc(trio("itl")),
                esc(trio("e2e")),
            ]
        )
    head = [
        "phase",
        "offered",
        "ok",
        "failed",
        *(["unsent"] if unsent else []),
        "target/s",
        "planned/s",
        "sent/s",
        "lag p99",
        *(f"{metric} {'/'.join(keys)}" for metric in ("TTFT", "ITL", "e2e")),
    ]
    return table(head, rows, "phases")


def _planned_rate(row: Mapping[str, Any]) -> float | None:
    """The rate the run's plan drew (the terminal's planned/s): its requests over its
    duration. Poisson arrivals scatter it around the target."""
    offered, duration = number(row.get("offered")), number(row.get("duration_s"))
    return None if offered is None or not duration else offered / duration


def _rate(value: object) -> str:
    found = number(value)
    return "-" if found is None else f"{found:.2f}"


def _cohort_cell(value: object) -> object:
    """A turn index as it is; a cache hit as hit / miss; unknown as -."""
    if isinstance(value, bool):
        return "hit" if value else "miss"
    return "-" if value is None else value


def cohorts_table(cohorts: object) -> str:
    found = [
        row for row in (cohorts if isinstance(cohorts, list) else []) if isinstance(row, Mapping)
    ]
    # Turn and cache-hit columns only when some cohort has them (sessions, a prefix cache).
    extra = [key for key in ("turn", "cache_hit") if any(row.get(key) is not None for row in found)]
    rows = [
        [esc(row.get(key)) for key in ("phase", "input_tokens", "output_tokens")]
        + [esc(_cohort_cell(row.get(key))) for key in extra]
        + [esc(row.get(key)) for key in ("offered", "completed", "failed")]
        + [
            esc(seconds(number(row.get(key))))
            for key in ("ttft_p50_s", "ttft_p95_s", "itl_p50_s", "e2e_p95_s")
        ]
        for row in found
    ]
    head = [
        "phase",
        "input tokens",
        "output cap",
        *(("turn",) if "turn" in extra else ()),
        *(("cache hit",) if "cache_hit" in extra else ()),
        "offered",
        "ok",
        "failed",
        "TTFT p50",
        "TTFT p95",
        "ITL p50",
        "e2e p95",
    ]
    return table(head, rows, "cohorts")


def diagnosis_list(findings: object) -> str:
    items = []
    for finding in findings if isinstance(findings, list) else []:
        if not isinstance(finding, Mapping):
            continue
        items.append(
            f"<li><strong>{esc(finding.get('hypothesis', ''))}</strong><br>"
            f'<span class="evidence">Evidence: {esc(finding.get("evidence", ""))}</span><br>'
            f'<span class="check">Next: {esc(finding.get("check", ""))}</span></li>'
        )
    if not items:
        return '<p class="note">No rule found a bottleneck with enough evidence.</p>'
    return f'<ol class="diagnosis">{"".join(items)}</ol>'
