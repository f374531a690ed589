"""The Ray generator worker's own logic, without Ray: the actor class is a plain class,
driven here on asyncio as Ray would, against the scripted server and a reference clock
whose offset to this process is known by construction."""

from __future__ import annotations

import asyncio
import sys
import time
from collections.abc import Iterator

import pytest

from pytest_latency.driver import Status, Target
from pytest_latency.driver.ray_actor import GeneratorWorker
from tests.helpers.scripted_server import DONE, Script, ScriptedServer, Step, chat_chunk, plan_at

OFFSET_NS = 3_000_000_000  # the reference clock runs 3 s ahead of this process
SCRIPT = Script(steps=(Step(0.005, chat_chunk("a"), "content"), Step(0.01, DONE)))


class _Call:
    def __init__(self, answer: int) -> None:
        self.answer = answer

    def __await__(self) -> Iterator[None]:
        yield from asyncio.sleep(0.0001).__await__()  # a round trip through the loop
        return self.answer  # type: ignore[misc]


class _NowNs:
    def remote(self) -> _Call:
        return _Call(time.perf_counter_ns() + OFFSET_NS)


class FakeReference:
    """Quacks like a ReferenceClock actor handle: ``await ref.now_ns.remote()``."""

    now_ns = _NowNs()


@pytest.fixture(autouse=True)
def _switch_interval() -> Iterator[None]:
    before = sys.getswitchinterval()
    yield
    sys.setswitchinterval(before)  # the worker sets its (own) process's


def test_the_worker_starts_at_the_reference_instant_on_its_own_clock(
    server: ScriptedServer,
) -> None:
    server.route("w", SCRIPT)
    plan = plan_at([0.01 * i for i in range(10)])
    worker = GeneratorWorker("pytest-latency-worker-0", plan, Target(server.url, "w"))

    async def scenario() -> tuple[int, int, list[int], object]:
        offset = await worker.measure_clock(FakeReference(), pings=20)
        assert abs(offset.offset_ns - OFFSET_NS) <= offset.uncertainty_ns
        driving = asyncio.ensure_future(worker.drive())
        await worker.wait_ready()
        t0_reference = time.perf_counter_ns() + OFFSET_NS + 50_000_000
        t0_local = await worker.start(t0_reference)
        collected: list[int] = []
        while not driving.done():  # the driver's periodic collection
            collected += [record.id for record in await worker.collect()]
            await asyncio.sleep(0.02)
        collected += [record.id for record in await worker.collect()]
        return t0_reference, t0_local, collected, driving.result()

    t0_reference, t0_local, collected, result = asyncio.run(scenario())
    assert abs(t0_local - (t0_reference - OFFSET_NS)) < 5_000_000  # within the uncertainty
    assert result.started_ns == t0_local  # type: ignore[attr-defined]
    assert sorted(collected) == list(range(10))  # each ended request shipped once
    for record in result.records:  # type: ignore[attr-defined]
        assert record.status is Status.OK, record.error
        assert 0 <= record.schedule_lag_s < 0.05


def test_stopping_a_worker_returns_every_record_with_the_unsent_cancelled(
    server: ScriptedServer,
) -> None:
    server.route("w", SCRIPT)
    plan = plan_at([0.0, 30.0])  # the second request is far in the future
    worker = GeneratorWorker("pytest-latency-worker-1", plan, Target(server.url, "w"))

    async def scenario() -> list[object]:
        await worker.measure_clock(FakeReference(), pings=3)
        driving = asyncio.ensure_future(worker.drive())
        await worker.wait_ready()
        await worker.start(time.perf_counter_ns() + OFFSET_NS)
        for _ in range(1000):  # polls what the driver would collect, bounded (~10 s)
            if await worker.collect():  # the first request ended
                break
            await asyncio.sleep(0.01)
        records = await worker.stop()
        await asyncio.wait_for(driving, timeout=10)
        return list(records)

    first, second = asyncio.run(scenario())
    assert first.status is Status.OK  # type: ignore[attr-defined]
    assert second.status is Status.CANCELLED  # type: ignore[attr-defined]
    assert second.error == "run cancelled before the request was sent"  # type: ignore[attr-defined]
