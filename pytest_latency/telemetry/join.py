"""The join: each client record gets the server's own durations for the same trace id.

Sources, in order of preference: server spans received over OTLP, the ``Server-Timing``
response header, llama.cpp's last-chunk ``timings``. Values are merged field by field
(a span's queue wait is not overwritten by a header's). A record whose server data never
arrived keeps nulls and is counted: never dropped, never guessed. When spans were
expected and none came, or they stopped coming partway through the run, the report
says so in words (``span_problem``), so a summary never shows null queue waits alone.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pytest_latency.records import RequestRecord
from pytest_latency.telemetry.headers import parse_llamacpp_timings, parse_server_timing
from pytest_latency.telemetry.timings import ServerTimings

# Spans "stopped arriving" when at least this many of the last requests have none
# (and at least this share of the run): fewer is a late span or two, already counted.
STOPPED_MIN_REQUESTS = 3
STOPPED_MIN_SHARE = 0.05


@dataclass(frozen=True, slots=True)
class JoinReport:
    """How the join went for one run."""

    requests: int
    joined: int  # records that got at least one server duration
    sources: dict[str, int] = field(default_factory=dict)
    unknown_traces: int = 0  # traces received that match no record of the run
    waited_s: float = 0.0
    receiver: str | None = None  # where server spans were expected, if anywhere
    # Why server spans are missing, in words (none arrived, or they stopped arriving);
    # None when they came or were not expected. Not in the JSON: its counts say it.
    span_problem: str | None = None

    @property
    def missing(self) -> int:
        return self.requests - self.joined

    def to_json(self) -> dict[str, object]:
        return {
            "requests": self.requests,
            "joined": self.joined,
            "missing": self.missing,
            "sources": self.sources,
            "unknown_traces": self.unknown_traces,
            "waited_s": self.waited_s,
            "receiver": self.receiver,
        }


def record_timings(record: RequestRecord, from_spans: ServerTimings | None) -> ServerTimings | None:
    """Everything the server said about ``record``, merged; None when it said nothing."""
    found = from_spans
    reports: list[ServerTimings | None] = []
    if record.server_timing:
        reports.append(parse_server_timing(record.server_timing, record.trace_id))
    if record.stream_timings:
        reports.append(parse_llamacpp_timings(record.stream_timings, record.trace_id))
    for report in reports:
        if report is not None:
            found = report if found is None else found.merged(report)
    return found


#: A server duration for a request that never ended is believed up to this (a day).
_MAX_UNENDED_S = 86_400.0


def _plausible_limit(record: RequestRecord) -> float:
    """The longest a server duration of ``record`` can be: its own end to end (the server
    cannot have spent longer on it than the client waited), or a day when it never ended."""
    e2e = record.e2e_s
    return max(0.0, e2e) if e2e is not None else _MAX_UNENDED_S


def _clamped(value: float | None, limit: float) -> float | None:
    """``value`` at most ``limit``: a server's ``queue;dur=1.7e308`` becomes the request's
    own e2e, never a number that overflows a sum or a report."""
    return None if value is None else min(value, limit)


def join_records(
    records: Sequence[RequestRecord],
    span_timings: Mapping[str, ServerTimings],
    *,
    unknown_traces: int = 0,
    waited_s: float = 0.0,
    receiver: str | None = None,
    expect_spans: bool = False,
) -> JoinReport:
    """Fill each record's server durations in place; return the counts. Each duration is
    clamped to the request's own e2e (:func:`_clamped`): the server's word, not beyond
    what the client saw.

    ``expect_spans``: the server is known to send spans to ``receiver``; their absence
    is then described in ``span_problem``.
    """
    joined = 0
    sources: dict[str, int] = {}
    for record in records:
        timings = record_timings(record, span_timings.get(record.trace_id))
        if timings is None:
            continue
        limit = _plausible_limit(record)
        record.queue_wait_s = _clamped(timings.queue_wait_s, limit)
        record.prefill_s = _clamped(timings.prefill_s, limit)
        record.decode_s = _clamped(timings.decode_s, limit)
        record.server_source = timings.source
        if any(v is not None for v in (timings.queue_wait_s, timings.prefill_s, timings.decode_s)):
            joined += 1
            sources[timings.source] = sources.get(timings.source, 0) + 1
    return JoinReport(
        # A request never sent (a stop rule kept it back) has no span to wait for.
        requests=sum(not record.never_sent for record in records),
        joined=joined,
        sources=sources,
        unknown_traces=unknown_traces,
        waited_s=waited_s,
        receiver=receiver,
        span_problem=missing_spans(records, span_timings, waited_s) if expect_spans else None,
    )


def missing_spans(
    records: Sequence[RequestRecord], span_timings: Mapping[str, object], waited_s: float
) -> str | None:
    """Why the run's server spans are missing, or None: none of the completed requests
    got one, or the last of them (in planned order) got none after earlier ones did.
    Read after the join: it says whether another source filled their queue waits."""
    wanted = sorted((r for r in records if r.ok), key=lambda r: r.intended_s)
    if not wanted:
        return None
    arrived = [record.trace_id in span_timings for record in wanted]
    if not any(arrived):
        return (
            f"no server spans arrived for any of the {len(wanted)} completed requests "
            f"(waited {waited_s:.1f}s): {_consequence(wanted)}; check that the server "
            "exports to the receiver (a vLLM image without OpenTelemetry packages cannot)"
        )
    last = max(index for index, got in enumerate(arrived) if got)
    tail = wanted[last + 1 :]
    if len(tail) >= max(STOPPED_MIN_REQUESTS, math.ceil(STOPPED_MIN_SHARE * len(wanted))):
        return (
            f"server spans stopped arriving: none for the last {len(tail)} of {len(wanted)} "
            f"completed requests (planned from {tail[0].intended_s:.1f}s; waited "
            f"{waited_s:.1f}s after the run): {_consequence(tail)}"
        )
    return None


def _consequence(spanless: Sequence[RequestRecord]) -> str:
    """What the missing spans cost: queue waits unknown, unless another source said."""
    unknown = sum(record.queue_wait_s is None for record in spanless)
    if unknown == len(spanless):
        return "their queue waits are unknown (null), not zero"
    sources = sorted({r.server_source for r in spanless if r.server_source is not None})
    if unknown == 0:
        return f"their queue waits come from {', '.join(sources)} instead"
    return (
        f"{unknown} of them have no queue wait (null, not zero); the rest from {', '.join(sources)}"
    )
