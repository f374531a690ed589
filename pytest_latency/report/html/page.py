"""The report page: one self-contained HTML file, nothing fetched when it is opened.

CSS and the script are inline; the Content-Security-Policy allows no network
(``default-src 'none'``) and only the page's own script, by its hash, so even a
string that escaped escaping could not run. Request data for the hover cards is JSON
in a ``<script type="application/json">`` (never executed) with ``<``, ``>`` and ``&``
written as ``\\u`` escapes, so no stored text can close that element.
"""

from __future__ import annotations

import base64
import datetime
import hashlib
import json
from collections.abc import Mapping, Sequence
from importlib.resources import files

from pytest_latency.analysis.classes import class_lines
from pytest_latency.file_format import finite_or_null
from pytest_latency.report.environment_text import environment_line
from pytest_latency.report.html import palette, svg
from pytest_latency.report.html.breakdown import attribution_chart
from pytest_latency.report.html.capacity import capacity_section
from pytest_latency.report.html.cdf import cohort_charts, phase_charts, relative_charts
from pytest_latency.report.html.model import Cards, ReportRun
from pytest_latency.report.html.svg import esc
from pytest_latency.report.html.tables import (
    cohorts_table,
    diagnosis_list,
    failures_table,
    objective_label,
    objectives_table,
    phases_table,
    slowest_table,
)
from pytest_latency.report.html.timeline import over_time
from pytest_latency.report.html.waterfall import waterfall
from pytest_latency.report.throughput_table import html_table as throughput_html

VERDICT_ORDER = {"fail": 0, "invalid": 1, "inconclusive": 2, "pass": 3}
DEFAULT_BOUNDARY = "client, from the planned send time (intended_s), monotonic clock"
CDF_READING = (
    "Failed requests count as unbounded, so a curve stops at the completed share. A red "
    "dashed line is an objective's limit; the grey bar at its percentile spans the "
    "confidence bounds of the estimate (the dot; an open end is unbounded)."
)
ZOOM_HINT = (
    '<p class="hint js-only">Drag across the chart to zoom in time; double-click or '
    "<em>reset zoom</em> to see it all. Hover a point or row for the request; click to "
    "keep its card open.</p>"
)


def _asset(name: str) -> str:
    return files("pytest_latency.report.html").joinpath(name).read_text(encoding="utf-8")


