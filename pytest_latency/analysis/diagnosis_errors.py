"""The diagnosis rule that reads failed requests: when errors, not slowness, drive a run.

A failed request counts as unbounded latency in every objective, so a server failing
15% of its requests fails a p95 objective without any request being slow. The latency
rules look only at completed requests and stay silent; this rule names the errors, how
many, where in the run, and the check that fits their kind.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from pytest_latency.analysis.diagnosis_rules import Finding, strength_margin
from pytest_latency.analysis.infrastructure import describe, http_code
from pytest_latency.records import RequestRecord, Status

ERRORS_MIN_N = 3  # failed requests, at least
ERRORS_SHARE = 0.02  # of the offered requests (stopped-early ones not counted)
_KINDS_NAMED = 3

_HYPOTHESES = {
    Status.HTTP_ERROR: (
        "Requests fail, not slow down: the server answered {what}, and each failed request "
        "counts as unbounded latency in every objective."
    ),
    Status.REJECTED: (
        "Admission control turned requests away ({what}): the offered load exceeded what "
        "the server admits, and each rejection counts as unbounded latency."
    ),
    Status.TIMEOUT: (
        "Requests timed out: they were not answered within the workload's timeout, so "
        "they count as unbounded latency."
    ),
    Status.CONNECTION_ERROR: (
        "Connections failed ({what}): the server or a proxy refused or dropped them."
    ),
    Status.PROTOCOL_ERROR: (
        "Responses broke off or were malformed ({what}): the server or a proxy cut streams."
    ),
    Status.CANCELLED: (
        "The run cut requests off mid-answer (its deadline, an interrupt or a lost"
        " generator): the server had them and had not finished, so they count as failed."
    ),
}
_CHECKS = {
    Status.HTTP_ERROR: (
        "read the server's log at the failed requests' trace ids and fix the errors first; "
        "then judge latency again on the same offered load"
    ),
    Status.REJECTED: (
        "add ready capacity or raise the admission limit (queue size, rate limit); recheck "
        "the error rate and latency under the same offered load"
    ),
    Status.TIMEOUT: (
        "inspect the slow traces before the timeout; add capacity if the queue grew, and "
        "raise the timeout only if the objectives allow that wait"
    ),
    Status.CONNECTION_ERROR: (
        "check that the server stayed up (its log, restarts, out-of-memory kills) and any "
        "proxy's connection limits"
    ),
    Status.PROTOCOL_ERROR: (
        "check the server's log for crashes mid-stream and any proxy's buffering or "
        "timeouts on streamed responses"
    ),
    Status.CANCELLED: (
        "read why the run stopped (its errors and the requests' error texts); give a"
        " capacity search more budget, or a run more time to drain, if the server was only"
        " slow"
    ),
}


def failures(records: Sequence[RequestRecord], phases: Sequence[str]) -> Finding | None:
    """Failed requests are :data:`ERRORS_SHARE` of the offered ones (at least
    :data:`ERRORS_MIN_N`): name them by kind and where they fell."""
    # A request never sent is no failure; one cut off mid-stream (cancelled after its
    # send) failed, as the verdicts count it.
    failed = [r for r in records if r.status is not Status.OK and not r.never_sent]
    if len(failed) < ERRORS_MIN_N:  # one cheap pass for the usual run
        return None
    offered = [record for record in records if not record.never_sent]
    if len(failed) < ERRORS_SHARE * len(offered):
        return None
    share = len(failed) / len(offered)
    kinds = Counter((record.status, describe(record)) for record in failed).most_common()
    (status, _text), _count = kinds[0]
    named = "; ".join(
        f"{kind.value} {count}: {text}" for (kind, text), count in kinds[:_KINDS_NAMED]
    )
    if len(kinds) > _KINDS_NAMED:
        named += f"; {len(kinds) - _KINDS_NAMED} other kinds"
    ordered = sorted(failed, key=lambda record: (record.intended_s, record.id))
    first, last = ordered[0], ordered[-1]
    evidence = (
        f"{len(failed)} of {len(offered)} requests failed ({share:.1%}): {named};"
        f" {_where(failed, offered, phases)}; first #{first.id} at {first.intended_s:.2f}s,"
        f" last #{last.id} at {last.intended_s:.2f}s"
    )
    return Finding(
        "errors",
        _HYPOTHESES[status].format(what=_what(status, failed)),
        evidence,
        _CHECKS[status],
        round(0.95 * strength_margin(share, ERRORS_SHARE, 0.5), 3),
    )


def _what(status: Status, failed: Sequence[RequestRecord]) -> str:
    """The HTTP statuses of the dominant kind (``HTTP 500``), else its error's name."""
    codes = Counter(http_code(record) for record in failed if record.status is status)
    named = [f"HTTP {code}" for code, _count in codes.most_common(2) if code is not None]
    if named:
        return " and ".join(named)
    return status.value.replace("_", " ")


def _where(
    failed: Sequence[RequestRecord], offered: Sequence[RequestRecord], phases: Sequence[str]
) -> str:
    """Each phase's failed share, so a burst's rejections read as the burst's."""
    totals = Counter(record.phase for record in offered)
    counts = Counter(record.phase for record in failed)
    order = [name for name in phases if name in totals] + sorted(set(totals) - set(phases))
    return "by phase: " + ", ".join(
        f"{name} {counts[name]}/{totals[name]}" for name in order if totals[name]
    )
