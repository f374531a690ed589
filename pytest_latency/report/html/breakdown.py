"""TTFT attribution per phase: queue wait, prefill and the unattributed rest, as shares.

The shares are :func:`pytest_latency.analysis.attribution.attribute`'s: sums over the
requests the server reported on, where each request's parts add up to its own TTFT.
A part the server did not report is named as such, never filled in.
"""

from __future__ import annotations

from pytest_latency.analysis.attribution import Attribution, attribute
from pytest_latency.report.html import svg
from pytest_latency.report.html.model import ReportRun

WIDTH = 960.0
LEFT, RIGHT = 130.0, 250.0
ROW = 28.0
PARTS = (("queue", "seg-queue"), ("prefill", "seg-prefill"), ("unattributed", "seg-unattr"))


def attributions(run: ReportRun) -> list[tuple[str, Attribution]]:
    """(phase, attribution) per phase in run order, then all phases when there are several."""
    names = list(dict.fromkeys(name for name, _, _ in run.phases))
    names += sorted({record.phase for record in run.records} - set(names))
    rows = [(name, attribute([r for r in run.records if r.phase == name])) for name in names]
    if len(rows) > 1:
        rows.append(("all phases", attribute(run.records)))
    return rows


def attribution_chart(run: ReportRun) -> str:
    rows = attributions(run)
    x = svg.Linear(0.0, 1.0, LEFT, WIDTH - RIGHT)
    height = 30 + ROW * len(rows) + 26
    body = [*_legend(), svg.x_axis(x, 30 + ROW * len(rows), 30, "%", "")]
    for index, (name, share) in enumerate(rows):
        y = 30 + ROW * index
        label = name if len(name) <= 18 else name[:17] + "…"
        body.append(svg.text(LEFT - 8, y + 15, label, "row-label", "end"))
        body.append(_bar(share, x, y))
        body.append(svg.text(WIDTH - RIGHT + 8, y + 15, _coverage(share), "row-sub"))
    return svg.svg(WIDTH, height, body, "chart attribution", "TTFT attribution by phase")


def _bar(share: Attribution, x: svg.Linear, y: float) -> str:
    if share.joined == 0:
        return svg.text(
            x.start + 4, y + 15, "no server timings: all of TTFT is unattributed", "note"
        )
    parts, at = [], 0.0
    values = {
        "queue": share.queue_share,
        "prefill": share.prefill_share,
        "unattributed": share.unattributed_share,
    }
    for name, cls in PARTS:
        value = values[name]
        if value is None:
            continue
        width = max(0.0, min(value, 1.0 - at))
        parts.append(svg.rect(x(at), y + 4, x(at + width) - x(at), 16, cls))
        if width >= 0.06:
            parts.append(svg.text(x(at) + 3, y + 16, f"{name} {value:.0%}", "bar-label"))
        at += width
    missing = [name for name, _ in PARTS[:2] if values[name] is None]
    if missing:
        parts.append(
            svg.text(
                x.stop - 2, y + 16, f"{' and '.join(missing)} not reported", "bar-label dark", "end"
            )
        )
    return "".join(parts)


def _coverage(share: Attribution) -> str:
    sources = ", ".join(share.sources) or "no source"
    return f"{share.joined}/{share.completed} completed requests ({sources})"


def _legend() -> list[str]:
    parts, x = [], LEFT
    for name, cls in PARTS:
        parts.append(svg.rect(x, 6, 14, 10, cls))
        parts.append(svg.text(x + 18, 15, name, "legend"))
        x += 40 + 6 * len(name)
    return parts
