"""Waterfall timelines: where single requests spent their time, from their planned send.

Each request has two lanes on one time axis (zero = its planned send):

* **client** — instants the client measured on its own monotonic clock: planned send,
  actual send (the gap is schedule lag), first token, last token;
* **server** — durations the server reported (queue wait, prefill), laid end to end
  from the actual send as a breakdown of the wait for the first token. The server
  reports how long, not when, so their order inside that interval is not a measurement.
  What they do not cover is drawn hatched as *unattributed*: never given to a stage.

A worked example: send at 0, queue 40 -> 240 ms, first token at
500 ms, end at 2,000 ms gives TTFT 500 ms, queue wait 200 ms and 300 ms unattributed
(prefill cannot be told apart from those timestamps).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_latency.records import RequestRecord
from pytest_latency.report.html import svg
from pytest_latency.report.html.model import Cards, ReportRun, waterfall_rows

WIDTH = 960.0
LABEL_WIDTH = 250.0
PLOT_LEFT, RIGHT = LABEL_WIDTH + 10.0, 20.0
TOP = 44.0
ROW = 30.0
GROUP = 22.0


@dataclass(frozen=True, slots=True)
class Segments:
    """One request's lanes, in seconds from its planned send (None: not measured)."""

    sent: float | None
    first: float | None
    end: float | None
    queue: float | None
    prefill: float | None

    @classmethod
    def of(cls, record: RequestRecord) -> Segments:
        def since_planned(instant: float | None) -> float | None:
            return None if instant is None else instant - record.intended_s

        return cls(
            sent=since_planned(record.sent_s),
            first=since_planned(record.first_token_s),
            end=since_planned(record.end_s),
            queue=record.queue_wait_s,
            prefill=record.prefill_s,
        )

    @property
    def unattributed(self) -> float | None:
        """Send to first token not covered by the server's durations (None: no first token)."""
        if self.first is None or self.sent is None:
            return None
        return self.first - self.sent - (self.queue or 0.0) - (self.prefill or 0.0)

    @property
    def last(self) -> float:
        return max(value or 0.0 for value in (self.sent, self.first, self.end))


def waterfall(run: ReportRun, test: int, cards: Cards) -> str:
    """The slowest completed requests, ordinary ones, then failures; empty if no requests."""
    picked = waterfall_rows(run.records)
    groups = [
        (group, title)
        for group, title in (
            (picked.slowest, "slowest completed requests by TTFT"),
            (picked.ordinary, "ordinary requests, from p90 down to p10 of the rest by TTFT"),
            (picked.failed, "failed requests (the first ones sent)"),
        )
        if group
    ]
    if not groups:
        return ""
    rows = [record for group, _ in groups for record in group]
    span = max(max(Segments.of(record).last for record in rows), 1e-3)
    height = TOP + GROUP * len(groups) + ROW * len(rows) + 40
    x = svg.Linear(0.0, span * 1.02, PLOT_LEFT, WIDTH - RIGHT)
    marks, labels = [], []
    y = TOP
    for group, title in groups:
        labels.append(svg.text(8, y + 15, title, "group-label"))
        y += GROUP
        for record in group:
            key = cards.key(test, run, record)
            marks.append(_row(record, x, y, key))
            labels.append(_label(record, y, key))
            y += ROW
    definitions, clip_attribute = svg.clip(PLOT_LEFT, 0, WIDTH - PLOT_LEFT - RIGHT, height)
    body = [
        f"<defs>{definitions}</defs>",
        *_legend(),
        svg.x_axis(x, y + 4, TOP, "s", "time since the request's planned send"),
        f'<g{clip_attribute}><g class="zl">{"".join(marks)}</g></g>',
        *labels,
    ]
    return svg.svg(WIDTH, height, body, "chart zoomable waterfall", "request waterfalls")


def _row(record: RequestRecord, x: svg.Linear, y: float, key: int) -> str:
    """The two lanes of one request, in a group the hover card finds by ``data-k``."""
    s = Segments.of(record)
    sent = s.sent or 0.0
    parts = [svg.rect(x(0), y, x.stop - x(0), ROW - 4, "row-hit")]
    parts.append(svg.rect(x(0), y + 2, x(sent) - x(0), 10, "seg-lag"))
    if s.first is not None:
        parts.append(svg.rect(x(sent), y + 2, x(s.first) - x(sent), 10, "seg-wait"))
        if s.end is not None:
            parts.append(svg.rect(x(s.first), y + 2, x(s.end) - x(s.first), 10, "seg-stream"))
    elif s.end is not None:  # failed before a first token: the wait until it gave up
        parts.append(svg.rect(x(sent), y + 2, x(s.end) - x(sent), 10, "seg-fail"))
    parts.extend(_server_lane(s, x, y + 14))
    for instant, cls in (
        (0.0, "mk-planned"),
        (s.sent, "mk-sent"),
        (s.first, "mk-first"),
        (s.end, "mk-last" if record.ok else "mk-fail"),
    ):
        if instant is not None:
            parts.append(svg.line(x(instant), y, x(instant), y + 24, cls))
    return f'<g class="wf-row" data-k="{key}">{"".join(parts)}</g>'


def _server_lane(s: Segments, x: svg.Linear, y: float) -> list[str]:
    if s.first is None or s.sent is None:
        return []
    parts, at = [], s.sent
    for value, cls in ((s.queue, "seg-queue"), (s.prefill, "seg-prefill")):
        if value is not None and value > 0:
            end = min(at + value, max(s.first, at))
            parts.append(svg.rect(x(at), y, x(end) - x(at), 8, cls))
            at = end
    rest = s.unattributed
    if rest is not None and rest > 0:
        parts.append(svg.rect(x(at), y, x(s.first) - x(at), 8, "seg-unattr"))
    return parts


def _label(record: RequestRecord, y: float, key: int) -> str:
    first = "failed" if not record.ok else f"TTFT {svg.seconds(record.ttft_s)}"
    status = "" if record.ok else f" · {record.status.value}"
    head = f"#{record.id} {record.phase}"
    head = head if len(head) <= 22 else head[:21] + "…"
    return (
        f'<g class="wf-label" data-k="{key}">'
        + svg.text(8, y + 11, head, "row-label")
        + svg.text(8, y + 24, f"{first}{status} · e2e {svg.seconds(record.e2e_s)}", "row-sub")
        + "</g>"
    )


def _legend() -> Sequence[str]:
    entries = [
        ("seg-lag", "schedule lag"),
        ("seg-wait", "client: send to first token"),
        ("seg-stream", "streaming to last token"),
        ("seg-fail", "failed"),
        ("seg-queue", "server: queue wait"),
        ("seg-prefill", "server: prefill"),
        ("seg-unattr", "unattributed (not reported)"),
    ]
    parts, x = [], 8.0
    for cls, label in entries:
        parts.append(svg.rect(x, 6, 14, 10, cls))
        parts.append(svg.text(x + 18, 15, label, "legend"))
        x += 30 + 5.9 * len(label)
    parts.append(
        svg.text(
            8,
            34,
            "marks: planned send (grey), actual send, first token (blue), "
            "last token (green) or failure (red)",
            "legend",
        )
    )
    return parts
