"""``scheduling: priority`` as vLLM's --scheduling-policy priority, and per-class shares."""

from __future__ import annotations

import asyncio

import httpx
import numpy as np
import pytest

from pytest_latency.sim import SimConfig, SimServer, simulate
from pytest_latency.sim.engine import Engine, State
from pytest_latency.sim.protocol import RequestError, parse_request
from pytest_latency.sim.virtual import Arrival

SMALL = dict(replicas=1, max_batch=4, decode_base_s=0.01, decode_per_seq_s=0.0)


def spike(seed: int = 1) -> list[Arrival]:
    """40 req/s for 5 s of 20-token answers on ~16 req/s of capacity; 25% premium."""
    rng = np.random.default_rng(seed)
    arrivals, at = [], 0.0
    while at < 5.0:
        at += rng.exponential(1 / 40)
        premium = rng.random() < 0.25
        arrivals.append(Arrival(at, 20, 20, priority=0 if premium else 10))
    return arrivals


def p95_ttft(arrivals: list[Arrival], config: SimConfig, priority: int) -> float:
    results = simulate(config, arrivals)
    ttfts = [r.ttft_s for a, r in zip(arrivals, results, strict=True) if a.priority == priority]
    assert all(t is not None for t in ttfts)
    return float(np.percentile(ttfts, 95))


def test_priority_serves_the_lower_value_first_where_fcfs_does_not() -> None:
    arrivals = spike()
    fcfs, priority = SimConfig(**SMALL), SimConfig(**SMALL, scheduling="priority")
    # FCFS: both classes wait in one queue (seconds); priority: premium barely waits.
    premium_fcfs, premium_first = p95_ttft(arrivals, fcfs, 0), p95_ttft(arrivals, priority, 0)
    assert premium_fcfs > 1.0 and premium_first < premium_fcfs / 5
    # batch pays for it: its wait is at least what it was without priority
    assert p95_ttft(arrivals, priority, 10) >= p95_ttft(arrivals, fcfs, 10)


def test_a_preempted_request_resumes_and_completes_every_token() -> None:
    engine = Engine(SimConfig(**SMALL, scheduling="priority"), start=0.0)
    first = engine.submit(0.0, 10, 5, priority=10)
    step = first.step
    assert step is not None  # the idle replica started with the first request
    batch = [first] + [engine.submit(0.0, 10, 5, priority=10) for _ in range(3)]
    outcome = engine.end_step(step, step.end)  # the other three join at this boundary
    step = outcome.next_step
    assert step is not None and len(step.batch) == 4
    premium = engine.submit(step.start, 10, 3, priority=0)
    assert premium.sequence.state is State.QUEUED  # the replica is mid-step: next boundary
    finished = []
    while step is not None:  # bounded: 4 x 5 + 3 tokens, one replica
        outcome = engine.end_step(step, step.end)
        finished += outcome.finished
        step = outcome.next_step
    assert engine.counters.preempted == 1
    assert premium.sequence.state is State.OK and premium.sequence.generated == 3
    assert all(a.sequence.state is State.OK and a.sequence.generated == 5 for a in batch)
    preempted = next(a.sequence for a in batch if a.sequence.resumed)
    assert finished.index(premium.sequence) < finished.index(preempted)


def test_a_priority_without_priority_scheduling_is_refused_as_vllm_refuses_it() -> None:
    body = {"model": "sim-tiny", "prompt": "a b c", "max_tokens": 2, "priority": 5}
    with pytest.raises(RequestError, match="priority scheduling is not enabled"):
        parse_request(body, "completions", SimConfig(), 1)
    assert parse_request(body, "completions", SimConfig(scheduling="priority"), 1).priority == 5


def test_a_class_over_its_share_gets_429_with_retry_after() -> None:
    config = SimConfig(
        replicas=1, max_batch=5, max_queue=5, decode_base_s=0.01, decode_per_seq_s=0.0,
        class_shares="premium=50,batch=50",
    )  # fmt: skip
    # 5 slots + 5 queue places: each class may hold 5 requests; 5 batch streams start at
    # once (their 200 comes at admission) and hold their slots ~1 s, so the 6th is refused.
    body = {"model": "sim-tiny", "prompt": "a b c", "max_tokens": 100, "stream": True}

    async def six_batch_then_premium(url: str) -> tuple[list[httpx.Response], httpx.Response]:
        async with httpx.AsyncClient(base_url=url, timeout=30) as client:
            batch = {"x-service-class": "batch"}
            requests = [
                client.build_request("POST", "/v1/completions", json=body, headers=batch)
                for _ in range(6)
            ]
            answers = await asyncio.gather(*(client.send(r, stream=True) for r in requests))
            premium = await client.post(  # admitted whatever batch holds: its own share
                "/v1/completions", json={**body, "max_tokens": 1, "stream": False},
                headers={"x-service-class": "premium"},
            )  # fmt: skip
            for answer in answers:
                await answer.aread() if answer.status_code == 429 else await answer.aclose()
            return answers, premium

    with SimServer(config) as sim:
        answers, premium = asyncio.run(six_batch_then_premium(sim.url))
    statuses = sorted(response.status_code for response in answers)
    assert statuses == [200] * 5 + [429]
    (refused,) = [response for response in answers if response.status_code == 429]
    assert refused.headers["retry-after"] == "1"
    assert "class batch is over its share" in refused.json()["error"]["message"]
    assert premium.status_code == 200  # another class's share is its own


def test_malformed_class_shares_fail_at_start() -> None:
    with pytest.raises(ValueError, match="NAME=PERCENT"):
        SimConfig(class_shares="premium:50")
