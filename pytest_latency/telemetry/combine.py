"""Telemetry of several drives as one run's: a capacity search's probes on its timeline.

Each probe is a drive of its own, joined with the server's spans and scraped while it
runs; the search is reported as one run whose timeline puts each probe where the
previous one's planned phases ended. The join counts add up, and each probe's scrapes
move to its place on that timeline (scrapes outside its planned phases, during a
drain or before time zero, are left out: they would land on another probe).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_latency.telemetry.join import JoinReport
from pytest_latency.telemetry.prometheus import MetricsSeries


@dataclass(frozen=True, slots=True)
class Placed:
    """One drive's scrapes and where its time zero lies on the combined timeline."""

    series: MetricsSeries
    offset_s: float  # the drive's time zero on the combined timeline
    duration_s: float  # its planned length: later scrapes are off its place


def joined_reports(reports: Sequence[JoinReport | None]) -> JoinReport | None:
    """The drives' joins as one: counts, sources, waits and unknown traces added; the
    first problem with spans, naming its drive (``probe <k>``); None when none joined."""
    present = [(number, r) for number, r in enumerate(reports, start=1) if r is not None]
    if not present:
        return None
    sources: dict[str, int] = {}
    for _, report in present:
        for name, count in report.sources.items():
            sources[name] = sources.get(name, 0) + count
    problems = [f"probe {k}: {r.span_problem}" for k, r in present if r.span_problem]
    return JoinReport(
        requests=sum(r.requests for _, r in present),
        joined=sum(r.joined for _, r in present),
        sources=sources,
        unknown_traces=sum(r.unknown_traces for _, r in present),
        waited_s=sum(r.waited_s for _, r in present),
        receiver=next((r.receiver for _, r in present if r.receiver), None),
        span_problem=problems[0] if problems else None,
    )


def placed_series(parts: Sequence[Placed]) -> MetricsSeries | None:
    """The drives' scrapes as one series on the combined timeline: each scrape within
    its drive's planned phases, moved by the drive's offset (``scrapes`` counts those
    kept); failures added up, the last error kept. None without parts."""
    if not parts:
        return None
    known = [p.series.kind for p in parts if p.series.kind != "unknown"]
    extra_keys = list(dict.fromkeys(key for p in parts for key in p.series.extra))
    t_s: list[float] = []
    waiting: list[float | None] = []
    running: list[float | None] = []
    extra: dict[str, list[float | None]] = {key: [] for key in extra_keys}
    for part in parts:
        series = part.series
        for index, at in enumerate(series.t_s):
            if not 0.0 <= at <= part.duration_s:
                continue
            t_s.append(at + part.offset_s)
            waiting.append(series.waiting[index])
            running.append(series.running[index])
            for key in extra_keys:
                values = series.extra.get(key)
                extra[key].append(None if values is None else values[index])
    errors = [p.series.last_error for p in parts if p.series.last_error]
    return MetricsSeries(
        kind=known[0] if known else "unknown",
        t_s=t_s,
        waiting=waiting,
        running=running,
        extra=extra,
        scrapes=len(t_s),  # one sample each, as in any series
        failures=sum(p.series.failures for p in parts),
        last_error=errors[-1] if errors else None,
        interval_s=parts[0].series.interval_s,
    )
