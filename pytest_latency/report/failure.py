"""The text of a failed or skipped latency test, wrapped at the terminal width.

The first line names the failed objectives in brief (pytest's short test summary shows
the first line of a failure); then the failed requests, once, by kind, and each failed
objective's slowest completed requests with their traces. A run that measured no server
gets :func:`infrastructure_message` instead. The full verdicts and the diagnosis are in
the latency summary (:mod:`.terminal`), which pytest prints after the failures, so they
print once.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from pytest_latency.analysis.infrastructure import InfrastructureFailure, describe
from pytest_latency.analysis.verdict import ObjectiveResult
from pytest_latency.records import RequestRecord
from pytest_latency.report.evidence import failed_count, headline, slowest_requests, trace_link
from pytest_latency.report.wrapping import wrap

if TYPE_CHECKING:
    from pytest_latency.analysis.result import LatencyResult

# pytest writes an exception's message under "E   " in a Python test's failure.
MESSAGE_MARGIN = 4
FAILED_IDS = 5  # request ids shown per kind of error
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
    """``headline_text``: what happened ("latency objectives not met").

    Failed requests are listed once, by kind (they count against every objective); under
    each failed objective, its slowest completed requests.
    """
    width -= MESSAGE_MARGIN
    lines = [first_line(failed, width)]
    where = f"{run.test} (server {run.server.kind} {run.server.url})"
    lines.extend(wrap(f"{headline_text} in {where}:", width))
    for index, line in enumerate(failed_requests(run.records, run.trace_url_template)):
        lines.extend(wrap(line, width, "    " if index else "  "))
    for result in failed:
        if result.objective.metric == "error_rate":
            continue  # its evidence is the failed requests above
        completed = [record for record in run.scoped(result.objective) if record.ok]
        requests = slowest_requests(result, completed, run.trace_url_template)
        what = "slowest completed requests:" if requests else "no request in its scope completed"
        lines.extend(wrap(f"{result.objective.label}, {what}", width, "  "))
        for request in requests:
            lines.extend(wrap(request, width, "    "))
    lines.extend(wrap(SEE_SUMMARY, width, "  "))
    return "\n".join(lines)


def failed_requests(
    records: Sequence[RequestRecord], trace_url_template: str | None, shown: int = FAILED_IDS
) -> list[str]:
    """The run's failed requests, once: a line, then one line per kind of error (count,
    the first ``shown`` ids, the first one's trace). Empty when none failed."""
    groups: dict[tuple[str, str], list[RequestRecord]] = {}
    for record in sorted(records, key=lambda record: (record.intended_s, record.id)):
        if not record.ok and not record.never_sent:
            groups.setdefault((record.status.value, describe(record)), []).append(record)
    if not groups:
        return []
    count = sum(len(members) for members in groups.values())
    lines = [f"{failed_count(count, records)} (each counts as unbounded in every objective):"]
    for (status, text), members in sorted(groups.items(), key=lambda item: -len(item[1])):
        ids = ", ".join(f"#{record.id}" for record in members[:shown])
        more = f" and {len(members) - shown} more" if len(members) > shown else ""
        link = trace_link(members[0].trace_id, trace_url_template)
        lines.append(f"{status} {len(members)}: {text} — {ids}{more}; first: {link}")
    return lines


def infrastructure_message(run: LatencyResult, failure: InfrastructureFailure, width: int) -> str:
    """Why a run measured no server: the headline (pytest's short summary line), the
    evidence, and that nothing was decided."""
    width -= MESSAGE_MARGIN
    lines = wrap(failure.headline, width)
    for line in failure.evidence():
        lines.extend(wrap(line, width, "  "))
    if failure.failed:
        link = trace_link(failure.failed[0].trace_id, run.trace_url_template)
        lines.extend(wrap(f"the first failed request: {link}", width, "  "))
    where = f"{run.test} (server {run.server.kind} {run.server.url})"
    lines.extend(
        wrap(
            f"in {where}: nothing was decided; its objectives are invalid, not statistics:"
            " fix the server or the spec and run again",
            width,
            "  ",
        )
    )
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