def json_for_script(value: object) -> str:
    """JSON that cannot end its ``<script>`` element or open a comment inside it; a
    non-finite number is null (strict JSON, whatever a server reported)."""
    try:
        text = json.dumps(value, separators=(",", ":"), allow_nan=False)
    except ValueError:
        text = json.dumps(finite_or_null(value), separators=(",", ":"), allow_nan=False)
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _hash(content: str) -> str:
    digest = hashlib.sha256(content.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def render_page(runs: Sequence[ReportRun], title: str = "pytest-latency report") -> str:
    """The whole HTML document for a session's runs."""
    svg.reset_ids()
    cards = Cards()
    sections = [run_section(index, run, cards) for index, run in enumerate(runs)]
    script, style = _asset("report.js"), palette.css() + _asset("report.css")
    policy = (
        f"default-src 'none'; script-src {_hash(script)}; style-src {_hash(style)}; "
        "img-src data:; base-uri 'none'; form-action 'none'"
    )
    data = {**cards.to_json(), "tests": [run.test for run in runs]}
    return "".join(
        [
            '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
            f'<meta http-equiv="Content-Security-Policy" content="{esc(policy)}">',
            '<meta name="viewport" content="width=device-width, initial-scale=1">',
            f"<title>{esc(title)}</title><style>{style}</style></head><body>",
            _patterns(),
            f"<header><h1>{esc(title)}</h1>{_overview(runs)}</header><main>",
            "".join(sections) or '<p class="note">This session ran no latency test.</p>',
            "</main>",
            f'<script type="application/json" id="latency-data">{json_for_script(data)}</script>',
            f"<script>{script}</script></body></html>",
        ]
    )


def _patterns() -> str:
    """Shared SVG definitions: the hatch that marks unattributed time."""
    return (
        '<svg width="0" height="0" class="defs" aria-hidden="true"><defs>'
        '<pattern id="hatch" width="6" height="6" patternUnits="userSpaceOnUse" '
        'patternTransform="rotate(45)"><rect width="6" height="6" class="hatch-bg"/>'
        '<path d="M0 0V6" class="hatch-line"/></pattern></defs></svg>'
    )


def _verdicts(run: ReportRun) -> dict[str, int]:
    counts: dict[str, int] = {}
    for row in run.section("objectives") or []:
        if isinstance(row, Mapping):
            verdict = str(row.get("verdict", "?"))
            counts[verdict] = counts.get(verdict, 0) + 1
    return counts


def _overview(runs: Sequence[ReportRun]) -> str:
    if not runs:
        return ""
    items = []
    for index, run in enumerate(runs):
        counts = _verdicts(run)
        ordered = sorted(counts.items(), key=lambda item: VERDICT_ORDER.get(item[0], 9))
        badges = (
            " ".join(
                f'<span class="verdict v-{esc(verdict)}">{count} {esc(verdict)}</span>'
                for verdict, count in ordered
            )
            or '<span class="note">no objectives</span>'
        )
        failed = [
            objective_label(row)
            for row in run.section("objectives") or []
            if isinstance(row, Mapping) and row.get("verdict") in ("fail", "invalid")
        ]
        named = f' <span class="failed-names">{esc(", ".join(failed))}</span>' if failed else ""
        reasons = run.invalid_reasons()
        if reasons:  # an invalid run reads as INVALID with its reason, never as its counts
            badges = '<span class="verdict v-invalid">INVALID</span>'
            named = f' <span class="failed-names">{esc("; ".join(reasons))}</span>'
        items.append(f'<li><a href="#run-{index}">{esc(run.test)}</a> {badges}{named}</li>')
    return f'<ul class="overview">{"".join(items)}</ul>'


def figure(title: str, body: str, boundary: str, note: str = "", zoom: bool = False) -> str:
    """A chart with its title and, as its caption, the measurement boundary (none when
    ``boundary`` is empty: a group of charts says it once above them) and ``note``."""
    extra = f" {esc(note.rstrip('.'))}." if note else ""
    said = f"<strong>Boundary:</strong> {esc(boundary.rstrip('.'))}." if boundary else ""
    caption = f"<figcaption>{said}{extra}</figcaption>" if said or extra else ""
    return (
        f'<figure class="fig"><h4>{esc(title)}</h4>{body}{caption}'
        f"{ZOOM_HINT if zoom else ''}</figure>"
    )


def _meta(run: ReportRun) -> str:
    server = run.section("server") or {}
    started = run.section("started_at_unix")
    when = (
        datetime.datetime.fromtimestamp(started, datetime.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        if isinstance(started, int | float)
        else "unknown time"
    )
    elapsed = run.section("elapsed_s")
    took = svg.seconds(float(elapsed)) if isinstance(elapsed, int | float) else "unknown time"
    parts = [
        f"server {server.get('kind', '?')} {server.get('url', '')}",
        f"model {server.get('model', '?')}",
        f"version {server['version']}" if server.get("version") else "",
        f"started {when}",
        f"{len(run.records)} requests in {took}",
        f"seed {run.section('seed')}" if run.section("seed") is not None else "",
    ]
    meta = '<p class="meta">' + " · ".join(esc(part) for part in parts if part) + "</p>"
    environment = environment_line(run.section("environment"))
    if environment is not None:
        meta += f'<p class="meta"><strong>Environment:</strong> {esc(environment)}</p>'
    classes = run.section("classes")
    if isinstance(classes, list) and classes:  # docs/service-classes.md
        items = "".join(f"<li>{esc(line)}</li>" for line in class_lines(classes))
        meta += f'<p class="meta"><strong>Service classes:</strong></p><ul>{items}</ul>'
    return meta


def _invalid(run: ReportRun) -> str:
    reasons = run.invalid_reasons()
    if not reasons:
        return ""
    text = "; ".join(reasons)
    return (
        '<p class="invalid"><strong>INVALID:</strong> this run decides nothing (its verdicts'
        f" are invalid too): {esc(text)}</p>"
    )


def run_section(index: int, run: ReportRun, cards: Cards) -> str:
    boundary = str(run.section("boundary") or DEFAULT_BOUNDARY)
    parts = [
        f'<section class="run" id="run-{index}"><h2>{esc(run.test)}</h2>',
        _meta(run),
        _invalid(run),
        "<h3>Objectives</h3>",
        objectives_table(run.section("objectives")),
        capacity_section(run.section("capacity")),
        "<h3>Diagnosis</h3>",
        diagnosis_list(run.section("diagnosis")),
        '<p class="note">A diagnosis is a hypothesis, not causation: inspect several slow '
        "traces and seek counterexamples before changing one setting.</p>",
        "<h3>Where the time to first token went</h3>",
        figure("TTFT attribution by phase", attribution_chart(run), _attribution_boundary()),
        *_request_parts(index, run, cards, boundary),
        "<h3>Distributions</h3>",
        _distributions(run, boundary),
        "<h3>Phases and cohorts</h3>",
        phases_table(run.section("phases")),
        throughput_html(run.section("phases")),
        cohorts_table(run.section("cohorts")),
        "</section>",
    ]
    return "".join(parts)


def _attribution_boundary() -> str:
    return (
        "server-reported durations summed over the requests the server reported on; each "
        "request's queue wait, prefill and unattributed rest add up to its own client TTFT "
        "(from the planned send), so shares are never differences of percentiles"
    )


def _request_parts(index: int, run: ReportRun, cards: Cards, boundary: str) -> list[str]:
    waterfall_chart = waterfall(run, index, cards)
    chart, note = over_time(run, index, cards)
    metrics = run.section("server_metrics")
    depth = metrics.get("boundary") if isinstance(metrics, Mapping) else None
    return [
        "<h3>Requests to open</h3>",
        _link_hint(run),
        slowest_table(run),
        failures_table(run),
        figure(
            "Waterfalls: the slowest requests and ordinary ones",
            waterfall_chart or '<p class="note">No requests.</p>',
            f"client lane: {boundary}; server lane: durations the server reported, laid end "
            "to end from the send (when inside that interval is not reported); hatched: "
            "time to first token the server did not account for, never given to a stage",
            zoom=True,
        ),
        "<h3>Over time</h3>",
        figure(
            "TTFT and queue wait per request, rates and server queue depth",
            chart,
            f"TTFT: {boundary}; queue wait as the server reported it; rates counted by the "
            f"client; queue depth: {depth or 'not scraped'}",
            note,
            zoom=True,
        ),
    ]


def _link_hint(run: ReportRun) -> str:
    if run.trace_url:
        return ""
    return (
        '<p class="note">Trace ids are not links: run with <code>--latency-trace-url '
        "TEMPLATE</code> (a URL with <code>{trace_id}</code>, e.g. your Jaeger or Tempo), "
        "or pass <code>--trace-url</code> to <code>pytest-latency report</code>.</p>"
    )


def _distributions(run: ReportRun, boundary: str) -> str:
    """The CDFs, their shared boundary and reading said once above them, not under each."""
    shared = (
        f'<p class="note"><strong>Boundary of every distribution below:</strong> '
        f"{esc(boundary.rstrip('.'))}. {esc(CDF_READING)}</p>"
    )
    figures = [
        figure(title, chart, "") for title, chart in [*phase_charts(run), *cohort_charts(run)]
    ]
    for title, chart, has_baseline in relative_charts(run):
        note = "" if has_baseline else "Baseline requests were not given, only the candidate"
        figures.append(figure(title, chart, "", note))
    return f'{shared}<div class="grid">{"".join(figures)}</div>'
