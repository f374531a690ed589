"""A capacity search as one run for the reports: every probe on one timeline.

Each probe starts where the previous one's planned phases ended (its drain is not on the
timeline); its phases are numbered (``warmup-<k>``, ``probe-<k>``), its records' ids
run on, its span join adds to the search's, and its ``/metrics`` scrapes move to its
place on the timeline (:mod:`pytest_latency.telemetry.combine`).
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from pytest_latency.analysis.capacity_result import CapacityResult
from pytest_latency.analysis.result import LatencyResult
from pytest_latency.records import RequestRecord
from pytest_latency.servers.base import ServerInfo
from pytest_latency.spec.capacity import CapacitySpec
from pytest_latency.spec.model import Phase, Workload
from pytest_latency.telemetry.combine import Placed, joined_reports, placed_series
from pytest_latency.telemetry.join import JoinReport
from pytest_latency.telemetry.prometheus import MetricsSeries


@dataclass(slots=True)
class ProbeRun:
    """One probe as run: its workload (warm-up and probe phases) and every record."""

    rate: float
    workload: Workload
    records: list[RequestRecord]
    started_at_unix: float
    drain: str  # how the drain ended
    joined: JoinReport | None = None  # the records joined with the server's spans
    series: MetricsSeries | None = None  # /metrics while the probe drove


def search_timeline(runs: Sequence[ProbeRun]) -> tuple[list[RequestRecord], list[Phase]]:
    """Every probe's records on one timeline, phases numbered per probe (``probe-1``...).

    Each probe starts where the previous one's planned phases ended (drains are not on
    the timeline); ids run on. Returns the records and each probe's phases.
    """
    records: list[RequestRecord] = []
    phases: list[Phase] = []
    for number, (probe, offset) in enumerate(zip(runs, _offsets(runs), strict=True), start=1):
        for phase in probe.workload.phases:
            phases.append(dataclasses.replace(phase, name=f"{phase.name}-{number}"))
        for record in probe.records:
            moved = dataclasses.replace(
                record,
                id=len(records),
                phase=f"{record.phase}-{number}",
                intended_s=record.intended_s + offset,
                sent_s=_shift(record.sent_s, offset),
                first_token_s=_shift(record.first_token_s, offset),
                end_s=_shift(record.end_s, offset),
            )
            records.append(moved)
    return records, phases


def _offsets(runs: Sequence[ProbeRun]) -> list[float]:
    """Where each probe's time zero lies on the search's timeline."""
    offsets, offset = [], 0.0
    for probe in runs:
        offsets.append(offset)
        offset += probe.workload.duration_s
    return offsets


def search_telemetry(runs: Sequence[ProbeRun]) -> tuple[JoinReport | None, MetricsSeries | None]:
    """The probes' span joins as one, and their /metrics scrapes on the search's
    timeline (each probe's during its planned phases; drains are not on it)."""
    placed = [
        Placed(probe.series, offset, probe.workload.duration_s)
        for probe, offset in zip(runs, _offsets(runs), strict=True)
        if probe.series is not None
    ]
    return joined_reports([probe.joined for probe in runs]), placed_series(placed)


def _shift(instant: float | None, offset: float) -> float | None:
    return None if instant is None else instant + offset


def search_workload(template: Workload, runs: Sequence[ProbeRun]) -> Workload:
    """The workload the search offered: every probe's phases in order (the template's
    phases when no probe ran)."""
    _, phases = search_timeline(runs)
    return dataclasses.replace(template, phases=tuple(phases)) if phases else template


class Searched(Protocol):
    """A search that ran (:class:`~pytest_latency.plugin.capacity_run.LiveSearch`)."""

    @property
    def spec(self) -> CapacitySpec: ...
    @property
    def template(self) -> Workload: ...
    @property
    def runs(self) -> list[ProbeRun]: ...


def capacity_result(
    search: Searched, found: CapacityResult, *, test: str, server: ServerInfo, **fields: Any
) -> LatencyResult:
    """The search as one run for the reports: every probe's records on one timeline, the
    bracket in ``capacity``; ``fields`` are further :class:`LatencyResult` fields."""
    from pytest_latency.analysis.health import check_generator

    records, _ = search_timeline(search.runs)
    workload = search_workload(search.template, search.runs)
    started = search.runs[0].started_at_unix if search.runs else time.time()
    joined, series = search_telemetry(search.runs)
    return LatencyResult(
        test=test,
        server=server,
        workload=workload,
        records=records,
        started_at_unix=started,
        elapsed_s=found.spent_s,
        health=check_generator(records, workload) if records else None,
        capacity=found,
        capacity_spec=search.spec,
        server_join=joined,
        server_metrics=series,
        **fields,
    )
