"""Throughput per phase, as the HTML report and the Markdown summary show it.

Both read the run's JSON ``phases[]`` (``throughput``, ``throughput_window_s`` and
``goodput``), so a report rendered from a file shows what the session printed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pytest_latency.analysis.throughput import WINDOW
from pytest_latency.report.html.svg import esc
from pytest_latency.report.html.tables import table

HEAD: tuple[str, ...] = (
    "phase",
    "req/s",
    "output tok/s",
    "total tok/s",
    "output tok/s per user",
    "window",
    "goodput (good req/s, good output tok/s)",
)
NOTE = (
    "Completed requests and their tokens per second, "
    + WINDOW
    + "; per user: the mean over requests of (output tokens - 1) / (e2e - TTFT)."
    " Goodput counts only requests that met the attainment objective, over the same window."
)


def _number(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value)


def _cell(value: object, digits: int) -> str:
    found = _number(value)
    return "-" if found is None else f"{found:.{digits}f}"


def _goodput(rows: object) -> str:
    texts = [
        f"{_cell(row.get('good_rps'), 2)}, {_cell(row.get('good_output_tokens_per_s'), 1)}"
        f" ({row.get('objective', '?')})"
        for row in (rows if isinstance(rows, list) else [])
        if isinstance(row, Mapping)
    ]
    return "; ".join(texts) or "-"


def throughput_rows(phases: object) -> list[list[str]]:
    """One row of plain text per phase that carries ``throughput`` (older files: none)."""
    rows = []
    for phase in phases if isinstance(phases, list) else []:
        if not isinstance(phase, Mapping) or not isinstance(phase.get("throughput"), Mapping):
            continue
        values: Mapping[str, Any] = phase["throughput"]
        window = _number(phase.get("throughput_window_s"))
        rows.append(
            [
                str(phase.get("name", "?")),
                _cell(values.get("requests_per_s"), 2),
                _cell(values.get("output_tokens_per_s"), 1),
                _cell(values.get("total_tokens_per_s"), 1),
                _cell(values.get("output_tokens_per_s_per_user"), 1),
                "-" if window is None else f"{window:.1f}s",
                _goodput(phase.get("goodput")),
            ]
        )
    return rows


def markdown_lines(phases: object) -> list[str]:
    """The Markdown section, one bullet per phase (none without data)."""
    rows = throughput_rows(phases)
    if not rows:
        return []
    bullets = [
        "- " + "; ".join(f"{head}: {cell}" for head, cell in zip(HEAD, row, strict=True))
        for row in rows
    ]
    escaped = [line.replace("|", "\\|").replace("<", "&lt;") for line in bullets]
    return ["**Throughput** (" + NOTE + ")", "", *escaped, ""]


def html_table(phases: object) -> str:
    """The HTML section: a note on the window, then the table (empty without data)."""
    rows = throughput_rows(phases)
    if not rows:
        return ""
    body = [[esc(cell) for cell in row] for row in rows]
    return table([esc(cell) for cell in HEAD], body, "throughput") + (
        f'<p class="note">{esc(NOTE)}</p>'
    )
