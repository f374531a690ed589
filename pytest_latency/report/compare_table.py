"""``pytest-latency compare``'s table: A, B and B/A per percentile, fitted to a width.

One line per phase and metric with as many percentiles across as the width holds; the
other percentiles follow in further blocks of the same shape. Below about 50 columns,
one line per percentile. Phase names are cut to fit, never the numbers.
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence

from pytest_latency._units import format_seconds
from pytest_latency.analysis.side_by_side import Cell, Comparison, TestComparison, ThroughputRow

_NUMBER = 8  # "1234.5ms", "123.45s"
_RATIO = 7  # "12.34x", "inf"
_GROUP = _NUMBER * 2 + _RATIO + 2  # "A B B/A"
_SEPARATOR = " | "


def format_ratio(value: float) -> str:
    if math.isnan(value):
        return "-"
    return "inf" if math.isinf(value) else f"{value:.2f}x"


def _cell(cell: Cell) -> str:
    return (
        f"{format_seconds(cell.a):>{_NUMBER}} {format_seconds(cell.b):>{_NUMBER}} "
        f"{format_ratio(cell.ratio):>{_RATIO}}"
    )


def _cut(text: str, width: int) -> str:
    return text if len(text) <= width else text[: max(width - 1, 0)] + "…"


class _Columns:
    """The label columns' widths: metric names whole, phase names cut to what is left."""

    def __init__(self, test: TestComparison, width: int, after: int) -> None:
        self.metric = max([6, *(len(row.metric) for row in test.rows)])
        room = width - 2 - 1 - self.metric - after
        self.phase = max(5, min(max([5, *(len(row.phase) for row in test.rows)]), room))
        self.fits = 2 + self.phase + 1 + self.metric + after <= width

    def label(self, phase: str, metric: str) -> str:
        return f"  {_cut(phase, self.phase):<{self.phase}} {metric:<{self.metric}}"


def block_lines(test: TestComparison, width: int) -> list[str] | None:
    """Percentiles across, in as few blocks as ``width`` allows; None below one per line."""
    count = len(test.rows[0].cells)
    per_block = count
    while per_block > 0:
        columns = _Columns(test, width, per_block * (_GROUP + len(_SEPARATOR)))
        if columns.fits:
            break
        per_block -= 1
    if per_block == 0:
        return None
    lines: list[str] = []
    for start in range(0, count, per_block):
        chosen = range(start, min(start + per_block, count))
        head = columns.label("phase", "metric")
        for index in chosen:
            head += f"{_SEPARATOR}{f'p{test.rows[0].cells[index].p:g}: A, B, B/A':>{_GROUP}}"
        lines.append(head)
        for row in test.rows:
            cells = "".join(f"{_SEPARATOR}{_cell(row.cells[index])}" for index in chosen)
            lines.append(columns.label(row.phase, row.metric) + cells)
    return lines


def long_lines(test: TestComparison, width: int) -> list[str]:
    """One line per percentile, for very narrow terminals."""
    columns = _Columns(test, width, 1 + 6 + 1 + _GROUP)
    head = columns.label("phase", "metric")
    lines = [head + f" {'p':>6} {'A':>{_NUMBER}} {'B':>{_NUMBER}} {'B/A':>{_RATIO}}"]
    for row in test.rows:
        for cell in row.cells:
            label = "p" + format(cell.p, "g")
            lines.append(columns.label(row.phase, row.metric) + f" {label:>6} {_cell(cell)}")
    return lines


_THROUGHPUT_LABELS = ("req/s", "output tok/s", "total tok/s", "output tok/s per user")


def _amount(value: float) -> str:
    return "-" if math.isnan(value) else f"{value:.4g}"


def throughput_lines(rows: Sequence[ThroughputRow], width: int) -> list[str]:
    """Each phase's throughput in A and B with B/A (B/A > 1: B does more per second)."""
    lines = []
    for row in rows:
        for label, a, b in zip(_THROUGHPUT_LABELS, row.a, row.b, strict=True):
            cell = Cell(0.0, a, b)
            text = f"throughput {row.phase} {label}: A {_amount(a)}, B {_amount(b)}"
            lines.append(_cut(f"{text}, B/A {format_ratio(cell.ratio)}", max(width, 20)))
    return lines


def _header(test: TestComparison) -> str:
    notes = [f"A {test.offered[0]} requests", f"B {test.offered[1]} requests"]
    notes += [
        f"{side} INVALID: generator behind or cut short"
        for side, bad in zip("AB", test.invalid, strict=True)
        if bad
    ]
    return f"{test.key}  ({'; '.join(notes)})"


def _wrapped(texts: Sequence[str], width: int) -> list[str]:
    return [line for text in texts for line in textwrap.wrap(text, max(width, 20))]


def format_comparison(comparison: Comparison, width: int) -> str:
    lines: list[str] = []
    for test in comparison.tests:
        lines.extend(_wrapped([_header(test)], width))
        lines.extend(_wrapped([f"  warning: {text}" for text in test.environment_warnings], width))
        if test.rows:
            lines.extend(block_lines(test, width) or long_lines(test, width))
            lines.extend(throughput_lines(test.throughput, width))
        else:
            lines.append("  no requests on either side")
        lines.append("")
    notes = [
        f"only in {side}: {', '.join(keys)}"
        for side, keys in (("A", comparison.only_a), ("B", comparison.only_b))
        if keys
    ]
    notes.append(
        f"compared {len(comparison.tests)} test(s); B/A > 1: B is slower (throughput: B does"
        " more per second, over each phase's window). Percentiles of "
        "each run's requests (failed ones unbounded); no confidence bound: "
        "`pytest-latency judge` decides."
    )
    return "\n".join(lines + _wrapped(notes, width))
