"""SVG drawn in Python: scales, ticks, axes and escaped text for the HTML report's charts.

Every string that reaches the markup goes through :func:`esc` (``html.escape`` with
quotes), so a test id or a server's error text containing ``<script>`` is shown as text.
Numbers are written with one decimal: enough for a screen, and small for 10,000 points.

Charts that can be zoomed put their marks in a ``<g class="zl">`` layer that the inline
script transforms along x only. Points are zero-length round-capped paths with a
non-scaling stroke, so they stay round whatever the zoom; axes stay outside the layer
and the script redraws the x ticks from the ``data-*`` attributes written here.
"""

from __future__ import annotations

import html
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from itertools import count

from pytest_latency._units import format_seconds

_ids = count()


def esc(text: object) -> str:
    """Text safe inside an element or a quoted attribute."""
    return html.escape(str(text), quote=True)


def num(value: float) -> str:
    """A coordinate: one decimal, no trailing ``.0``."""
    text = f"{value:.1f}"
    return text[:-2] if text.endswith(".0") else text


def unique_id(prefix: str) -> str:
    """An element id unique within one page (clip paths, patterns)."""
    return f"{prefix}{next(_ids)}"


def reset_ids() -> None:
    """Number a new page's ids from zero, so one run renders to the same bytes each time."""
    global _ids
    _ids = count()


@dataclass(frozen=True, slots=True)
class Linear:
    """A linear map from data ``lo..hi`` onto pixels ``start..stop`` (stop < start: upward)."""

    lo: float
    hi: float
    start: float
    stop: float

    def __call__(self, value: float) -> float:
        span = self.hi - self.lo or 1.0
        return self.start + (value - self.lo) / span * (self.stop - self.start)

    def ticks(self, wanted: int = 6) -> list[float]:
        return nice_ticks(self.lo, self.hi, wanted)


@dataclass(frozen=True, slots=True)
class Log:
    """A base-10 logarithmic map; values at or below ``lo`` are drawn at ``lo``."""

    lo: float
    hi: float
    start: float
    stop: float

    def __call__(self, value: float) -> float:
        low, high = math.log10(self.lo), math.log10(self.hi)
        clamped = math.log10(max(value, self.lo))
        return self.start + (clamped - low) / ((high - low) or 1.0) * (self.stop - self.start)

    def ticks(self, wanted: int = 6) -> list[float]:
        return log_ticks(self.lo, self.hi)


Scale = Linear | Log


