"""Cumulative distributions per phase and per cohort, with each objective's limit and bound.

A CDF counts every request of its scope: a failed request is unbounded, so the curve
stops at the completed fraction, exactly as the verdicts count it. An absolute
objective draws its limit (a vertical line) and, at its percentile, the confidence
bounds of the estimate (a bar); a relative objective overlays the baseline's requests
on the candidate's and draws the limit ``(1 + max_regression) x`` the baseline's
quantile, with the ratio's bounds scaled by it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from pytest_latency.analysis.cohorts import cohort_key
from pytest_latency.analysis.objectives import in_scope
from pytest_latency.analysis.percentiles import percentile
from pytest_latency.analysis.samples import LATENCY_METRICS, SERVER_METRICS, metric_samples
from pytest_latency.records import RequestRecord
from pytest_latency.report.html import svg
from pytest_latency.report.html.model import ReportRun, number, objective_of
from pytest_latency.report.html.palette import ALL, BASELINE, cohort_classes, phase_classes

WIDTH, HEIGHT = 470.0, 270.0
LEFT, RIGHT, TOP, BOTTOM = 56.0, 28.0, 20.0, 40.0  # right: half the widest tick label
MAX_VERTICES = 300
METRIC_NAMES = {"ttft": "TTFT", "itl": "ITL (each request's median gap)", "e2e": "end-to-end"}


@dataclass(frozen=True, slots=True)
class Curve:
    label: str
    values: np.ndarray  # every request's value; inf where it failed
    cls: str


@dataclass(frozen=True, slots=True)
class Marker:
    """An objective drawn on a CDF: its limit and, at quantile ``q``, the bounds."""

    label: str
    limit: float | None
    q: float
    lower: float | None
    upper: float | None
    estimate: float | None


def run_phases(run: ReportRun) -> list[str]:
    """The run's phases in plan order (then any only its records name)."""
    phases = list(dict.fromkeys(name for name, _, _ in run.phases))
    return phases + sorted({r.phase for r in run.records} - set(phases))


def phase_charts(run: ReportRun) -> list[tuple[str, str]]:
    """(title, svg) per latency metric: one curve per phase (and all phases together),
    each phase in its colour (report/html/palette.py)."""
    phases = run_phases(run)
    colours = phase_classes(phases)
    charts = []
    named = [row.get("metric") for row in run.section("objectives") or [] if isinstance(row, dict)]
    extra = [m for m in dict.fromkeys(named) if m in LATENCY_METRICS and m not in METRIC_NAMES]
    for metric in [*METRIC_NAMES, *extra]:
        name = METRIC_NAMES.get(metric) or (
            f"{metric} (server-reported)" if metric in SERVER_METRICS else str(metric)
        )
        curves = [
            Curve(
                phase,
                metric_samples([r for r in run.records if r.phase == phase], metric),
                colours[phase],
            )
            for phase in phases
        ]
        if len(phases) > 1:
            curves.append(Curve("all phases", metric_samples(run.records, metric), ALL))
        markers = absolute_markers(run.section("objectives"), metric)
        charts.append((f"{name} by phase", cdf_chart(curves, markers, f"{name} CDF by phase")))
    return charts


def cohort_charts(run: ReportRun) -> list[tuple[str, str]]:
    """(title, svg) for TTFT and e2e: one curve per cohort (phase, input, output length),
    in its phase's colour, the phase's cohorts told apart by their dashes."""
    groups: dict[str, list[RequestRecord]] = {}
    for record in run.records:
        groups.setdefault(cohort_key(record).replace("|", " · "), []).append(record)
    if len(groups) < 2:
        return []
    classes = cohort_classes(
        phase_classes(run_phases(run)), [(key, members[0].phase) for key, members in groups.items()]
    )
    charts = []
    for metric in ("ttft", "e2e"):
        curves = [
            Curve(key, metric_samples(members, metric), cls)
            for (key, members), cls in zip(groups.items(), classes, strict=True)
        ]
        # A phase's limit and bounds do not apply to a cohort's curve: only objectives
        # scoped to token cohorts are drawn here (the phase charts draw the rest).
        markers = absolute_markers(run.section("objectives"), metric, cohorts_only=True)
        title = f"{METRIC_NAMES[metric]} by cohort"
        charts.append((title, cdf_chart(curves, markers, title)))
    return charts


def relative_charts(run: ReportRun) -> list[tuple[str, str, bool]]:
    """(title, svg, has_baseline) per relative objective: baseline and candidate overlaid."""
    charts = []
    for row in run.section("objectives") or []:
        objective = objective_of(row) if isinstance(row, Mapping) else None
        if objective is None or not objective.relative or objective.p is None:
            continue
        # The candidate's requests: its phase's colour when scoped to one, else all phases'.
        cls = phase_classes(run_phases(run)).get(objective.phase or "", ALL)
        candidate = Curve(
            "candidate", metric_samples(in_scope(run.records, objective), objective.metric), cls
        )
        baseline_values = metric_samples(in_scope(run.baseline, objective), objective.metric)
        curves = [candidate]
        markers: list[Marker] = []
        if baseline_values.size:
            curves.insert(0, Curve("baseline", baseline_values, BASELINE))
            markers.append(_relative_marker(row, objective.label, baseline_values, objective))
        title = f"{objective.label}: baseline and candidate"
        charts.append((title, cdf_chart(curves, markers, title), bool(baseline_values.size)))
    return charts


