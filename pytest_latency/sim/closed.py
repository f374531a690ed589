"""Closed-loop load in virtual time: ``users`` users, each sending its next request when
the previous one ended (plus a think time), against the reference server's engine.

The twin of :func:`pytest_latency.sim.virtual.simulate` for ``arrival: concurrent``
phases, and played by it: a user's next request is the arrival its previous request's
release adds. Its throughput is what a closed-loop phase against the live embedded
server should measure, less the client's own round trip (loopback: well under a
millisecond).
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence

from pytest_latency.sim.config import SimConfig
from pytest_latency.sim.virtual import Arrival, SimResult, simulate

# A loopback client's round trip before it resends a request refused at once.
RETRY_ROUND_TRIP_S = 1e-3


def simulate_closed(
    config: SimConfig,
    users: int,
    duration_s: float,
    shapes: Sequence[tuple[int, int]],
    think_s: float = 0.0,
) -> list[SimResult]:
    """Every request the users sent in ``[0, duration_s)``, in send order; ``shapes``
    (prompt, output tokens) are used in turn. A user whose request ends (or is refused,
    or expires) is free ``think_s`` later; requests in flight at the end run to theirs."""
    if users < 1 or duration_s <= 0 or not shapes:
        raise ValueError("simulate_closed needs users >= 1, duration_s > 0 and shapes")
    shape = itertools.cycle(shapes)

    def request_at(at: float) -> Arrival:
        prompt, output = next(shape)
        return Arrival(at, prompt, output)

    # Users are interchangeable: whichever request ends frees "a" user. Shapes go out in
    # send order, as virtual time only moves forward and every user thinks equally long.
    releases_at_instant = {"at": -1.0, "count": 0}

    def next_request(released_at: float) -> Arrival | None:
        if released_at == releases_at_instant["at"]:
            releases_at_instant["count"] += 1
        else:
            releases_at_instant.update(at=released_at, count=1)
        # More releases at one instant than users: every user was refused at once and,
        # with no think time, would resend at that same instant forever. A live client
        # pays a round trip first; so does the simulated one.
        pause_s = RETRY_ROUND_TRIP_S if releases_at_instant["count"] > users else 0.0
        at = released_at + max(think_s, pause_s)
        return request_at(at) if at < duration_s else None

    return simulate(config, [request_at(0.0) for _ in range(users)], on_release=next_request)
