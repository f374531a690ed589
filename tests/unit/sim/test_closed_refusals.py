"""The closed-loop twin ends when every user is refused at once and thinks for nothing."""

from __future__ import annotations

from pytest_latency.sim.closed import RETRY_ROUND_TRIP_S, simulate_closed
from pytest_latency.sim.config import SimConfig


def test_users_refused_during_the_cold_start_resend_after_a_round_trip() -> None:
    # Before 50 ms every request is refused at the instant it arrives (503); with no
    # think time a user would resend at that same instant forever.
    config = SimConfig(replicas=1, max_batch=4, cold_start_s=0.05)
    results = simulate_closed(config, users=2, duration_s=0.5, shapes=[(16, 4)], think_s=0.0)
    refused = [r for r in results if r.outcome == "unavailable"]
    served = [r for r in results if r.outcome == "ok"]
    assert served, "the users got through once the server was ready"
    # Until the server is ready each user is refused once or twice per round trip: the
    # guard pauses only once more releases than users fall on one instant.
    round_trips = 0.05 / RETRY_ROUND_TRIP_S
    assert 2 * 0.8 * round_trips <= len(refused) <= 2 * 2 * (round_trips + 2)
    assert min(r.arrival.at_s for r in served) >= 0.05


def test_a_normal_closed_loop_is_unchanged_by_the_guard() -> None:
    config = SimConfig(replicas=1, max_batch=8)
    results = simulate_closed(config, users=4, duration_s=2.0, shapes=[(16, 8)], think_s=0.0)
    assert all(r.outcome == "ok" for r in results)
    # Four users sending back to back: never more than four requests at one instant.
    sends = [r.arrival.at_s for r in results]
    assert max(sends.count(at) for at in set(sends)) <= 4
