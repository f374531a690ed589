"""Failures that are about the infrastructure, not latency: a run that measured no server.

A server that went away mid-run, a wrong model name or a missing token fail request
after request the same way. Judged as statistics, such a run is at best inconclusive
(91 of 150 requests refused, all in one stretch, is one event, not 91 samples) and can
even pass. So these runs are classified first, from the records alone, and a run that
matches is invalid: its test errors with the evidence, whatever its objectives say.

The patterns, strongest first (constants below), read from the requests that were sent
(a request the run cancelled before sending it is no evidence about the server):

* the server **exited** during the run (a container or process the plugin started);
* the server **went away**: no request was answered after some point, and the
  :data:`GONE_MIN_REQUESTS` or more requests (in send order) from there to the end of
  the run mostly found no server (connection refused or reset, or a stream cut off),
  the last one included;
* the server **stopped answering**: no request was answered after some point, and every
  request from there to the end of the run timed out (or found no server), a stretch of
  :data:`OUTAGE_SHARE` of the requests and at least :data:`OUTAGE_MIN_REQUESTS`: a hung
  server, or one so overloaded that nothing finished within the timeout for the rest of
  the run (either way no latency was measured there, and a gate must not pass it);
* an **outage**: such a stretch mid-run covering :data:`OUTAGE_SHARE` of the requests
  (and at least :data:`OUTAGE_MIN_REQUESTS`);
* one **dominant error**: the same HTTP status, or the same connection or protocol
  error, behind :data:`DOMINANT_SHARE` of the offered requests.

Rejections (429/503 from admission) and timeouts are the server's answer under load, a
latency matter, so they never make a run an infrastructure failure unless nothing was
answered from some point to the end (above); nor do HTTP errors on a minority of
requests (500s on 15%): the error-rate and latency objectives judge those.
"""

from __future__ import annotations

import errno
import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from pytest_latency.records import RequestRecord, Status

# Statuses that say the request never met a working server. Rejections (429/503) and
# timeouts are the server's answer under load, a latency matter, so they are not here.
INFRASTRUCTURE_STATUSES = frozenset(
    {Status.CONNECTION_ERROR, Status.HTTP_ERROR, Status.PROTOCOL_ERROR}
)
# A request that found no server: refused or reset, or its stream cut off mid-answer
# (what the requests in flight see when the server dies).
UNREACHED_STATUSES = frozenset({Status.CONNECTION_ERROR, Status.PROTOCOL_ERROR})
# A request the server never finished: it timed out, or it found no server.
UNANSWERED_STATUSES = UNREACHED_STATUSES | {Status.TIMEOUT}
_ANY_PATTERN = INFRASTRUCTURE_STATUSES | UNANSWERED_STATUSES
DOMINANT_SHARE = 0.5  # one error behind at least this share of the offered requests
GONE_MIN_REQUESTS = 5  # unreached requests in a row, to the end of the run
OUTAGE_MIN_REQUESTS = 10  # unreached requests in a row, mid-run ...
OUTAGE_SHARE = 0.2  # ... and at least this share of the offered requests
_KINDS_SHOWN = 3  # error kinds named in a headline; the rest are "other errors"
_HTTP_STATUS = re.compile(r"HTTP (\d{3})")
_HTTP_HINTS = {
    400: "the server refuses the request itself: the wrong API (chat or completions)?",
    401: "missing or wrong credentials?",
    403: "missing or wrong credentials?",
    404: "a wrong model name or URL?",
    422: "the server refuses the request itself: the wrong API (chat or completions)?",
    500: "the server fails the requests: read its log at these requests' traces",
    502: "a proxy in front of the server cannot reach it?",
    504: "a proxy in front of the server cannot reach it?",
}


@dataclass(frozen=True, slots=True)
class ErrorKind:
    """One kind of failure as a reader names it, and how many requests it failed."""

    status: Status
    text: str  # "connection refused", "HTTP 404: model unloaded"
    count: int
    example: str  # the error as recorded, of the first request of this kind


