"""Human-readable evidence for one objective: verdict, estimate with bounds, slowest requests."""

from __future__ import annotations

from collections.abc import Sequence

from pytest_latency._units import format_seconds
from pytest_latency.analysis.samples import record_value
from pytest_latency.analysis.verdict import ObjectiveResult, slowest
from pytest_latency.records import RequestRecord
from pytest_latency.spec_gates import GATE_METRICS


def trace_link(trace_id: str, template: str | None) -> str:
    """The trace id, as a link when a ``{trace_id}`` URL template is configured."""
    if not trace_id:
        return "no trace id"
    return template.replace("{trace_id}", trace_id) if template else f"trace {trace_id}"


def sample_size(result: ObjectiveResult) -> str:
    """``n=400`` or, where correlation cost evidence, ``n=2000, effective n=105``."""
    effective = result.n_effective
    if effective is None or effective >= result.n - 0.5:
        return f"n={result.n}"
    return f"n={result.n}, effective n={effective:.0f}"


def format_estimate(result: ObjectiveResult) -> str:
    objective = result.objective
    size = sample_size(result)
    if objective.relative:
        return (
            f"candidate/baseline ratio {result.estimate_s:.3g} (bounds {result.lower_s:.3g}.."
            f"{result.upper_s:.3g} at {result.confidence:.3%} confidence, {size})"
        )
    if objective.metric == "recovery":
        spread = f"{format_seconds(result.lower_s)}..{format_seconds(result.upper_s)}"
        return f"recovered after {format_seconds(result.estimate_s)} (episodes {spread})"
    if objective.metric == "attainment":
        bounds = f"bounds {result.lower_s:.2%}..{result.upper_s:.2%}"
        return f"{result.estimate_s:.2%} of offered requests good ({bounds}, {size})"
    if objective.metric == "error_rate":
        return (
            f"{result.estimate_s:.2%} failed (bounds {result.lower_s:.2%}..{result.upper_s:.2%}, "
            f"{size})"
        )
    return (
        f"estimate {format_seconds(result.estimate_s)} "
        f"(bounds {format_seconds(result.lower_s)}..{format_seconds(result.upper_s)} "
        f"at {result.confidence:.3%} confidence, {size})"
    )


def describe(
    result: ObjectiveResult,
    records: Sequence[RequestRecord],
    trace_url_template: str | None,
    slowest_count: int = 5,
) -> str:
    """Several lines: the objective, its verdict and why, then the slowest requests."""
    lines = [
        f"{result.verdict.value.upper()} {result.objective.label}: {format_estimate(result)}; "
        f"{result.reason}"
    ]
    lines.extend(f"    WARNING: {caveat}" for caveat in result.warnings)
    metric = result.objective.metric
    metric = "ttft" if metric in GATE_METRICS else metric  # gates show their slowest TTFTs
    for record in slowest(records, metric, slowest_count):
        value = record_value(record, metric)
        shown = record.status.value if value is None else format_seconds(value)
        error = f" ({record.status.value}: {record.error})" if not record.ok else ""
        lines.append(
            f"    request #{record.id} [{record.phase}] {shown}{error}, "
            f"{trace_link(record.trace_id, trace_url_template)}"
        )
    return "\n".join(lines)
