"""The scheduling model in virtual time: exact timelines, admission rules, calibration."""

from __future__ import annotations

import itertools
import random
import statistics

import numpy as np
import pytest

from pytest_latency.sim import Arrival, SimConfig, SimResult, State, simulate
from pytest_latency.sim.engine import Engine

SLOW = SimConfig(
    replicas=1,
    max_batch=1,
    decode_base_s=0.010,
    decode_per_seq_s=0.001,
    prefill_base_s=0.002,
    prefill_per_token_s=0.0001,
)


def test_single_request_follows_the_step_formula() -> None:
    (result,) = simulate(SLOW, [Arrival(at_s=1.0, prompt_tokens=100, output_tokens=4)])
    prefill_step = 0.010 + 0.001 + 0.002 + 0.0001 * 100
    decode_step = 0.010 + 0.001
    assert result.outcome is State.OK
    assert result.queue_wait_s == 0.0
    assert result.ttft_s == pytest.approx(prefill_step)
    assert result.itl_s == pytest.approx([decode_step] * 3)
    assert result.e2e_s == pytest.approx(prefill_step + 3 * decode_step)


def test_batch_cost_counts_every_running_sequence() -> None:
    config = SimConfig(replicas=1, max_batch=4, decode_base_s=0.01, decode_per_seq_s=0.002,
                       prefill_base_s=0.0, prefill_per_token_s=0.0)  # fmt: skip
    results = simulate(config, [Arrival(0.0, 10, 3), Arrival(0.0, 10, 3)])
    # The first arrival starts a step alone; the second joins at the step boundary.
    assert results[0].ttft_s == pytest.approx(0.012)
    assert results[1].queue_wait_s == pytest.approx(0.012)
    # Two sequences per step while both run; alone again once the first finishes.
    assert results[0].itl_s == pytest.approx([0.014, 0.014])
    assert results[1].itl_s == pytest.approx([0.014, 0.012])


def test_full_replica_makes_requests_wait_in_fifo_order() -> None:
    arrivals = [Arrival(0.001 * i, 10, 3) for i in range(3)]
    results = simulate(SLOW, arrivals)
    ends = [r.arrival.at_s + r.e2e_s for r in results if r.e2e_s is not None]
    assert len(ends) == 3 and ends == sorted(ends)
    for earlier, later in itertools.pairwise(results):
        assert earlier.e2e_s is not None and later.queue_wait_s is not None
        # A slot frees when the earlier request's last token is out.
        assert later.arrival.at_s + later.queue_wait_s == pytest.approx(
            earlier.arrival.at_s + earlier.e2e_s
        )


def test_idle_replicas_share_one_queue() -> None:
    config = SimConfig(replicas=2, max_batch=1, decode_base_s=0.01)
    results = simulate(config, [Arrival(0.0, 10, 5), Arrival(0.0, 10, 5), Arrival(0.0, 10, 5)])
    assert [r.replica for r in results[:2]] == [0, 1]
    assert results[0].queue_wait_s == results[1].queue_wait_s == 0.0
    assert results[2].queue_wait_s is not None and results[2].queue_wait_s > 0.0


def test_full_queue_rejects_and_deadline_expires_before_any_replica() -> None:
    config = SimConfig(replicas=1, max_batch=1, max_queue=1, queue_timeout_s=0.05,
                       decode_base_s=0.01)  # fmt: skip
    results = simulate(config, [Arrival(0.0, 10, 20), Arrival(0.0, 10, 20), Arrival(0.0, 10, 20)])
    assert [r.outcome for r in results] == [State.OK, State.EXPIRED, State.REJECTED]
    expired = results[1]
    assert expired.replica is None and expired.ttft_s is None and expired.token_times_s == ()


def test_requests_before_the_cold_start_are_unavailable() -> None:
    config = SimConfig(cold_start_s=2.0, decode_base_s=0.01)
    early, late = simulate(config, [Arrival(1.9, 10, 2), Arrival(2.0, 10, 2)])
    assert early.outcome is State.UNAVAILABLE
    assert late.outcome is State.OK


def test_cancel_frees_the_slot_for_the_next_request() -> None:
    engine = Engine(SLOW, start=0.0)
    first = engine.submit(0.0, 10, 100)
    second = engine.submit(0.0, 10, 100)
    assert first.step is not None and second.sequence.state is State.QUEUED
    assert engine.cancel(first.sequence, 0.005)
    outcome = engine.end_step(first.step, first.step.end)
    assert outcome.emitted == []  # the cancelled sequence's work is discarded
    assert outcome.next_step is not None
    assert outcome.next_step.batch == (second.sequence,)
    assert engine.counters.cancelled == 1 and engine.running == 1 and engine.waiting == 0


def test_counters_record_every_outcome() -> None:
    config = SimConfig(replicas=1, max_batch=1, max_queue=1, queue_timeout_s=0.05,
                       decode_base_s=0.01, cold_start_s=1.0)  # fmt: skip
    engine = Engine(config, start=0.0)
    assert engine.submit(0.5, 10, 2).sequence.state is State.UNAVAILABLE
    running = engine.submit(1.0, 10, 2)
    queued = engine.submit(1.0, 10, 2)
    assert engine.submit(1.0, 10, 2).sequence.state is State.REJECTED
    assert engine.expire_due(1.2) == [queued.sequence]
    assert running.step is not None
    step = engine.end_step(running.step, running.step.end).next_step
    assert step is not None and engine.end_step(step, step.end).next_step is None
    counters = engine.counters
    assert counters.arrived == 4
    assert (counters.unavailable, counters.rejected, counters.expired) == (1, 1, 1)
    assert (counters.scheduled, counters.completed, counters.generation_tokens) == (1, 1, 2)
    assert [t.outcome for t in engine.recent] == ["unavailable", "rejected", "expired", "ok"]


def test_simulation_is_deterministic() -> None:
    arrivals = _example_workload(seed=3)
    assert simulate(SimConfig(), arrivals) == simulate(SimConfig(), arrivals)


def _example_workload(seed: int) -> list[Arrival]:
    """The seed lesson's example: Poisson 5 req/s for 20 s, then 25 req/s for 5 s."""
    rng = random.Random(seed)
    arrivals: list[Arrival] = []
    for rate, start, end in ((5.0, 0.0, 20.0), (25.0, 20.0, 25.0)):
        at = start + rng.expovariate(rate)
        while at < end:
            arrivals.append(Arrival(at, rng.randint(200, 400), 200))
            at += rng.expovariate(rate)
    return arrivals


def _phase(results: list[SimResult], start: float, end: float) -> tuple[float, float]:
    """(p95 queue wait, median ITL) of requests that arrived in [start, end)."""
    cohort = [r for r in results if start <= r.arrival.at_s < end]
    assert cohort and all(r.outcome is State.OK for r in cohort)
    waits = [r.queue_wait_s for r in cohort if r.queue_wait_s is not None]
    itl = [gap for r in cohort for gap in r.itl_s]
    return float(np.percentile(waits, 95)), statistics.median(itl)


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_default_calibration_reproduces_the_seed_spike(seed: int) -> None:
    """Steady: short waits, ~30 ms ITL. Burst: waits of seconds, cadence barely moves."""
    results = simulate(SimConfig(), _example_workload(seed))
    steady_wait, steady_itl = _phase(results, 0.0, 20.0)
    burst_wait, burst_itl = _phase(results, 20.0, 25.0)
    assert steady_wait <= 0.3
    assert burst_wait >= 1.0
    assert 0.025 <= steady_itl <= 0.035
    assert abs(burst_itl - steady_itl) <= 0.10 * steady_itl
