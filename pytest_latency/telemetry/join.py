"""The join: each client record gets the server's own durations for the same trace id.

Sources, in order of preference: server spans received over OTLP, the ``Server-Timing``
response header, llama.cpp's last-chunk ``timings``. Values are merged field by field
(a span's queue wait is not overwritten by a header's). A record whose server data never
arrived keeps nulls and is counted: never dropped, never guessed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from pytest_latency.records import RequestRecord
from pytest_latency.telemetry.headers import parse_llamacpp_timings, parse_server_timing
from pytest_latency.telemetry.timings import ServerTimings


@dataclass(frozen=True, slots=True)
class JoinReport:
    """How the join went for one run."""

    requests: int
    joined: int  # records that got at least one server duration
    sources: dict[str, int] = field(default_factory=dict)
    unknown_traces: int = 0  # traces received that match no record of the run
    waited_s: float = 0.0
    receiver: str | None = None  # where server spans were expected, if anywhere

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


def join_records(
    records: Sequence[RequestRecord],
    span_timings: Mapping[str, ServerTimings],
    *,
    unknown_traces: int = 0,
    waited_s: float = 0.0,
    receiver: str | None = None,
) -> JoinReport:
    """Fill each record's server durations in place; return the counts."""
    joined = 0
    sources: dict[str, int] = {}
    for record in records:
        timings = record_timings(record, span_timings.get(record.trace_id))
        if timings is None:
            continue
        record.queue_wait_s = timings.queue_wait_s
        record.prefill_s = timings.prefill_s
        record.decode_s = timings.decode_s
        record.server_source = timings.source
        if any(v is not None for v in (timings.queue_wait_s, timings.prefill_s, timings.decode_s)):
            joined += 1
            sources[timings.source] = sources.get(timings.source, 0) + 1
    return JoinReport(
        requests=len(records),
        joined=joined,
        sources=sources,
        unknown_traces=unknown_traces,
        waited_s=waited_s,
        receiver=receiver,
    )
