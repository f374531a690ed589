"""Diagnosis: from one run's evidence to a bottleneck hypothesis and the check to run next.

Each rule matches one shape of the evidence to the intervention it suggests (match the
intervention to the evidence, never the other way round).
A rule fires only with its minimum of data (constants in
:mod:`pytest_latency.analysis.diagnosis_rules`), never invents attribution (server-only
rules stay silent without server durations; client proxies say they are proxies), and
states the numbers it rests on. A finding is a hypothesis, not causation: inspect slow
traces and seek counterexamples before changing anything, then change one setting and
repeat the same offered workload.

Pure and vectorised: one pass over the records builds per-request columns.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pytest_latency.analysis.columns import Columns as RunColumns
from pytest_latency.analysis.columns import float_column
from pytest_latency.analysis.diagnosis_errors import failures
from pytest_latency.analysis.diagnosis_rules import (
    BATCH_MIN_N,
    BATCH_RATIO,
    BATCH_RHO,
    CONTEXT_MIN_N,
    CONTEXT_RATIO,
    CONTEXT_RHO,
    CONTEXT_SPREAD,
    DELIVERY_MIN_N,
    DELIVERY_SHARE,
    OUTPUT_MIN_N,
    OUTPUT_MIN_TOKENS,
    OUTPUT_SHARE,
    Columns,
    Finding,
    cold_start,
    fmt_ratio,
    fmt_s,
    quartile_medians,
    queueing,
    spearman_rho,
    strength_margin,
)
from pytest_latency.analysis.diagnosis_stall import stall
from pytest_latency.gaps import gap_statistics
from pytest_latency.records import RequestRecord
from pytest_latency.spec.model import Workload
from pytest_latency.telemetry.prometheus import MetricsSeries

__all__ = (
    "CAVEAT",
    "RULES",
    "Finding",
    "diagnose",
    "findings_to_json",
    "format_findings",
)

RULES: tuple[str, ...] = (
    "errors",
    "queueing",
    "stall",
    "cold_start",
    "long_context",
    "batching",
    "long_outputs",
    "delivery",
)
CAVEAT = (
    "A diagnosis is a hypothesis, not causation: inspect several slow traces, seek "
    "counterexamples, then change one setting and repeat the same offered workload."
)


def diagnose(
    records: Sequence[RequestRecord],
    workload: Workload,
    server_metrics: MetricsSeries | None = None,
) -> list[Finding]:
    """Findings for one run, strongest first (ties in :data:`RULES` order)."""
    if not records:
        return []
    c = columns(records, workload)
    windows: dict[str, tuple[float, float]] = {}
    for phase in workload.phases:
        begin = workload.phase_start_s(phase.name)
        windows[phase.name] = (begin, begin + phase.duration_s)
    found = [
        failures(records, [phase.name for phase in workload.phases]),
        queueing(c, windows, server_metrics),
        stall(c, lambda rows: _largest_gaps(records, rows)),
        cold_start(c, warmed_up=workload.warmup_requests > 0),
        long_context(c),
        batching(c),
        long_outputs(c, workload),
        delivery(c),
    ]
    findings = [finding for finding in found if finding is not None]
    return sorted(findings, key=lambda f: (-f.strength, RULES.index(f.rule)))


def format_findings(findings: Sequence[Finding]) -> list[str]:
    """One line per finding: "hypothesis — evidence; next: check"."""
    return [f"{f.hypothesis.rstrip('.')} — {f.evidence}; next: {f.check}" for f in findings]


def findings_to_json(findings: Sequence[Finding]) -> list[dict[str, object]]:
    return [
        {
            "rule": f.rule,
            "hypothesis": f.hypothesis,
            "evidence": f.evidence,
            "check": f.check,
            "strength": f.strength,
        }
        for f in findings
    ]


def _largest_gaps(records: Sequence[RequestRecord], rows: np.ndarray) -> np.ndarray:
    """The largest inter-token gap of each request at ``rows`` (NaN without gaps)."""
    chosen = [records[int(row)] for row in rows]
    return gap_statistics([r.itl_s for r in chosen], [r.itl_summary for r in chosen], "max")


def _itl_medians(records: Sequence[RequestRecord], ok: np.ndarray) -> np.ndarray:
    """Each ok request's median ITL, computed for all requests of one gap count at once."""
    lengths = np.array([len(r.itl_s) for r in records], dtype=np.int64) * ok
    medians = np.full(len(records), np.nan)
    for length in np.unique(lengths[lengths > 0]):
        rows = np.flatnonzero(lengths == length)
        block = np.array([records[int(i)].itl_s for i in rows], dtype=np.float64)
        medians[rows] = np.median(block, axis=1)
    return medians