def nice_ticks(lo: float, hi: float, wanted: int = 6) -> list[float]:
    """Round values (1, 2, 5 x 10^k steps) covering ``lo..hi``."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo] if math.isfinite(lo) else []
    raw = (hi - lo) / max(wanted, 1)
    magnitude = 10 ** math.floor(math.log10(raw))
    step = next(m * magnitude for m in (1, 2, 5, 10) if m * magnitude >= raw)
    first = math.ceil(lo / step - 1e-9) * step
    ticks: list[float] = []
    value = first
    while value <= hi + step * 1e-9 and len(ticks) < 50:
        ticks.append(0.0 if abs(value) < step * 1e-9 else value)
        value = first + step * len(ticks)
    return ticks


def log_ticks(lo: float, hi: float) -> list[float]:
    """1, 2, 5 x 10^k within ``lo..hi`` (only powers of ten when the range is wide)."""
    if lo <= 0 or hi <= lo:
        return []
    decades = math.log10(hi / lo)
    multipliers = (1.0,) if decades > 4 else (1.0, 2.0, 5.0)
    ticks = []
    for exponent in range(math.floor(math.log10(lo)), math.ceil(math.log10(hi)) + 1):
        for multiplier in multipliers:
            value = multiplier * 10.0**exponent
            if lo * (1 - 1e-9) <= value <= hi * (1 + 1e-9):
                ticks.append(value)
    return ticks


def duration_label(seconds: float) -> str:
    """An axis label for seconds: ``250ms``, ``1.5s``, ``40s``."""
    if seconds == 0:
        return "0"
    if abs(seconds) < 1.0:
        return f"{seconds * 1e3:g}ms"
    return f"{seconds:g}s"


def text(
    x: float, y: float, content: object, cls: str = "", anchor: str = "start", extra: str = ""
) -> str:
    """An escaped ``<text>`` element."""
    klass = f' class="{esc(cls)}"' if cls else ""
    place = "" if anchor == "start" else f' text-anchor="{anchor}"'
    return f'<text x="{num(x)}" y="{num(y)}"{klass}{place}{extra}>{esc(content)}</text>'


def rect(x: float, y: float, width: float, height: float, cls: str, extra: str = "") -> str:
    return (
        f'<rect x="{num(x)}" y="{num(y)}" width="{num(max(width, 0.0))}" '
        f'height="{num(height)}" class="{esc(cls)}"{extra}/>'
    )


def line(x1: float, y1: float, x2: float, y2: float, cls: str) -> str:
    return f'<path d="M{num(x1)} {num(y1)}L{num(x2)} {num(y2)}" class="{esc(cls)}"/>'


def polyline(points: Iterable[tuple[float, float]], cls: str, extra: str = "") -> str:
    """A path through ``points``; empty string when there are fewer than two."""
    coordinates = [f"{num(x)} {num(y)}" for x, y in points]
    if len(coordinates) < 2:
        return ""
    return f'<path d="M{"L".join(coordinates)}" class="{esc(cls)}"{extra}/>'


def dots(points: Iterable[tuple[float, float, int]], cls: str) -> str:
    """Points as round dots with a ``data-k`` request key for the hover card.

    Each is its own zero-length path: one element per point is what lets hover name
    the request, and the round cap keeps it a dot under the x-only zoom.
    """
    return "".join(
        f'<path d="M{num(x)} {num(y)}h0" class="{esc(cls)}" data-k="{key}"/>'
        for x, y, key in points
    )


def x_axis(scale: Scale, y: float, top: float, unit: str, label: str) -> str:
    """Ticks, grid lines and a label below the plot; redrawn by the script on zoom."""
    parts = [line(scale.start, y, scale.stop, y, "axis")]
    for tick in scale.ticks(7):
        x = scale(tick)
        parts.append(line(x, top, x, y, "gl"))
        parts.append(text(x, y + 14, tick_label(tick, unit), "tick", "middle"))
    kind = "log" if isinstance(scale, Log) else "lin"
    attributes = (
        f' data-lo="{scale.lo!r}" data-hi="{scale.hi!r}" data-unit="{esc(unit)}"'
        f' data-scale="{kind}" data-y="{num(y)}" data-top="{num(top)}"'
    )
    middle = (scale.start + scale.stop) / 2
    return f'<g class="xt"{attributes}>{"".join(parts)}</g>' + text(
        middle, y + 30, label, "axis-label", "middle"
    )


def y_axis(scale: Scale, x: float, right: float, unit: str, label: str) -> str:
    """Ticks, grid lines and a rotated label left of the plot."""
    parts = [line(x, scale.start, x, scale.stop, "axis")]
    for tick in scale.ticks(4):
        y = scale(tick)
        parts.append(line(x, y, right, y, "gl"))
        parts.append(text(x - 4, y + 4, tick_label(tick, unit), "tick", "end"))
    middle = (scale.start + scale.stop) / 2
    parts.append(
        f'<text class="axis-label" text-anchor="middle" '
        f'transform="translate({num(x - 44)} {num(middle)}) rotate(-90)">{esc(label)}</text>'
    )
    return "".join(parts)


def tick_label(value: float, unit: str) -> str:
    if unit == "s":
        return duration_label(value)
    if unit == "%":
        return f"{value * 100:g}%"
    return f"{value:g}"


def clip(x: float, y: float, width: float, height: float) -> tuple[str, str]:
    """A clip path definition and its ``clip-path`` attribute."""
    name = unique_id("clip")
    definition = (
        f'<clipPath id="{name}"><rect x="{num(x)}" y="{num(y)}" '
        f'width="{num(width)}" height="{num(height)}"/></clipPath>'
    )
    return definition, f' clip-path="url(#{name})"'


def svg(width: float, height: float, body: Sequence[str], cls: str = "", label: str = "") -> str:
    """The ``<svg>`` element; ``label`` is its accessible name."""
    klass = f' class="{esc(cls)}"' if cls else ""
    name = f' role="img" aria-label="{esc(label)}"' if label else ""
    return (
        f'<svg viewBox="0 0 {num(width)} {num(height)}" width="{num(width)}" '
        f'height="{num(height)}"{klass}{name}>{"".join(body)}</svg>'
    )


def seconds(value: float | None) -> str:
    """A duration for people: ``31.2ms``, ``2.80s``, ``-`` when missing."""
    return format_seconds(value)
