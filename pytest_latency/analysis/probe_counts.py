"""What each capacity probe sent, what its verdicts rest on, and what the server said.

Counted from the probe phase's records (``probe-<k>``), so every table agrees with the
phase table:

* ``planned``: every request the probe's plan held, one record each (the phase
  table's ``offered``);
* ``sent``: those sent; a probe decided at an early look stops sending, so the rest
  are ``cancelled`` (never sent), as are those cut off at the search's deadline;
* ``decided_on``: those planned before the look that decided the probe, the ``n`` its
  verdicts count (the JSON's ``offered``, its name before these counts);
* ``stop_reason``: why it stopped sending early (its never-sent requests' error:
  ``stopped early: capacity probe at 12/s: the queue ran away``), None when it sent all.

Requests never sent are neither latency samples nor errors (docs/metrics.md): the
verdicts' n counts the sent ones.

A stopped-early probe has ``sent + cancelled == planned`` (its sent requests end as
they would); ``decided_on`` can be less than ``sent``, since requests go on being sent
while the look waits for those before it to end.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_latency.records import RequestRecord, Status


@dataclass(frozen=True, slots=True)
class ProbeCounts:
    planned: int
    sent: int
    cancelled: int
    decided_on: int
    stop_reason: str | None = None

    def to_json(self) -> dict[str, int | str | None]:
        return {
            "planned": self.planned,
            "sent": self.sent,
            "cancelled": self.cancelled,
            "decided_on": self.decided_on,
            "stop_reason": self.stop_reason,
        }


@dataclass(frozen=True, slots=True)
class ProbeServerTimes:
    """The server's own durations for a probe's completed requests (their medians),
    joined by trace id; None where no request got that duration."""

    completed: int
    joined: int  # completed requests with at least one server duration
    queue_wait_p50_s: float | None
    prefill_p50_s: float | None
    decode_p50_s: float | None

    def to_json(self) -> dict[str, float | int | None]:
        return {
            "completed": self.completed,
            "joined": self.joined,
            "queue_wait_p50_s": self.queue_wait_p50_s,
            "prefill_p50_s": self.prefill_p50_s,
            "decode_p50_s": self.decode_p50_s,
        }


def probe_counts(records: Sequence[RequestRecord], decided_on: int) -> ProbeCounts:
    """The counts of one probe phase's ``records``; ``decided_on`` is the probe's own."""
    return ProbeCounts(
        planned=len(records),
        sent=sum(record.sent_s is not None for record in records),
        cancelled=sum(record.status is Status.CANCELLED for record in records),
        decided_on=decided_on,
        stop_reason=next((r.error for r in records if r.never_sent and r.error), None),
    )


def _median(values: list[float | None]) -> float | None:
    known = [value for value in values if value is not None]
    return float(np.median(known)) if known else None


def probe_server_times(records: Sequence[RequestRecord]) -> ProbeServerTimes:
    """The medians of the server's queue wait, prefill and decode over the probe's
    completed requests that have them."""
    done = [record for record in records if record.ok]
    durations = [(r.queue_wait_s, r.prefill_s, r.decode_s) for r in done]
    return ProbeServerTimes(
        completed=len(done),
        joined=sum(any(value is not None for value in row) for row in durations),
        queue_wait_p50_s=_median([row[0] for row in durations]),
        prefill_p50_s=_median([row[1] for row in durations]),
        decode_p50_s=_median([row[2] for row in durations]),
    )


def each_probe(
    records: Sequence[RequestRecord], decided_on: Sequence[int]
) -> list[tuple[ProbeCounts, ProbeServerTimes]]:
    """Each probe's counts and server times from a search's ``records`` (phase
    ``probe-<k>`` is the k-th probe's); ``decided_on``: each probe's own count."""
    phases: dict[str, list[RequestRecord]] = {}
    for record in records:
        phases.setdefault(record.phase, []).append(record)
    found = []
    for number, decided in enumerate(decided_on, start=1):
        own = phases.get(f"probe-{number}", [])
        found.append((probe_counts(own, decided), probe_server_times(own)))
    return found
