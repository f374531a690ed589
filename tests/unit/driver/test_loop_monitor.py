"""The client reports its own load (CPU of the driving thread, event-loop lag), and a run
whose client saturated its core is invalid with that reason."""

from __future__ import annotations

import dataclasses
import time

import anyio
import anyio.lowlevel
import pytest

from pytest_latency.analysis.health import check_generator
from pytest_latency.driver import Target, pacing, run_plan
from pytest_latency.driver.client_load import SATURATED_SHARE, ClientLoad
from pytest_latency.driver.loop_monitor import LoopMonitor, monitored
from pytest_latency.driver.pacing import sleep_until, spun_ns
from tests.helpers.scripted_server import DONE, Script, ScriptedServer, Step, chat_chunk, plan_at


def watch(block: object) -> ClientLoad:
    async def main() -> ClientLoad | None:
        async with monitored(interval_s=0.005) as monitor:
            await block()  # type: ignore[operator]
        return monitor.load

    load = anyio.run(main)
    assert load is not None
    return load


def test_a_hold_on_the_loop_shows_as_loop_lag() -> None:
    async def hold() -> None:
        await anyio.sleep(0.05)  # let the monitor start waking
        time.sleep(0.08)  # noqa: ASYNC251 (the block under test: the next wake-up is late)
        await anyio.sleep(0.02)

    load = watch(hold)
    assert load.loop_lag_max_s is not None and load.loop_lag_max_s >= 0.07
    assert load.wakeups >= 2


def test_the_driving_threads_cpu_is_counted_and_an_idle_loop_is_not_busy() -> None:
    async def spin() -> None:
        start = time.thread_time()
        while time.thread_time() - start < 0.2:  # CPU, whatever the machine's load
            pass

    async def idle() -> None:
        await anyio.sleep(0.3)

    busy = watch(spin)
    assert busy.cpu_s >= 0.2 and busy.wall_s >= busy.cpu_s * 0.99
    # An idle loop wakes 200 times a second for ~20 us each: far from a core.
    assert watch(idle).cpu_share < 0.5


def load(share: float) -> ClientLoad:
    return ClientLoad(
        wall_s=10.0,
        cpu_s=10.0 * share,
        busiest_window_share=share,
        loop_lag_p99_s=0.001,
        loop_lag_max_s=0.002,
        wakeups=1000,
    )


def test_a_saturated_client_makes_the_run_invalid_with_the_reason() -> None:
    plan = plan_at([0.0])
    records = [request.blank_record() for request in plan.requests]
    for record in records:
        record.sent_s = record.intended_s  # on time: the schedule alone looks healthy
    healthy = check_generator(records, plan.workload, client=load(0.5))
    assert healthy.valid and healthy.client is not None
    saturated = check_generator(records, plan.workload, client=load(SATURATED_SHARE + 0.05))
    assert not saturated.valid
    assert any("saturated its core" in reason for reason in saturated.reasons)
    document = saturated.to_json()
    assert document["client"]["saturated"] is True  # type: ignore[index]
    spinning = dataclasses.replace(load(0.99), spin_s=5.0)  # half of it spun to send times
    assert spinning.busy_share < SATURATED_SHARE
    assert check_generator(records, plan.workload, client=spinning).valid
    assert ClientLoad.worst([None, load(0.2), load(0.7), None]) == load(0.7)
    assert ClientLoad.worst([None]) is None


def test_a_drive_reports_its_client_load(server: ScriptedServer) -> None:
    steps = (*(Step(0.005 * i, chat_chunk(f"t{i}")) for i in range(5)), Step(0.03, DONE))
    server.route("m", Script(steps=steps))
    result = run_plan(plan_at([0.0, 0.05, 0.1]), Target(server.url, "m"))
    assert result.client is not None
    assert result.client.wakeups > 0 and result.client.wall_s > 0.1
    assert result.client.loop_lag_p99_s is not None


def test_stop_before_watch_reports_nothing() -> None:
    assert LoopMonitor().stop() is None


def test_spinning_to_a_planned_instant_is_counted_apart(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(pacing, "SPIN_NS", 2_000_000)  # a stretch any loop's timer leaves

    async def main() -> ClientLoad | None:
        async with monitored() as monitor:
            for _ in range(5):  # each wait ends in the spin to the exact instant
                await sleep_until(time.perf_counter_ns() + 3_000_000)
        return monitor.load

    before = spun_ns()
    load = anyio.run(main)
    assert load is not None and load.spin_s > 0
    assert spun_ns() - before == round(load.spin_s * 1e9)
    assert load.busy_share <= load.cpu_share


def test_yields_that_ran_other_work_are_not_counted_as_spin(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(pacing, "SPIN_NS", 5_000_000)
    done = False

    async def busy_reader() -> None:  # stands for socket reads: 0.2 ms of work per turn
        while not done:
            until = time.perf_counter_ns() + 200_000
            while time.perf_counter_ns() < until:
                pass
            await anyio.lowlevel.checkpoint()

    async def main() -> int:
        nonlocal done
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(busy_reader)
            before = spun_ns()
            await sleep_until(time.perf_counter_ns() + 4_000_000)  # all of it in the spin
            done = True
        return spun_ns() - before

    spun = anyio.run(main)
    assert 0 <= spun < 1_000_000  # 4 ms of yielding, nearly all of it spent on the reader
