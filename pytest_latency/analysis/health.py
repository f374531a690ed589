"""Generator health: was the offered load really offered, on time?

An open-loop test is only as good as its schedule. If the generator fell behind, the
server saw less (or later) load than planned and its latencies look better than they
are, so the run is *invalid*: an error with the reason, never a pass or a fail.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from pytest_latency._units import format_seconds
from pytest_latency.driver.client_load import SATURATED_SHARE, ClientLoad
from pytest_latency.driver.worker_clocks import GeneratorWorker, uncertain_clocks
from pytest_latency.records import STOPPED_EARLY, RequestRecord
from pytest_latency.spec.model import Workload

DEFAULT_MAX_LAG_P99_S = 0.050
DEFAULT_MAX_SHORTFALL = 0.10  # of a phase's planned requests not sent inside its window


@dataclass(frozen=True, slots=True)
class GeneratorHealth:
    valid: bool
    reasons: tuple[str, ...]
    lag_p99_s: float | None
    shortfalls: dict[str, float]  # per phase: fraction of planned requests sent late or never
    workers: tuple[GeneratorWorker, ...] = ()  # remote workers (Ray), with their clocks
    client: ClientLoad | None = None  # the client's own CPU and event-loop lag

    def to_json(self) -> dict[str, object]:
        document: dict[str, object] = {
            "valid": self.valid,
            "reasons": list(self.reasons),
            "schedule_lag_p99_s": self.lag_p99_s,
            "shortfall": self.shortfalls,
        }
        if self.client is not None:
            document["client"] = self.client.to_json()
        if self.workers:
            document["workers"] = [worker.to_json() for worker in self.workers]
        return document


def check_generator(
    records: Sequence[RequestRecord],
    workload: Workload,
    *,
    max_lag_p99_s: float = DEFAULT_MAX_LAG_P99_S,
    max_shortfall: float = DEFAULT_MAX_SHORTFALL,
    workers: Sequence[GeneratorWorker] = (),
    client: ClientLoad | None = None,
) -> GeneratorHealth:
    """Judge the generator by its own lag and by what it sent inside each phase window.

    Remote ``workers`` converted the start instant with a measured clock offset: one whose
    offset is less certain than the allowed lag may have sent everything that late.
    A ``client`` whose driving thread used its whole core is the bottleneck: its own
    queueing is in every latency, whatever the schedule lag says.
    """
    reasons: list[str] = uncertain_clocks(workers, max_lag_p99_s)
    lags = np.asarray(  # a wait for a max_concurrency slot is the cap's, not the generator's
        [lag for r in records if (lag := r.schedule_lag_s) is not None], dtype=np.float64
    )
    lag_p99 = float(np.percentile(lags, 99)) if lags.size else None
    if lag_p99 is not None and lag_p99 > max_lag_p99_s:
        reasons.append(
            f"schedule lag p99 {format_seconds(lag_p99)} exceeds {format_seconds(max_lag_p99_s)}: "
            "the load generator could not keep its schedule" + _lag_cause(client, max_lag_p99_s)
        )
    shortfalls: dict[str, float] = {}
    for phase in workload.phases:
        # Requests a stop rule kept back were never meant to go out: not a shortfall. A
        # session's later turns follow its answers, not the phase's window: not counted.
        planned = [
            r
            for r in records
            if r.phase == phase.name
            and not r.turn
            and not (r.error or "").startswith(STOPPED_EARLY)
        ]
        if not planned:
            continue
        # A send counts for the phase if it left within its episode's window, plus the lag
        # allowance.
        windows = workload.phase_windows(phase.name)
        on_time = sum(
            1
            for r in planned
            if r.sent_s is not None
            and r.sent_s - (r.slot_wait_s or 0.0)
            < windows[min(r.episode, len(windows) - 1)][1] + max_lag_p99_s
        )
        shortfall = 1.0 - on_time / len(planned)
        shortfalls[phase.name] = shortfall
        if shortfall > max_shortfall:
            reasons.append(
                f"phase {phase.name}: {shortfall:.0%} of {len(planned)} planned requests were "
                f"not sent within the phase (target {phase.rate:g}/s)"
            )
    reasons += _saturated(client)
    return GeneratorHealth(not reasons, tuple(reasons), lag_p99, shortfalls, tuple(workers), client)


def _lag_cause(client: ClientLoad | None, max_lag_p99_s: float) -> str:
    """Whose the late sends were, from the client's own event-loop lag: a loop that woke
    late could not send on time (the client is the bottleneck); one that woke on time
    handed every send over on time, and the sends then waited for a connection."""
    if client is None or client.loop_lag_p99_s is None:
        return ""
    loop = (
        f"its event loop woke {format_seconds(client.loop_lag_p99_s)} late at p99, its"
        f" driving thread busy {client.busy_share:.0%} of the run and"
        f" {client.busiest_window_share:.0%} of its busiest second"
    )
    if client.loop_lag_p99_s > max_lag_p99_s / 2:
        return (
            f" ({loop}: the client is the bottleneck; spread the load over more workers"
            " (--latency-workers) or run on a quieter machine)"
        )
    return (
        f" ({loop}: the client kept time, so the sends waited for connections: the server"
        " or the network accepted them too slowly)"
    )


def _saturated(client: ClientLoad | None) -> list[str]:
    """The reason a client that used its whole core makes the run invalid, if it did."""
    if client is None or not client.saturated:
        return []
    return [
        f"the client saturated its core (its driving thread was busy {client.busy_share:.0%} "
        f"of the run's wall time, limit {SATURATED_SHARE:.0%}): the load generator, not "
        "the server, may be what these latencies measure"
    ]
