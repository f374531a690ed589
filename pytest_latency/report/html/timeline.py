"""TTFT and queue wait over the run: a point per request at its planned send time.

Three panels share the time axis and zoom together: per-request TTFT and server queue
wait (log scale), the planned, sent and completed rates, and the server's own queue
depth from ``/metrics``. Phase bands run through all three.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from pytest_latency.report.html import svg
from pytest_latency.report.html.model import (
    Cards,
    ReportRun,
    objective_of,
    rate_bins,
    run_duration,
    thin,
)
from pytest_latency.spec.model import Objective

WIDTH = 960.0
LEFT, RIGHT = 70.0, 20.0
POINTS_TOP, POINTS_HEIGHT = 44.0, 230.0
RATE_TOP, RATE_HEIGHT = 300.0, 100.0
DEPTH_TOP, DEPTH_HEIGHT = 426.0, 100.0
HEIGHT = DEPTH_TOP + DEPTH_HEIGHT + 44.0


def over_time(run: ReportRun, test: int, cards: Cards) -> tuple[str, str]:
    """The chart's SVG and the note saying which requests it draws."""
    duration = run_duration(run)
    x = svg.Linear(0.0, duration, LEFT, WIDTH - RIGHT)
    drawn = thin(run.records)
    definitions, clip_attribute = svg.clip(LEFT, 0, WIDTH - LEFT - RIGHT, HEIGHT)
    bands, phase_labels = _bands(run, x)
    *points, floor = _points(run, test, cards, drawn.records, x)
    layers = [_rates(run, x), _depth(run.section("server_metrics"), x), tuple(points)]
    bottom = DEPTH_TOP + DEPTH_HEIGHT
    body = [
        f"<defs>{definitions}</defs>",
        *_legend(),
        f'<g{clip_attribute}><g class="zl">{bands}</g></g>',
        svg.x_axis(x, bottom, POINTS_TOP, "s", "planned send time, from run start"),
        "".join(axes for _, axes in layers),
        f'<g{clip_attribute}><g class="zl">{"".join(marks for marks, _ in layers)}</g></g>',
        phase_labels,
    ]
    chart = svg.svg(WIDTH, HEIGHT, body, "chart zoomable", "TTFT and queue wait over time")
    note = (
        f"{drawn.note}; shorter queue waits than {svg.duration_label(floor)} sit on the axis floor"
    )
    return chart, note


def _bands(run: ReportRun, x: svg.Linear) -> tuple[str, str]:
    parts = []
    names: dict[str, int] = {}
    for name, start, end in run.phases:
        shade = names.setdefault(name, len(names)) % 2
        width = x(end) - x(start)
        parts.append(
            svg.rect(
                x(start),
                POINTS_TOP,
                width,
                DEPTH_TOP + DEPTH_HEIGHT - POINTS_TOP,
                f"band band{shade}",
            )
        )
    labels = [
        svg.text(
            x(start) + 4,
            POINTS_TOP - 6,
            name,
            "phase-label zx",
            extra=f' data-x="{svg.num(x(start) + 4)}"',
        )
        for name, start, _ in run.phases
    ]
    return "".join(parts), "".join(labels)


def _points(
    run: ReportRun, test: int, cards: Cards, records: Sequence[Any], x: svg.Linear
) -> tuple[str, str, float]:
    """Marks, axes, and the y axis floor (queue waits below it are drawn on it)."""
    # One decade below the fastest first token; shorter queue waits sit on the floor.
    positive = [r.ttft_s for r in records if r.ok and r.ttft_s is not None and r.ttft_s > 0]
    low = 10 ** (math.floor(math.log10(min(positive))) - 1) if positive else 1e-3
    limits = [objective.max_s for objective in _limit_objectives(run)]
    high = 10 ** math.ceil(math.log10(max([*positive, *limits]))) if positive else 1.0
    y = svg.Log(max(low, 1e-6), max(high, low * 100), POINTS_TOP + POINTS_HEIGHT, POINTS_TOP + 10)
    ttft, queue, failed = [], [], []
    for record in records:
        if record.never_sent:  # kept back by a stop rule: never offered, not a failure
            continue
        key = cards.key(test, run, record)
        if not record.ok or record.ttft_s is None:
            failed.append((x(record.intended_s), POINTS_TOP + 4, key))
            continue
        ttft.append((x(record.intended_s), y(record.ttft_s), key))
        if record.queue_wait_s is not None:
            queue.append((x(record.intended_s), y(record.queue_wait_s), key))
    marks = svg.dots(queue, "pt queue") + svg.dots(ttft, "pt ttft") + svg.dots(failed, "pt fail")
    lines, labels = _limits(run, x, y)
    marks += lines
    axes = svg.y_axis(y, LEFT, WIDTH - RIGHT, "s", "seconds (log)") + labels
    if not queue:
        axes += svg.text(
            WIDTH - RIGHT - 4, POINTS_TOP + 14, "the server reported no queue wait", "note", "end"
        )
    return marks, axes, y.lo


