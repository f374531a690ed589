"""The per-phase tables of the latency summary, in the layout that fits the width.

Wide (one row per phase, load and latencies side by side) when the terminal has room;
otherwise compact: a load table, then one latency row per phase and metric, so that 80
and 100 columns hold any number of phases and metrics.

The load columns say what the offered rate compares against (:data:`RATE_LEGEND`):
``target/s`` is the spec's nominal rate, ``planned/s`` the rate of this run's plan
(Poisson arrivals scatter around the target, and that is not the generator's doing),
``sent/s`` what actually left within the phase, and ``lag p99`` how late sends left
their planned instants: the measure of a generator falling behind.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_latency._units import format_seconds
from pytest_latency.analysis.summary import PhaseSummary

RATE_LEGEND = (
    "rates: target/s is the spec's rate; planned/s the rate this run's plan drew (Poisson "
    "arrivals scatter around the target); sent/s what was sent within the phase; lag p99 "
    "how late sends left their planned times (a generator falling behind shows here)"
)
_LOAD_HEADS = ("offered", "ok", "failed", "target/s", "planned/s", "sent/s", "lag p99")
_GAP = "  "


def _load_heads(summaries: Sequence[PhaseSummary]) -> tuple[str, ...]:
    """The load columns; ``unsent`` after ``failed`` only when a stop rule kept some back."""
    if not any(summary.unsent for summary in summaries):
        return _LOAD_HEADS
    return (*_LOAD_HEADS[:3], "unsent", *_LOAD_HEADS[3:])


def _load_cells(summary: PhaseSummary, unsent: bool) -> tuple[str, ...]:
    return (
        str(summary.offered),
        str(summary.completed),
        str(summary.failed),
        *((str(summary.unsent),) if unsent else ()),
        f"{summary.target_rate:.2f}",
        f"{summary.planned_rate:.2f}",
        f"{summary.offered_rate:.2f}",
        format_seconds(summary.schedule_lag_p99_s),
    )


def _shown(summaries: Sequence[PhaseSummary]) -> list[float]:
    """The percentiles the summaries hold (one set per run), rising."""
    return sorted({p for summary in summaries for p in summary.percentiles.get("ttft", {})})


def _metrics(summaries: Sequence[PhaseSummary]) -> list[str]:
    """TTFT, ITL, e2e, then any objective's own metric (``tpot``), in the order held."""
    return list(dict.fromkeys(metric for summary in summaries for metric in summary.percentiles))


def _latency_cell(summary: PhaseSummary, metric: str, ps: Sequence[float]) -> str:
    values = summary.percentiles.get(metric, {})
    return "/".join(format_seconds(values[p]) if p in values else "-" for p in ps)


def _table(rows: Sequence[Sequence[str]], left: int = 1) -> list[str]:
    """Right-aligned columns (the first ``left`` left-aligned), two spaces apart."""
    widths = [max(len(row[column]) for row in rows) for column in range(len(rows[0]))]
    lines = []
    for row in rows:
        cells = [
            cell.ljust(width) if column < left else cell.rjust(width)
            for column, (cell, width) in enumerate(zip(row, widths, strict=True))
        ]
        lines.append((_GAP + _GAP.join(cells)).rstrip())
    return lines


def wide_table(summaries: Sequence[PhaseSummary]) -> list[str]:
    """One row per phase: load columns, then each metric's percentiles (p50/p95/p99)."""
    ps = _shown(summaries)
    quantiles = "/".join(f"p{p:g}" for p in ps)
    metrics = _metrics(summaries)
    heads = _load_heads(summaries)
    unsent = len(heads) > len(_LOAD_HEADS)
    header = ["phase", *heads, *(f"{metric} {quantiles}" for metric in metrics)]
    rows = [
        [
            summary.name,
            *_load_cells(summary, unsent),
            *(_latency_cell(summary, metric, ps) for metric in metrics),
        ]
        for summary in summaries
    ]
    return _table([header, *rows])


def compact_tables(summaries: Sequence[PhaseSummary]) -> list[str]:
    """A load table, then latencies: one row per phase and metric, a column per percentile."""
    heads = _load_heads(summaries)
    unsent = len(heads) > len(_LOAD_HEADS)
    load = _table([["phase", *heads], *(
        [summary.name, *_load_cells(summary, unsent)] for summary in summaries
    )])  # fmt: skip
    ps = _shown(summaries)
    header = ["phase", "metric", *(f"p{p:g}" for p in ps)]
    rows = []
    for summary in summaries:
        for index, metric in enumerate(_metrics(summaries)):
            values = _latency_cell(summary, metric, ps).split("/")
            rows.append([summary.name if index == 0 else "", metric, *values])
    return [*load, *_table([header, *rows], left=2)]


def phase_tables(summaries: Sequence[PhaseSummary], width: int) -> list[str]:
    """The wide table when every row fits ``width``, else the compact tables."""
    if not summaries:
        return []
    wide = wide_table(summaries)
    if max(len(line) for line in wide) <= width:
        return wide
    return compact_tables(summaries)
