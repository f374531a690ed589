"""Closed-loop phases on loopback: users send when free, never more than ``users`` in
flight, and a saturated embedded server gives the throughput its virtual-time twin does."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_latency.analysis.throughput import phase_throughput
from pytest_latency.driver import Target, run_plan
from pytest_latency.records import RequestRecord, Status
from pytest_latency.sim import SimConfig, SimServer
from pytest_latency.sim.closed import simulate_closed
from pytest_latency.sim.virtual import Arrival, simulate
from pytest_latency.spec.model import Workload, concurrent
from pytest_latency.workload import build_plan

# One replica with two slots and 10 ms steps: four users keep two requests queued, so the
# server is saturated and its throughput is the engine's, whatever the client adds.
SATURATED = SimConfig(
    replicas=1,
    max_batch=2,
    decode_base_s=0.01,
    decode_per_seq_s=0.0,
    prefill_base_s=0.0,
    prefill_per_token_s=0.0,
)
USERS, DURATION_S, OUTPUT_TOKENS = 4, 3.0, 16


def most_in_flight(records: list[RequestRecord]) -> int:
    """The most requests between their send and their end at any instant."""
    events = sorted(
        [(r.sent_s, 1) for r in records if r.sent_s is not None]
        + [(r.end_s, -1) for r in records if r.end_s is not None]
    )  # an end sorts before a send at the same instant
    return int(np.max(np.cumsum([step for _, step in events])))


@pytest.mark.slow
def test_a_saturating_closed_loop_matches_its_virtual_time_twin() -> None:
    workload = Workload(
        phases=(concurrent(USERS, DURATION_S),), input_tokens=(20, 40), output_tokens=16
    )
    plan = build_plan(workload)
    with SimServer(SATURATED) as sim:
        records = run_plan(plan, Target(sim.url, "sim-tiny")).records
    assert records and all(r.status is Status.OK for r in records)
    assert most_in_flight(records) <= USERS
    sends = sorted(r.intended_s for r in records)
    assert sends[:USERS] == [0.0] * USERS  # every user starts at the phase start
    assert max(r.sent_s or 0.0 for r in records) < DURATION_S  # nothing sent after it
    for record in records:  # a user's next request is planned when it is free
        assert record.sent_s is not None and record.sent_s >= record.intended_s
    measured = phase_throughput(records, [(0.0, DURATION_S)])

    shapes = [(r.input_tokens, OUTPUT_TOKENS) for r in plan.requests]
    simulated = simulate_closed(SATURATED, USERS, DURATION_S, shapes)
    ends = [r.arrival.at_s + (r.e2e_s or 0.0) for r in simulated]
    expected_rps = len(simulated) / max(DURATION_S, *ends)
    assert measured.requests_per_s == pytest.approx(expected_rps, rel=0.10)
    # The same sends replayed open loop through simulate(): the engine serves them at
    # the rate the live server did.
    replayed = simulate(
        SATURATED,
        [Arrival(r.sent_s or 0.0, r.input_tokens, OUTPUT_TOKENS) for r in records],
    )
    replayed_ends = [r.arrival.at_s + (r.e2e_s or 0.0) for r in replayed]
    replayed_rps = len(replayed) / max(DURATION_S, *replayed_ends)
    print(
        f"\nclosed loop: {measured.requests_per_s:.2f} req/s measured,"
        f" {expected_rps:.2f} simulate_closed(), {replayed_rps:.2f} simulate() of its sends"
    )
    assert measured.requests_per_s == pytest.approx(replayed_rps, rel=0.10)