def _limit_objectives(run: ReportRun) -> list[Objective]:
    """The run's absolute objectives on TTFT or queue wait: the scatter draws their limits."""
    found = []
    for row in run.section("objectives") or []:
        objective = objective_of(row) if isinstance(row, Mapping) else None
        if objective and objective.metric in ("ttft", "queue_wait") and objective.max_s:
            found.append(objective)
    return found


def _limits(run: ReportRun, x: svg.Linear, y: svg.Log) -> tuple[str, str]:
    """Each absolute TTFT or queue-wait objective's limit over its phase; lines and labels.

    The labels stay outside the zoomed layer (text would stretch); the script moves them.
    """
    parts, labels = [], []
    for objective in _limit_objectives(run):
        assert objective.max_s is not None
        spans = [(s, e) for name, s, e in run.phases if objective.phase in (None, name)]
        for start, end in spans:
            parts.append(
                svg.line(x(start), y(objective.max_s), x(end), y(objective.max_s), "limit")
            )
        if spans:
            at = x(spans[0][0]) + 4
            labels.append(
                svg.text(
                    at,
                    y(objective.max_s) - 4,
                    f"limit {objective.label}",
                    "limit-label zx",
                    extra=f' data-x="{svg.num(at)}"',
                )
            )
    return "".join(parts), "".join(labels)


def _rates(run: ReportRun, x: svg.Linear) -> tuple[str, str]:
    width, starts, sent, done = rate_bins(run)
    planned = _planned_rates(run)
    top = max([*sent, *done, *(rate for _, _, rate in planned), 1.0])
    y = svg.Linear(0.0, top * 1.1, RATE_TOP + RATE_HEIGHT, RATE_TOP)
    marks = []
    for start, end, rate in planned:
        marks.append(svg.line(x(start), y(rate), x(end), y(rate), "rate-planned"))
    middle = [start + width / 2 for start in starts]
    marks.append(svg.polyline(zip(map(x, middle), map(y, sent), strict=True), "rate-sent"))
    marks.append(svg.polyline(zip(map(x, middle), map(y, done), strict=True), "rate-done"))
    axes = svg.y_axis(y, LEFT, WIDTH - RIGHT, "", f"req/s, {width:g}s bins")
    return "".join(marks), axes


def _planned_rates(run: ReportRun) -> list[tuple[float, float, float]]:
    workload = run.section("workload")
    rates: dict[str, float] = {}
    if isinstance(workload, Mapping):
        for phase in workload.get("phases") or []:
            if isinstance(phase, Mapping) and isinstance(phase.get("rate"), int | float):
                rates[str(phase.get("name"))] = float(phase["rate"])
    return [(start, end, rates[name]) for name, start, end in run.phases if name in rates]


def _depth(metrics: object, x: svg.Linear) -> tuple[str, str]:
    """The server's waiting and running gauges, as sampled (a step line per gauge)."""
    bottom = DEPTH_TOP + DEPTH_HEIGHT
    if not isinstance(metrics, Mapping) or not metrics.get("t_s"):
        why = "no /metrics samples in this run"
        if isinstance(metrics, Mapping) and metrics.get("last_error"):
            why += f" (last error: {metrics['last_error']})"
        return "", svg.text(LEFT + 8, DEPTH_TOP + 30, why, "note")
    times = [float(t) for t in metrics["t_s"]]
    series = {name: metrics.get(name) or [] for name in ("waiting", "running")}
    values = [v for name in series for v in series[name] if isinstance(v, int | float)]
    y = svg.Linear(0.0, max([*values, 1.0]) * 1.1, bottom, DEPTH_TOP)
    marks = []
    for name, gauge in series.items():
        steps: list[tuple[float, float]] = []
        for when, value in zip(times, gauge, strict=False):
            if isinstance(value, int | float):
                if steps:
                    steps.append((x(when), steps[-1][1]))
                steps.append((x(when), y(value)))
        marks.append(svg.polyline(steps, f"depth-{name}"))
    axes = svg.y_axis(y, LEFT, WIDTH - RIGHT, "", "server reqs")
    return "".join(marks), axes


def _legend() -> list[str]:
    entries = [
        ("pt ttft", "TTFT"),
        ("pt queue", "server queue wait"),
        ("pt fail", "failed"),
        ("rate-planned", "planned rate"),
        ("rate-sent", "sent/s (offered)"),
        ("rate-done", "completed/s (achieved)"),
        ("depth-waiting", "server queue depth"),
        ("depth-running", "server running"),
    ]
    parts, x = [], LEFT
    for cls, label in entries:
        if cls.startswith("pt"):
            parts.append(svg.dots([(x + 5, 12.0, -1)], cls).replace(' data-k="-1"', ""))
        else:
            parts.append(svg.line(x, 12, x + 12, 12, cls))
        parts.append(svg.text(x + 16, 16, label, "legend"))
        x += 26 + 6.2 * len(label)
    return parts
