"""A capacity search as a curve: each objective's estimate and bounds against the offered
rate, with its limit and the bracket (the highest rate passed, the lowest failed).

One chart per unit: latency objectives in seconds, attainment as a fraction. Read from
the run's JSON ``capacity`` (``probes[].objectives[]``: estimate, lower, upper, limit),
so a report rendered from a file draws what the search decided on.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from pytest_latency.report.html import svg
from pytest_latency.report.html.model import number
from pytest_latency.report.html.palette import series_class

WIDTH, HEIGHT = 640.0, 260.0
LEFT, RIGHT, TOP, BOTTOM = 64.0, 16.0, 14.0, 40.0
_UNITS = {"seconds": ("s", "latency at the percentile"), "fraction": ("%", "good fraction")}

Point = tuple[float, float, float | None, float | None]  # rate, estimate, lower, upper


def _series(probes: Sequence[Mapping[str, object]], unit: str) -> dict[str, list[Point]]:
    """Objective label -> its (rate, estimate, lower, upper) at every probe, by rate."""
    found: dict[str, list[Point]] = {}
    for probe in probes:
        rate = number(probe.get("rate"))
        items = probe.get("objectives")
        if rate is None or not isinstance(items, list):
            continue
        for item in items:
            if not isinstance(item, Mapping) or item.get("unit") != unit:
                continue
            estimate = number(item.get("estimate"))
            if estimate is None:
                continue
            label = str(item.get("objective", "?"))
            lower, upper = number(item.get("lower")), number(item.get("upper"))
            found.setdefault(label, []).append((rate, estimate, lower, upper))
    return {label: sorted(points) for label, points in found.items()}


def _limits(probes: Sequence[Mapping[str, object]], unit: str) -> dict[str, float]:
    limits: dict[str, float] = {}
    for probe in probes:
        for item in probe.get("objectives") or []:  # type: ignore[attr-defined]
            if isinstance(item, Mapping) and item.get("unit") == unit:
                limit = number(item.get("limit"))
                if limit is not None:
                    limits[str(item.get("objective", "?"))] = limit
    return limits


def _chart(
    series: dict[str, list[Point]],
    limits: dict[str, float],
    bracket: tuple[float | None, float | None],
    unit: str,
) -> str:
    tick_unit, label = _UNITS[unit]
    rates = [point[0] for points in series.values() for point in points]
    rates += [rate for rate in bracket if rate is not None]
    values = [v for points in series.values() for p in points for v in p[1:] if v is not None]
    values += list(limits.values())
    top = max(values, default=1.0) * 1.1 or 1.0
    x = svg.Linear(0.0, max(rates, default=1.0) * 1.05, LEFT, WIDTH - RIGHT)
    y = svg.Linear(0.0, 1.0 if unit == "fraction" else top, HEIGHT - BOTTOM, TOP)
    body = [
        svg.x_axis(x, HEIGHT - BOTTOM, TOP, "", "offered rate (requests/s)"),
        svg.y_axis(y, LEFT, WIDTH - RIGHT, tick_unit, label),
    ]
    for rate, cls, word in (
        (bracket[0], "bracket-pass", "passed"),
        (bracket[1], "bracket-fail", "failed"),
    ):
        if rate is not None:
            body.append(svg.line(x(rate), TOP, x(rate), HEIGHT - BOTTOM, cls))
            body.append(svg.text(x(rate) + 3, TOP + 10, f"{word} {rate:.3g}/s", "bound-label"))
    for index, (name, points) in enumerate(series.items()):
        color = series_class(index)
        parts = [svg.polyline([(x(p[0]), y(p[1])) for p in points], "cdf")]
        for rate, estimate, lower, upper in points:
            low = y(lower if lower is not None else 0.0)
            high = y(upper) if upper is not None and math.isfinite(upper) else TOP
            parts.append(svg.line(x(rate), low, x(rate), high, "cap-bound"))
            parts.append(svg.line(x(rate), y(estimate), x(rate), y(estimate), "cap-pt"))
        if name in limits:
            parts.append(svg.line(LEFT, y(limits[name]), WIDTH - RIGHT, y(limits[name]), "limit"))
        body.append(f'<g class="{color}"><title>{svg.esc(name)}</title>{"".join(parts)}</g>')
    return svg.svg(WIDTH, HEIGHT, body, "chart", f"{label} against offered rate")


def _legend(names: Sequence[str]) -> str:
    items = "".join(
        f'<li class="{series_class(index)}"><span class="sw"></span>{svg.esc(name)}</li>'
        for index, name in enumerate(names)
    )
    return f'<ul class="legend">{items}</ul>'


def capacity_charts(search: Mapping[str, object]) -> str:
    """The search's curves (empty when no probe recorded its evidence)."""
    probes = [p for p in search.get("probes") or [] if isinstance(p, Mapping)]  # type: ignore[attr-defined]
    bracket = (number(search.get("passed_rps")), number(search.get("failed_rps")))
    figures = []
    for unit in _UNITS:
        series = _series(probes, unit)
        if series:
            chart = _chart(series, _limits(probes, unit), bracket, unit)
            figures.append(f'<figure class="fig">{_legend(list(series))}{chart}</figure>')
    if not figures:
        return ""
    note = (
        "Each probe's estimate (dot) and its bounds (bar) at the rate it offered, the"
        " objective's limit (dashed) and the bracket: the highest rate passed and the lowest"
        " failed. Client side, from the planned send time; probes at one rate pool their"
        " requests."
    )
    return "".join(figures) + f'<p class="note">{svg.esc(note)}</p>'
