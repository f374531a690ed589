"""The text of a failed or skipped latency test, wrapped at the terminal width.

The first line names the failed objectives in brief (pytest's short test summary shows
the first line of a failure); the rest gives each failed objective's slowest requests
with their traces. The full verdicts and the diagnosis are in the latency summary
(:mod:`.terminal`), which pytest prints after the failures, so they print once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pytest_latency.analysis.infrastructure import infrastructure_headline
from pytest_latency.analysis.verdict import ObjectiveResult
from pytest_latency.report.evidence import headline, slowest_requests
from pytest_latency.report.wrapping import wrap

if TYPE_CHECKING:
    from pytest_latency.analysis.result import LatencyResult

# pytest writes an exception's message under "E   " in a Python test's failure.
MESSAGE_MARGIN = 4
SEE_SUMMARY = "every verdict in full, and the diagnosis: the latency summary below"


def first_line(results: Sequence[ObjectiveResult], width: int) -> str:
    """As many failed objectives as fit in ``width`` (at least one), then how many more."""
    heads = [headline(result) for result in results]
    line = heads[0]
    for index, head in enumerate(heads[1:], start=1):
        more = f"; +{len(heads) - index - 1} more" if index < len(heads) - 1 else ""
        if len(line) + 2 + len(head) + len(more) > width:
            return f"{line}; +{len(heads) - index} more"
        line += f"; {head}"
    return line


def failure_message(
    run: LatencyResult, failed: Sequence[ObjectiveResult], headline_text: str, width: int
) -> str:
    """``headline_text``: what happened ("latency objectives not met")."""
    width -= MESSAGE_MARGIN
    lines = [first_line(failed, width)]
    infrastructure = infrastructure_headline(run.records)
    if infrastructure:  # at the top: the objectives failed on a broken setup, not latency
        lines.extend(wrap(infrastructure, width, "  "))
    where = f"{run.test} (server {run.server.kind} {run.server.url})"
    lines.extend(wrap(f"{headline_text} in {where}:", width))
    if run.server_exit:
        lines.extend(wrap(f"the server exited during the run: {run.server_exit}", width, "  "))
    for result in failed:
        requests = slowest_requests(result, run.scoped(result.objective), run.trace_url_template)
        what = "slowest requests:" if requests else "no requests in its scope"
        lines.extend(wrap(f"{result.objective.label}, {what}", width, "  "))
        for request in requests:
            lines.extend(wrap(request, width, "    "))
    lines.extend(wrap(SEE_SUMMARY, width, "  "))
    return "\n".join(lines)


def skip_reason(undecided: Sequence[ObjectiveResult]) -> str:
    """One line (pytest prints skip reasons unwrapped): which objectives were undecided."""
    names = ", ".join(result.objective.label for result in undecided)
    return f"latency objectives inconclusive: {names} (see the latency summary)"


def invalid_message(run: LatencyResult, reasons: Sequence[str], width: int) -> str:
    """Why a run decides nothing: the generator did not offer the planned load."""
    width -= MESSAGE_MARGIN
    first, *others = reasons or ["the planned load was not offered"]
    lines = wrap(f"latency run invalid: {first}", width)  # the short summary's line
    for reason in others:
        lines.extend(wrap(reason, width, "  "))
    lines.extend(wrap(f"in {run.test}: nothing was decided", width, "  "))
    lines.extend(
        wrap("Lower the rate, use more workers, or run on a quieter machine.", width, "  ")
    )
    return "\n".join(lines)