@dataclass(frozen=True, slots=True)
class InfrastructureFailure:
    """Why a run measured no server, with the requests that show it.

    ``pattern``: ``exited``, ``gone``, ``outage`` or ``dominant`` (module docstring);
    ``failed``: the requests of the pattern in send order (empty when the server exited
    without a request failing); ``last_answered``: the last request before them that the
    server answered, if any.
    """

    pattern: str
    headline: str
    offered: int
    failed: tuple[RequestRecord, ...]
    kinds: tuple[ErrorKind, ...]
    hint: str
    server_exit: str | None = None
    last_answered: RequestRecord | None = None

    def evidence(self) -> list[str]:
        """The numbers behind the headline: the first and last failed request, each
        error's count and text, the last request answered, the server's exit."""
        lines = []
        if self.failed:
            first, last = self.failed[0], self.failed[-1]
            lines.append(
                f"{len(self.failed)} of {self.offered} requests failed, the first #{first.id}"
                f" at {first.intended_s:.2f}s, the last #{last.id} at {last.intended_s:.2f}s"
            )
        for kind in self.kinds:
            said = kind.text if kind.example in ("", kind.text) else f"{kind.text}: {kind.example}"
            lines.append(f"{kind.status.value} {kind.count}: {said}")
        if self.last_answered is not None:
            answered = self.last_answered
            lines.append(
                f"the last request answered before them: #{answered.id} at"
                f" {answered.intended_s:.2f}s"
            )
        if self.server_exit:
            lines.append(f"the server exited during the run: {self.server_exit}")
        return lines


def classify(
    records: Sequence[RequestRecord], server_exit: str | None = None
) -> InfrastructureFailure | None:
    """The infrastructure failure ``records`` show (module docstring), or None.

    ``server_exit``: how the server the plugin started exited during the run, if it did.
    """
    found = None
    # Every pattern needs an infrastructure error or a timeout: one cheap pass for the
    # usual run.
    if any(record.status in _ANY_PATTERN for record in records):
        ordered = sorted(_sent(records), key=lambda record: (record.intended_s, record.id))
        found = _gone(ordered) or _stalled(ordered) or _outage(ordered) or _dominant(ordered)
    if server_exit is None:
        return found
    # The first line only (exit code); the log tail after it goes into the evidence.
    summary = server_exit.split("\n", 1)[0].removesuffix("; last log lines:")
    exited = f"infrastructure: the server exited during the run ({summary})"
    if found is None:
        return InfrastructureFailure(
            "exited", exited, len(records), (), (), "", server_exit=server_exit
        )
    rest = found.headline.removeprefix("infrastructure: ")
    return InfrastructureFailure(
        "exited", f"{exited}; {rest}", found.offered, found.failed, found.kinds, found.hint,
        server_exit, found.last_answered,
    )  # fmt: skip


def infrastructure_headline(
    records: Sequence[RequestRecord], server_exit: str | None = None
) -> str | None:
    """``infrastructure: 40 of 42 requests failed with connection refused — ...``, or None."""
    found = classify(records, server_exit)
    return None if found is None else found.headline


def _unanswered_to_the_end(ordered: Sequence[RequestRecord]) -> int:
    """Where the run's last stretch of requests not answered starts (``len`` if none)."""
    start = len(ordered)
    while start > 0 and not ordered[start - 1].ok:
        start -= 1
    return start


def _sent(records: Sequence[RequestRecord]) -> list[RequestRecord]:
    """Leave out requests the run never sent (a stop rule, a probe stopped early): they
    never reached for the server, so they are no evidence about it either way."""
    return [record for record in records if not record.never_sent]


def _gone(ordered: Sequence[RequestRecord]) -> InfrastructureFailure | None:
    """No request answered after some point, most of the rest (and the last) unreached:
    the server went away. (A few rejected or cut off while it shut down count too; a
    hung server's requests time out instead: :func:`_stalled`.)"""
    start = _unanswered_to_the_end(ordered)
    failed = ordered[start:]
    unreached = sum(record.status in UNREACHED_STATUSES for record in failed)
    if len(failed) < GONE_MIN_REQUESTS or unreached < len(failed) / 2:
        return None
    if failed[-1].status not in UNREACHED_STATUSES:
        return None
    first = failed[0]
    where = f", from request #{first.id} ({first.intended_s:.2f}s) to the end of the run"
    hint = "the server went away?"
    return _failure("gone", ordered, failed, where, hint, _answered_before(ordered, start))


def _stalled(ordered: Sequence[RequestRecord]) -> InfrastructureFailure | None:
    """Nothing answered from some point to the end, every request there timed out or
    found no server, over a long stretch: the server stopped answering. A short stretch
    (under :data:`OUTAGE_SHARE` of the run) is an overloaded end the latency judges."""
    start = _unanswered_to_the_end(ordered)
    failed = ordered[start:]
    if len(failed) < max(OUTAGE_MIN_REQUESTS, OUTAGE_SHARE * len(ordered)):
        return None
    if any(record.status not in UNANSWERED_STATUSES for record in failed):
        return None
    first = failed[0]
    where = f", from request #{first.id} ({first.intended_s:.2f}s) to the end of the run"
    hint = (
        "the server stopped answering: hung, or so overloaded that no request finished"
        " within the timeout"
    )
    return _failure("stalled", ordered, failed, where, hint, _answered_before(ordered, start))


