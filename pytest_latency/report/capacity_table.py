"""The capacity search in the latency summary: one row per probe, then the bracket.

Probes are listed in the order run (the search bisects, so rates jump); a probe's
requests are the phases ``warmup-<k>`` and ``probe-<k>`` in the tables above, and its
counts are theirs (:mod:`pytest_latency.analysis.probe_counts`): ``planned`` is the phase
table's ``offered``, ``cancelled`` its cancelled status, ``decided`` what the verdicts
rest on. Under each probe, the server's own durations (joined by trace id) and each
objective's evidence: its estimate, bounds, n and effective n; an objective a stopped
probe left undecided says why it stopped (a runaway queue, a fail at an early look).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from pytest_latency.analysis.capacity_result import CapacityResult, ProbeResult
from pytest_latency.analysis.probe_counts import ProbeCounts, ProbeServerTimes, each_probe
from pytest_latency.records import RequestRecord
from pytest_latency.report.wrapping import wrap
from pytest_latency.spec.capacity import CapacitySpec

_HEADS = ("probe", "rate/s", "planned", "sent", "cancelled", "decided", "outcome", "cost")
_LEFT = (0, 6)  # columns aligned left


def _cells(number: int, probe: ProbeResult, counts: ProbeCounts | None) -> tuple[str, ...]:
    shown = ("-", "-", "-") if counts is None else (counts.planned, counts.sent, counts.cancelled)
    return (
        f"probe-{number}",
        f"{probe.rate:.3g}",
        *(str(value) for value in shown),
        str(probe.offered),
        probe.outcome + (", early" if probe.stopped_early else ""),
        f"{probe.cost_s:.1f}s",
    )


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1e3:.0f}ms"


def server_text(times: ProbeServerTimes) -> str | None:
    """The server's durations for a probe's completed requests (None when none joined)."""
    if not times.joined:
        return None
    return (
        f"server ({times.joined} of {times.completed} completed joined): queue wait p50"
        f" {_ms(times.queue_wait_p50_s)}, prefill p50 {_ms(times.prefill_p50_s)},"
        f" decode p50 {_ms(times.decode_p50_s)}"
    )


def evidence_value(value: object, unit: object) -> str:
    if not isinstance(value, (int, float)) or not math.isfinite(value):
        return "-"
    if unit == "fraction":
        return f"{value:.1%}"
    if unit == "rps":
        return f"{value:.2f}/s"
    return f"{value * 1e3:.0f}ms"


def verdict_text(item: Mapping[str, object], stop_reason: object = None) -> str:
    """The verdict, and for an inconclusive one of a probe that stopped early, why it
    stopped (``inconclusive (stopped early: ...: the queue ran away)``)."""
    verdict = str(item.get("verdict", "-"))
    if verdict == "inconclusive" and isinstance(stop_reason, str) and stop_reason:
        return f"{verdict} ({stop_reason})"
    return verdict


def evidence_text(item: Mapping[str, object], stop_reason: object = None) -> str:
    """One probe verdict with what it rests on, from its JSON form (``probes[].objectives``):
    ``label: verdict; as <hypothesis>: estimate [lower, upper], n, effective n`` (the
    hypothesis when it differs from the label: a percentile decided as a proportion);
    ``stop_reason``: the probe's, said beside an inconclusive verdict."""
    unit = item.get("unit")
    head = f"{item.get('objective')}: {verdict_text(item, stop_reason)}"
    if unit == "rps":  # the queue check: growth of in flight against the runaway line
        grew = evidence_value(item.get("estimate"), unit)
        return (
            f"{head}; in flight grew {grew}, runaway from {evidence_value(item.get('limit'), unit)}"
        )
    bounds = (
        f"[{evidence_value(item.get('lower'), unit)}, {evidence_value(item.get('upper'), unit)}]"
    )
    effective = item.get("n_effective")
    shown = f"{effective:.0f}" if isinstance(effective, (int, float)) else "-"
    estimate = evidence_value(item.get("estimate"), unit)
    tested = item.get("decided_as")
    as_what = f" as {tested}:" if tested and tested != item.get("objective") else ""
    text = f"{head};{as_what} {estimate} {bounds}, n {item.get('n')}, effective n {shown}"
    pooled = item.get("pooled")
    if isinstance(pooled, int) and pooled > 1:
        text += f" ({pooled} probes at this rate pooled)"
    return text