def columns(records: Sequence[RequestRecord], workload: Workload) -> Columns:
    """Per-request columns of a run; phases in workload order, then any others seen."""
    # The run's shared columns (as the phase summaries read them), plus what only the
    # diagnosis needs.
    run = RunColumns.from_records(records, [phase.name for phase in workload.phases])
    ok = run.ok & np.isfinite(run.first) & np.isfinite(run.end)
    return Columns(
        phases=run.phases,
        phase=run.phase.astype(np.int64),
        ok=ok,
        start=np.where(np.isfinite(run.sent), run.sent, run.intended),
        intended=run.intended,
        first=run.first,
        end=run.end,
        input_tokens=float_column(records, "input_tokens"),
        output_tokens=float_column(records, "output_tokens"),
        queue=float_column(records, "queue_wait_s"),
        prefill=float_column(records, "prefill_s"),
        decode=float_column(records, "decode_s"),
        itl_median=_itl_medians(records, ok),
    )


def _context_metric(c: Columns) -> tuple[str, float, np.ndarray] | None:
    """The most direct first-token measure with enough samples: (label, quality, mask)."""
    candidates = (
        ("server prefill", 0.85, c.prefill),
        ("TTFT after server queue wait", 0.75, c.ttft - c.queue),
        ("client TTFT (includes any queueing; no server split)", 0.55, c.ttft),
    )
    for label, quality, values in candidates:
        mask = c.ok & np.isfinite(values) & np.isfinite(c.input_tokens)
        if int(mask.sum()) >= CONTEXT_MIN_N:
            return label, quality, np.where(mask, values, np.nan)
    return None


def long_context(c: Columns) -> Finding | None:
    """Prefill (else TTFT after queue, else TTFT) grows with input length."""
    chosen = _context_metric(c)
    if chosen is None:
        return None
    label, quality, values = chosen
    mask = np.isfinite(values)
    x, y = c.input_tokens[mask], values[mask]
    x_lo, x_hi, y_lo, y_hi = quartile_medians(x, y)
    if x_lo <= 0 or x_hi < CONTEXT_SPREAD * x_lo or y_lo <= 0:
        return None
    rho = spearman_rho(x, y)
    if not rho >= CONTEXT_RHO or y_hi < CONTEXT_RATIO * y_lo:
        return None
    evidence = (
        f"{label} median {fmt_s(y_hi)} for the longest-input quarter (~{x_hi:.0f} tokens) vs "
        f"{fmt_s(y_lo)} for the shortest (~{x_lo:.0f}) ({fmt_ratio(y_hi / y_lo)}); Spearman rho "
        f"{rho:.2f} between input tokens and {label.split(' (')[0]} (n={x.size})"
    )
    return Finding(
        "long_context",
        "Prefill grows with long context: first-token latency rises with input length.",
        evidence,
        "remove irrelevant context from prompts; recheck evidence quality (answers stay "
        "grounded) and first-token latency",
        round(quality * strength_margin(rho, CONTEXT_RHO, 0.9), 3),
    )