def _outage(ordered: Sequence[RequestRecord]) -> InfrastructureFailure | None:
    """The longest stretch of unreached requests, when it is long: an outage."""
    best, begin = (0, 0), 0
    for index, record in enumerate([*ordered, None]):
        if record is not None and record.status in UNREACHED_STATUSES:
            continue
        if index - begin > best[1] - best[0]:
            best = (begin, index)
        begin = index + 1
    failed = ordered[best[0] : best[1]]
    if len(failed) < max(OUTAGE_MIN_REQUESTS, OUTAGE_SHARE * len(ordered)):
        return None
    first, last = failed[0], failed[-1]
    span = last.intended_s - first.intended_s
    where = (
        f" in a row, requests #{first.id} to #{last.id}"
        f" ({first.intended_s:.2f}s to {last.intended_s:.2f}s)"
    )
    hint = f"the server was unreachable for {span:.1f}s: restarted or overloaded at accept?"
    return _failure("outage", ordered, failed, where, hint, _answered_before(ordered, best[0]))


def _dominant(ordered: Sequence[RequestRecord]) -> InfrastructureFailure | None:
    """One error (an HTTP status, or a connection or protocol error) behind most requests."""
    groups: dict[tuple[Status, str], list[RequestRecord]] = {}
    for record in ordered:
        if record.status in INFRASTRUCTURE_STATUSES:
            groups.setdefault(_group(record), []).append(record)
    if not groups:
        return None
    (_status, key), failed = max(groups.items(), key=lambda item: len(item[1]))
    if len(failed) < DOMINANT_SHARE * len(ordered):
        return None
    code = int(key) if key.isdigit() else None
    hint = _HTTP_HINTS.get(code, "") if code is not None else _connection_hint(failed[0])
    return _failure("dominant", ordered, failed, "", hint, None)


def _failure(
    pattern: str,
    ordered: Sequence[RequestRecord],
    failed: Sequence[RequestRecord],
    where: str,
    hint: str,
    last_answered: RequestRecord | None,
) -> InfrastructureFailure:
    kinds = _kinds(failed)
    named = [f"{kind.text} ({kind.count})" for kind in kinds[:_KINDS_SHOWN]]
    if len(kinds) == 1:
        named = [kinds[0].text]
    elif len(kinds) > _KINDS_SHOWN:
        named.append(f"other errors ({sum(kind.count for kind in kinds[_KINDS_SHOWN:])})")
    headline = (
        f"infrastructure: {len(failed)} of {len(ordered)} requests failed with"
        f" {' or '.join(named)}{where}" + (f" — {hint}" if hint else "")
    )
    return InfrastructureFailure(
        pattern, headline, len(ordered), tuple(failed), tuple(kinds), hint,
        last_answered=last_answered,
    )  # fmt: skip


def _answered_before(ordered: Sequence[RequestRecord], index: int) -> RequestRecord | None:
    return next((record for record in reversed(ordered[:index]) if record.ok), None)


def _kinds(failed: Sequence[RequestRecord]) -> list[ErrorKind]:
    """Each error as a reader says it, most frequent first."""
    counts = Counter((record.status, describe(record)) for record in failed)
    examples: dict[tuple[Status, str], str] = {}
    for record in failed:
        examples.setdefault((record.status, describe(record)), record.error or "")
    return [
        ErrorKind(status, text, count, examples[status, text])
        for (status, text), count in counts.most_common()
    ]


def _group(record: RequestRecord) -> tuple[Status, str]:
    """What counts as "the same error": the HTTP status code, else the error as said."""
    code = http_code(record)
    if record.status is Status.HTTP_ERROR and code is not None:
        return record.status, str(code)
    return record.status, describe(record)


def http_code(record: RequestRecord) -> int | None:
    """The HTTP status a failed request got, from the record or its error text."""
    if record.http_status is not None:
        return record.http_status
    found = _HTTP_STATUS.match(record.error or "")
    return int(found.group(1)) if found else None


def describe(record: RequestRecord) -> str:
    """A failed request's error as a reader says it: ``connection refused``, the rest as
    recorded (``HTTP 404: model unloaded``, ``stream ended without [DONE]``)."""
    error = record.error or record.status.value
    if record.status is Status.CONNECTION_ERROR:
        # The hot path says "[Errno 111] Connect call failed", httpx "Connection refused".
        lowered = error.lower()
        if "refused" in lowered or f"[Errno {errno.ECONNREFUSED}]" in error:
            return "connection refused"
        if "reset" in lowered or f"[Errno {errno.ECONNRESET}]" in error:
            return "connection reset"
    return error


def _connection_hint(record: RequestRecord) -> str:
    return "the server went away?" if record.status is Status.CONNECTION_ERROR else ""
