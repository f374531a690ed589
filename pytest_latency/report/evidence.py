"""Human-readable evidence for one objective: verdict, estimate with bounds, slowest requests.

Where each piece prints (so that each prints once): :func:`verdict_text` in the latency
summary, :func:`headline` first in a failed test's message (pytest's short summary shows
that line), :func:`slowest_requests` under it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pytest_latency._units import format_seconds
from pytest_latency.analysis.runaway import RUNAWAY_REASON
from pytest_latency.analysis.samples import record_value
from pytest_latency.analysis.verdict import ObjectiveResult, Verdict, slowest
from pytest_latency.records import RequestRecord
from pytest_latency.spec.gates import GATE_METRICS


def trace_link(trace_id: str, template: str | None) -> str:
    """The trace id, as a link when a ``{trace_id}`` URL template is configured."""
    if not trace_id:
        return "no trace id"
    return template.replace("{trace_id}", trace_id) if template else f"trace {trace_id}"


def failed_count(failed: int, records: Sequence[RequestRecord]) -> str:
    """``3 of 120 sent requests failed``, and how many planned ones were never sent (a
    stop rule kept them back: neither failed nor a sample), when some were not."""
    unsent = sum(record.never_sent for record in records)
    if not unsent:
        return f"{failed} of {len(records)} requests failed"
    return (
        f"{failed} of {len(records) - unsent} sent requests failed ({unsent} planned never"
        " sent: neither failed nor a sample)"
    )


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
    if objective.metric == "capacity":
        return (
            f"capacity bracket {_rps(result.lower_s)}..{_rps(result.upper_s)} ({result.n} probes)"
        )
    if objective.metric == "recovery":
        return _recovery_estimate(result)
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


def _recovery_estimate(result: ObjectiveResult) -> str:
    """The median episode's recovery time and its bounds over episodes; with too few
    episodes for bounds, the time is descriptive and says so (analysis/recovery.py)."""
    from pytest_latency.analysis.recovery_plan import median_episodes_floor

    head = f"median episode back after {format_seconds(result.estimate_s)}"
    episodes = f"{result.n} episode{'' if result.n == 1 else 's'}"
    floor = median_episodes_floor(result.confidence)
    if floor is None or result.n < floor:
        return f"{head} ({episodes}, too few for bounds: descriptive)"
    spread = f"{format_seconds(result.lower_s)}..{format_seconds(result.upper_s)}"
    return f"{head} (bounds {spread} at {result.confidence:.3%} confidence, {episodes})"


def _rps(rate: float) -> str:
    """A probed rate, ``?`` where the search found none (passed or failed nowhere)."""
    return f"{rate:.3g}/s" if math.isfinite(rate) else "?"


def _limit(seconds: float) -> str:
    """A limit as the spec would write it: ``700ms``, ``2.5s``."""
    return f"{seconds:g}s" if seconds >= 1.0 else f"{seconds * 1e3:g}ms"


def _scope(result: ObjectiveResult) -> str:
    objective = result.objective
    scope = [objective.phase] if objective.phase else []
    if objective.input_tokens:
        scope.append(f"input {objective.input_tokens[0]}-{objective.input_tokens[1]}")
    if objective.output_tokens:
        scope.append(f"output {objective.output_tokens[0]}-{objective.output_tokens[1]}")
    return f" [{', '.join(scope)}]" if scope else ""


def headline(result: ObjectiveResult) -> str:
    """The verdict in a few words: ``ttft p95 [steady] 812.0ms > 700ms (bounds 760.0ms..880.0ms)``.

    What a failed test's short summary line shows, so it starts with the objective.
    """
    objective = result.objective
    name = objective.metric if objective.p is None else f"{objective.metric} p{objective.p:g}"
    name += _scope(result)
    if objective.relative:
        assert objective.max_regression is not None
        value = f"{result.estimate_s:.3g}x baseline"
        limit = f"+{objective.max_regression:.0%}"
        bounds = f"{result.lower_s:.3g}..{result.upper_s:.3g}"
    elif objective.metric == "capacity":
        value, limit = f"{_rps(result.estimate_s)} passed", f"{objective.min_value or 0.0:g}/s"
        bounds = f"{_rps(result.lower_s)}..{_rps(result.upper_s)}"
        if result.verdict is Verdict.FAIL:
            return f"{name} failed at {_rps(result.upper_s)} <= {limit} (bracket {bounds})"
    elif objective.metric == "error_rate":
        value, limit = f"{result.estimate_s:.2%} failed", f"{objective.max_s or 0.0:.2%}"
        bounds = f"{result.lower_s:.2%}..{result.upper_s:.2%}"
    else:
        value, limit = format_seconds(result.estimate_s), _limit(objective.max_s or 0.0)
        bounds = f"{format_seconds(result.lower_s)}..{format_seconds(result.upper_s)}"
        if result.estimate_s == math.inf and objective.metric != "recovery":
            value += " (failed requests)"  # they count as unbounded latency
    if result.verdict is Verdict.FAIL:
        # A runaway queue decided it, not the bounds: say so first (analysis/runaway.py).
        why = f"{RUNAWAY_REASON}; " if result.reason.startswith(RUNAWAY_REASON) else ""
        return f"{name} {value} > {limit} ({why}bounds {bounds})"
    return f"{name} {value}, {result.verdict.value} against {limit} (bounds {bounds})"


def slowest_requests(
    result: ObjectiveResult,
    records: Sequence[RequestRecord],
    trace_url_template: str | None,
    count: int = 5,
) -> list[str]:
    """The slowest requests in the objective's scope, each with its trace (one line each)."""
    metric = result.objective.metric
    metric = "ttft" if metric in GATE_METRICS else metric  # gates show their slowest TTFTs
    lines = []
    for record in slowest(records, metric, count):
        value = record_value(record, metric)
        shown = record.status.value if value is None else format_seconds(value)
        error = f" ({record.status.value}: {record.error})" if not record.ok else ""
        lines.append(
            f"request #{record.id} [{record.phase}] {shown}{error}, "
            f"{trace_link(record.trace_id, trace_url_template)}"
        )
    return lines


def verdict_text(result: ObjectiveResult) -> str:
    """The verdict in full: label, estimate with bounds and n, and why when not a pass."""
    text = f"{result.objective.label}: {format_estimate(result)}"
    if result.verdict is not Verdict.PASS:
        text += f"; {result.reason}"
    return text