def batching(c: Columns) -> Finding | None:
    """A request's median ITL grows with the number of others decoding at its midpoint."""
    has = np.isfinite(c.first) & np.isfinite(c.end)
    use = c.ok & np.isfinite(c.itl_median)
    if int(use.sum()) < BATCH_MIN_N:
        return None
    starts, ends = np.sort(c.first[has]), np.sort(c.end[has])
    mid = (c.first[use] + c.end[use]) / 2.0
    others = np.searchsorted(starts, mid, "right") - np.searchsorted(ends, mid, "left") - 1
    concurrency = others.astype(np.float64)
    itl = c.itl_median[use]
    x_lo, x_hi, y_lo, y_hi = quartile_medians(concurrency, itl)
    if x_hi <= x_lo or y_lo <= 0:
        return None
    rho = spearman_rho(concurrency, itl)
    if not rho >= BATCH_RHO or y_hi < BATCH_RATIO * y_lo:
        return None
    evidence = (
        f"median ITL {fmt_s(y_hi)} in the busiest quarter (~{x_hi:.0f} other requests "
        f"decoding) vs {fmt_s(y_lo)} in the quietest (~{x_lo:.0f}) ({fmt_ratio(y_hi / y_lo)}); "
        f"Spearman rho {rho:.2f} between client-observed decode concurrency and per-request "
        f"median ITL (n={itl.size})"
    )
    return Finding(
        "batching",
        "Token delivery slows with concurrency: requests decoding together share the batch, "
        "so each one's inter-token latency grows.",
        evidence,
        "adjust scheduling or batching (max concurrent sequences, batch token budget, chunked "
        "prefill); recheck throughput and per-user latency",
        round(0.8 * strength_margin(y_hi / y_lo, BATCH_RATIO, 2.0), 3),
    )


def long_outputs(c: Columns, workload: Workload) -> Finding | None:
    """Generation after the first token is most of completion time, and outputs are long."""
    e2e, ttft = c.e2e, c.ttft
    use = c.ok & (e2e > 0) & np.isfinite(c.output_tokens)
    if int(use.sum()) < OUTPUT_MIN_N:
        return None
    share = float(np.median((e2e[use] - ttft[use]) / e2e[use]))
    tokens = float(np.median(c.output_tokens[use]))
    if share < OUTPUT_SHARE or tokens < OUTPUT_MIN_TOKENS:
        return None
    evidence = (
        f"time after the first token is {share:.0%} of completion time in median "
        f"(n={int(use.sum())}); median output {tokens:.0f} tokens (workload cap "
        f"{workload.output_tokens}); median e2e {fmt_s(float(np.median(e2e[use])))}"
    )
    if workload.ignore_eos and tokens >= 0.95 * workload.output_tokens:
        evidence += "; outputs run to the cap with ignore_eos: the test itself sets their length"
    return Finding(
        "long_outputs",
        "Long answers dominate completion time: generation after the first token, not "
        "waiting or prefill, sets end-to-end latency.",
        evidence,
        "set an appropriate output limit (max_tokens, stop sequences); recheck completeness "
        "and task success",
        round(0.6 * strength_margin(share, OUTPUT_SHARE, 0.95), 3),
    )


def delivery(c: Columns) -> Finding | None:
    """Client send-to-last-byte far exceeds the server's queue + prefill + decode."""
    server = c.queue + c.prefill + c.decode  # NaN unless the server reported all three
    span = c.end - c.start
    use = c.ok & np.isfinite(server) & (span > 0)
    n = int(use.sum())
    if n < DELIVERY_MIN_N:
        return None
    share = float(np.median((span[use] - server[use]) / span[use]))
    if share < DELIVERY_SHARE:
        return None
    evidence = (
        f"{share:.0%} of client send-to-last-byte time lies outside the server-reported "
        f"queue + prefill + decode, in median per request (n={n}); median server total "
        f"{fmt_s(float(np.median(server[use])))} vs client {fmt_s(float(np.median(span[use])))}"
    )
    return Finding(
        "delivery",
        "The server is fast but the client is slow: most of the time is spent outside the "
        "server's reported work, in delivery, buffering or rendering.",
        evidence,
        "inspect delivery and rendering; recheck client timestamps and buffering (proxies, "
        "network, stream flushing)",
        round(0.8 * strength_margin(share, DELIVERY_SHARE, 0.9), 3),
    )