def absolute_markers(objectives: object, metric: str, cohorts_only: bool = False) -> list[Marker]:
    """The markers of the absolute objectives on ``metric``; with ``cohorts_only``, of
    those scoped to an input or output token cohort only."""
    markers = []
    for row in objectives if isinstance(objectives, list) else []:
        objective = objective_of(row) if isinstance(row, Mapping) else None
        if objective is None or objective.metric != metric or objective.relative:
            continue
        if cohorts_only and not (objective.input_tokens or objective.output_tokens):
            continue
        markers.append(
            Marker(
                objective.label,
                objective.max_s,
                (objective.p or 50.0) / 100.0,
                number(row.get("lower_s")),
                number(row.get("upper_s")),
                number(row.get("estimate_s")),
            )
        )
    return markers


def _relative_marker(
    row: Mapping[str, Any], label: str, baseline: np.ndarray, objective: Any
) -> Marker:
    q = objective.p / 100.0
    reference = percentile(baseline, objective.p)
    if not math.isfinite(reference):
        return Marker(label, None, q, None, None, None)

    def scaled(ratio: float | None) -> float | None:
        return None if ratio is None else ratio * reference

    limit = reference * (1.0 + objective.max_regression) + objective.min_change_s
    return Marker(
        label,
        limit,
        q,
        scaled(number(row.get("lower_s"))),
        scaled(number(row.get("upper_s"))),
        scaled(number(row.get("estimate_s"))),
    )


def cdf_chart(curves: Sequence[Curve], markers: Sequence[Marker], label: str) -> str:
    """The SVG and its HTML legend."""
    finite = np.concatenate([c.values[np.isfinite(c.values)] for c in curves] or [np.empty(0)])
    finite = finite[finite > 0]
    if finite.size == 0:
        empty = "no completed request has a positive value of this metric to draw"
        return svg.svg(WIDTH, 60, [svg.text(10, 30, empty, "note")], "chart-empty")
    limits = [v for m in markers for v in (m.limit, m.upper, m.lower) if v and v > 0]
    low = 10 ** math.floor(math.log10(min([float(finite.min()), *limits])))
    high = 10 ** math.ceil(math.log10(max([float(finite.max()), *limits])))
    x = svg.Log(low, max(high, low * 10), LEFT, WIDTH - RIGHT)
    y = svg.Linear(0.0, 1.0, HEIGHT - BOTTOM, TOP)
    body = [svg.y_axis(y, LEFT, WIDTH - RIGHT, "%", "share of requests")]
    body.append(svg.x_axis(x, HEIGHT - BOTTOM, TOP, "s", "seconds (log)"))
    for curve in curves:
        body.append(svg.polyline(_steps(curve.values, x, y), f"cdf {curve.cls}"))
    for index, marker in enumerate(markers):
        body.append(_marker(marker, x, y, index))
    return svg.svg(WIDTH, HEIGHT, body, "chart cdf", label) + legend(curves)


def _steps(values: np.ndarray, x: svg.Log, y: svg.Linear) -> list[tuple[float, float]]:
    """The CDF's vertices, at most about :data:`MAX_VERTICES` (all of the top tail kept)."""
    n = values.size
    ordered = np.sort(values[np.isfinite(values)])
    if ordered.size == 0:
        return []
    picks = np.unique(
        np.concatenate(
            [
                np.linspace(0, ordered.size - 1, min(ordered.size, MAX_VERTICES)).astype(int),
                np.arange(max(0, ordered.size - 40), ordered.size),
            ]
        )
    )
    return [(x(float(ordered[i])), y((i + 1) / n)) for i in picks]


def _marker(marker: Marker, x: svg.Log, y: svg.Linear, index: int) -> str:
    parts = []
    if marker.limit is not None and marker.limit > 0:
        label_y = y.start - 8 - 13 * index  # near the bottom, clear of the tail
        parts.append(svg.line(x(marker.limit), TOP, x(marker.limit), y.start, "limit"))
        parts.append(
            svg.text(x(marker.limit) - 3, label_y, f"limit {marker.label}", "limit-label", "end")
        )
    at = y(marker.q)
    left = x(marker.lower) if marker.lower and marker.lower > 0 else x.start
    right = x(marker.upper) if marker.upper and marker.upper > 0 else x.stop
    parts.append(svg.line(left, at, right, at, "bound"))
    for end, open_end in ((left, marker.lower is None), (right, marker.upper is None)):
        if not open_end:
            parts.append(svg.line(end, at - 5, end, at + 5, "bound-end"))
    lower = svg.seconds(marker.lower) if marker.lower else "-\u221e"
    upper = svg.seconds(marker.upper) if marker.upper else "\u221e"
    shown = "unbounded" if marker.lower is None and marker.upper is None else f"{lower}..{upper}"
    parts.append(svg.text(left + 4, at + 14, f"p{marker.q * 100:g} bounds {shown}", "bound-label"))
    if marker.estimate is not None and marker.estimate > 0:
        parts.append(
            svg.dots([(x(marker.estimate), at, -1)], "estimate").replace(' data-k="-1"', "")
        )
    return "".join(parts)


def legend(curves: Sequence[Curve]) -> str:
    """The curves' names as HTML beside the chart (it wraps, however many cohorts)."""
    items = "".join(
        f'<li><span class="sw {curve.cls}"></span>{svg.esc(curve.label)}</li>' for curve in curves
    )
    return f'<ul class="legend">{items}</ul>'