def probe_count_cells(probe: Mapping[str, object]) -> list[str]:
    """A probe's planned, sent, cancelled and decided on, from its JSON form (``-``
    where a file has none): the phase table's counts (analysis/probe_counts.py)."""
    decided = probe.get("decided_on", probe.get("offered", "-"))
    return [str(probe.get(key, "-")) for key in ("planned", "sent", "cancelled")] + [str(decided)]


UNDECIDED = "not decided at a look, no estimate"


def without_evidence(verdicts: Mapping[str, object], evidence: Sequence[object]) -> list[str]:
    """The labels of verdicts no evidence backs: the probe stopped (its queue ran away,
    or the budget ran out) before a look decided them."""
    shown = {item.get("objective") for item in evidence if isinstance(item, Mapping)}
    return [label for label in verdicts if label not in shown]


def _verdicts(probe: ProbeResult, stop_reason: str | None) -> list[str]:
    """Each verdict with its evidence, then any verdict without (said so)."""
    items = [item.to_json() for item in probe.evidence]
    bare = without_evidence(probe.verdicts, items)
    return [evidence_text(item, stop_reason) for item in items] + [
        f"{label}: {probe.verdicts[label]} ({UNDECIDED})" for label in bare
    ]


def _bracket(found: CapacityResult) -> str:
    passed = "none" if found.passed_rps is None else f"{found.passed_rps:.3g}/s"
    failed = "none" if found.failed_rps is None else f"{found.failed_rps:.3g}/s"
    width = f" ({found.band[1] / found.band[0]:.2f}x wide)" if found.band else ""
    band = ""
    if found.inconclusive_rps:
        band = "; undecided between: " + ", ".join(f"{r:.3g}/s" for r in found.inconclusive_rps)
    return f"capacity: passed at {passed}, failed at {failed}{width}{band}; {found.stopped}"


def capacity_lines(
    found: CapacityResult,
    spec: CapacitySpec | None,
    width: int,
    records: Sequence[RequestRecord] = (),
) -> list[str]:
    """The search's settings, a row per probe (with what did not pass), the bracket, the
    assumption and any probe that contradicted it; every line within ``width``.
    ``records``: the search's, for each probe's counts and server durations."""
    lines: list[str] = []
    if spec is not None:
        head = (
            f"capacity search: rates {spec.rates[0]:g}..{spec.rates[1]:g} req/s, probes up to"
            f" {spec.probe_s:g}s after a {spec.warmup_s:g}s warm-up, budget"
            f" {found.budget_s:g}s, spent {found.spent_s:.1f}s"
        )
        lines.extend(wrap(head, width, "  "))
    counted = each_probe(records, [probe.offered for probe in found.probes]) if records else None
    rows = [
        _HEADS,
        *(
            _cells(k, probe, None if counted is None else counted[k - 1][0])
            for k, probe in enumerate(found.probes, start=1)
        ),
    ]
    sizes = [max(len(row[column]) for row in rows) for column in range(len(_HEADS))]
    for index, row in enumerate(rows):
        cells = [
            cell.ljust(size) if column in _LEFT else cell.rjust(size)
            for column, (cell, size) in enumerate(zip(row, sizes, strict=True))
        ]
        lines.append(("    " + "  ".join(cells)).rstrip()[:width])
        if not index:
            continue
        server = None if counted is None else server_text(counted[index - 1][1])
        reason = None if counted is None else counted[index - 1][0].stop_reason
        for text in [*([server] if server else []), *_verdicts(found.probes[index - 1], reason)]:
            lines.extend(wrap(text, width, "      ", "  "))
    lines.extend(wrap(_bracket(found), width, "  "))
    lines.extend(wrap(f"assumption (monotonicity): {found.to_json()['assumption']}", width, "  "))
    for contradiction in found.contradictions:
        lines.extend(wrap(f"CONTRADICTS MONOTONICITY: {contradiction}", width, "  "))
    return lines
