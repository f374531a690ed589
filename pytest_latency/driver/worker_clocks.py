"""Clock offsets of generator workers on other machines, and what a run reports of them.

A worker on another node has its own monotonic clock, whose readings mean nothing on
the driver's. It measures its offset to a reference clock (a process on the driver's
node, reading the same ``CLOCK_MONOTONIC`` as the driver) by pings: it notes its own
clock before sending and after the answer, the reference notes its clock in between.
With the round trip ``rtt = received - sent``, the reference reading lies somewhere in
it, so ``offset = reference - (sent + received) / 2`` is off by at most ``rtt / 2``.
The ping with the smallest round trip gives the tightest bound (queueing only adds
delay), so that one is kept: minimum-round-trip estimation, as NTP's clock filter does.

Only the start instant crosses machines: each worker converts it to its own clock once,
then measures every latency on that clock from its planned instants. Durations are never
taken between two machines' clocks.

Light (stdlib only): analysis and reports import it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class ClockPing:
    """One ping: the worker's clock at send and receive, the reference's in between (ns)."""

    sent_ns: int
    reference_ns: int
    received_ns: int

    @property
    def round_trip_ns(self) -> int:
        return self.received_ns - self.sent_ns


@dataclass(frozen=True, slots=True)
class ClockOffset:
    """``reference - local`` in ns, good to within ``uncertainty_ns`` either way."""

    offset_ns: int
    uncertainty_ns: int

    def to_local(self, reference_ns: int) -> int:
        """A reference-clock instant on the local clock."""
        return reference_ns - self.offset_ns

    def relative_to(self, other: ClockOffset) -> ClockOffset:
        """This clock's offset to ``other``'s clock (both measured to one reference):
        ``other_clock - this_clock``; the uncertainties add up."""
        return ClockOffset(
            self.offset_ns - other.offset_ns, self.uncertainty_ns + other.uncertainty_ns
        )


def estimate_offset(pings: Sequence[ClockPing]) -> ClockOffset:
    """The offset from the ping with the smallest round trip; ValueError without pings
    or with a round trip that runs backwards (not a monotonic clock)."""
    if not pings:
        raise ValueError("no clock pings to estimate an offset from")
    best = min(pings, key=lambda ping: ping.round_trip_ns)
    if best.round_trip_ns < 0:
        raise ValueError(f"a ping came back before it was sent ({best.round_trip_ns} ns)")
    midpoint_x2 = best.sent_ns + best.received_ns
    return ClockOffset(
        offset_ns=best.reference_ns - midpoint_x2 // 2,
        uncertainty_ns=(best.round_trip_ns + 1) // 2,
    )


@dataclass(frozen=True, slots=True)
class GeneratorWorker:
    """One remote generator worker as the run's JSON reports it (``generator.workers[]``).

    ``clock_offset_s`` is the driver's clock minus the worker's; ``lost`` counts its
    requests that came back ``cancelled`` because the worker (or its node) was lost.
    """

    worker: str
    node: str
    clock_offset_s: float
    clock_uncertainty_s: float
    requests: int
    lost: int = 0

    def to_json(self) -> dict[str, object]:
        return {
            "worker": self.worker,
            "node": self.node,
            "clock_offset_s": self.clock_offset_s,
            "clock_uncertainty_s": self.clock_uncertainty_s,
            "requests": self.requests,
            "lost": self.lost,
        }


def uncertain_clocks(workers: Sequence[GeneratorWorker], max_lag_s: float) -> list[str]:
    """Why the run cannot be trusted because of clocks: one reason per worker whose
    offset is less certain than the schedule lag the run allows."""
    return [
        f"worker {worker.worker} on node {worker.node}: clock offset uncertain by "
        f"{worker.clock_uncertainty_s * 1e3:.3g} ms, more than the allowed schedule lag "
        f"{max_lag_s * 1e3:.3g} ms"
        for worker in workers
        if worker.clock_uncertainty_s > max_lag_s
    ]


def describe_workers(workers: Sequence[GeneratorWorker]) -> str | None:
    """One line for the terminal: how many remote workers, their clocks, what was lost."""
    if not workers:
        return None
    nodes = len({worker.node for worker in workers})
    worst = max(worker.clock_uncertainty_s for worker in workers)
    largest = max(abs(worker.clock_offset_s) for worker in workers)
    text = (
        f"generator: {_count(len(workers), 'Ray worker')} on {_count(nodes, 'node')}; "
        f"clock offsets up to {largest * 1e3:.3g} ms, uncertain by up to {worst * 1e3:.3g} ms"
    )
    lost = [f"{w.worker} ({w.lost} requests)" for w in workers if w.lost]
    return text + (f"; lost: {', '.join(lost)}" if lost else "")


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}{'' if number == 1 else 's'}"
