"""A capacity search in the HTML report: the bracket, a row per probe, and each probe
verdict's evidence (estimate, bounds, n, effective n), read from the run's JSON."""

from __future__ import annotations

from collections.abc import Mapping

from pytest_latency.report.capacity_table import (
    UNDECIDED,
    evidence_value,
    probe_count_cells,
    verdict_text,
    without_evidence,
)
from pytest_latency.report.html.capacity_chart import capacity_charts
from pytest_latency.report.html.model import number
from pytest_latency.report.html.svg import esc
from pytest_latency.report.html.tables import table

_PROBE_HEAD = (
    "probe", "rate", "planned", "sent", "cancelled", "decided on", "outcome", "stopped early",
    "cost", "server queue wait p50", "prefill p50", "decode p50",
)  # fmt: skip
_EVIDENCE_HEAD = (
    "probe", "objective", "verdict", "decided as", "estimate", "lower", "upper", "n",
    "effective n", "probes pooled",
)  # fmt: skip


def _server_cells(probe: Mapping[str, object]) -> list[str]:
    server = probe.get("server")
    server = server if isinstance(server, Mapping) else {}
    keys = ("queue_wait_p50_s", "prefill_p50_s", "decode_p50_s")
    return [esc(evidence_value(server.get(key), "seconds")) for key in keys]


def _probe_row(index: int, probe: Mapping[str, object]) -> list[str]:
    cost = number(probe.get("cost_s"))
    return [
        esc(probe.get("phase") or f"probe-{index}"),
        esc(f"{number(probe.get('rate')) or 0:.3g}/s"),
        *(esc(count) for count in probe_count_cells(probe)),
        esc(probe.get("outcome", "-")),
        "yes" if probe.get("stopped_early") else "no",
        "-" if cost is None else esc(f"{cost:.1f}s"),
        *_server_cells(probe),
    ]


def _evidence_rows(index: int, probe: Mapping[str, object]) -> list[list[str]]:
    """One row per objective of the probe with its evidence, then any verdict without
    (a probe stopped before a look decided it, or from before evidence was recorded)."""
    name = esc(probe.get("phase") or f"probe-{index}")
    items = probe.get("objectives")
    items = items if isinstance(items, list) else []
    verdicts = probe.get("verdicts")
    verdicts = verdicts if isinstance(verdicts, Mapping) else {}
    bare = [
        [name, esc(label), esc(verdicts[label]), esc(UNDECIDED), *["-"] * 6]
        for label in without_evidence(verdicts, items)
    ]
    return _item_rows(name, items, probe.get("stop_reason")) + bare


def _item_rows(name: str, items: list[object], stop_reason: object) -> list[list[str]]:
    """A row per verdict with its evidence; an inconclusive one of a probe that stopped
    early says why it stopped."""
    rows: list[list[str]] = []
    for item in items:
        if not isinstance(item, Mapping):
            continue
        unit = item.get("unit")
        effective = number(item.get("n_effective"))
        rows.append([
            name,
            esc(item.get("objective", "-")),
            esc(verdict_text(item, stop_reason)),
            esc(item.get("decided_as", "-")),
            esc(evidence_value(item.get("estimate"), unit)),
            esc(evidence_value(item.get("lower"), unit)),
            esc(evidence_value(item.get("upper"), unit)),
            esc(item.get("n", "-")),
            "-" if effective is None else esc(f"{effective:.0f}"),
            esc(item.get("pooled", 1)),
        ])  # fmt: skip
    return rows


def capacity_section(search: object) -> str:
    """A capacity search's bracket, probes and their evidence (empty for other runs)."""
    if not isinstance(search, Mapping):
        return ""
    probes = [p for p in search.get("probes") or [] if isinstance(p, Mapping)]
    passed, failed = number(search.get("passed_rps")), number(search.get("failed_rps"))
    bracket = (
        f"passed at {'-' if passed is None else f'{passed:.3g}/s'}, failed at"
        f" {'-' if failed is None else f'{failed:.3g}/s'}; {search.get('stopped', '')}"
    )
    rows = [_probe_row(k, probe) for k, probe in enumerate(probes, start=1)]
    evidence = [row for k, probe in enumerate(probes, start=1) for row in _evidence_rows(k, probe)]
    return (
        f"<h3>Capacity</h3><p>{esc(bracket)}</p>{capacity_charts(search)}"
        f"{table(_PROBE_HEAD, rows)}"
        f"<h4>What each probe verdict rests on</h4>{table(_EVIDENCE_HEAD, evidence)}"
        f'<p class="note">{esc(search.get("assumption", ""))}</p>'
    )
