"""workers=N: the plan split across processes, one time zero, every request one record.

The scripted server runs in this process and logs its writes on ``perf_counter_ns``;
the workers are other processes. Comparing their first-token instants with the
server's proves the time zero is shared (CLOCK_MONOTONIC is system-wide): the same 5 ms
bound as the single-process timing tests, against the same truth.
"""

from __future__ import annotations

import multiprocessing
import threading
import time

import pytest

from pytest_latency.driver import Status, Target, run_plan
from pytest_latency.driver.workers import partition
from tests.helpers.scripted_server import DONE, Script, ScriptedServer, Step, chat_chunk, plan_at

TRUTH_TOLERANCE_S = 0.005
SCRIPT = Script(steps=(Step(0.02, chat_chunk("a"), "content"), Step(0.03, DONE)))


def test_partition_is_exact_and_even() -> None:
    plan = plan_at([0.01 * i for i in range(11)])
    parts = partition(plan, 3)
    ids = sorted(request.id for part in parts for request in part.requests)
    assert ids == list(range(11))
    assert [len(part.requests) for part in parts] == [4, 4, 3]
    assert len(partition(plan_at([0.0]), 4)) == 1  # no empty workers


@pytest.mark.slow
def test_two_workers_share_time_zero_and_merge_in_id_order(server: ScriptedServer) -> None:
    server.route("w", SCRIPT)
    plan = plan_at([0.02 * i for i in range(20)])
    result = run_plan(plan, Target(server.url, "w"), workers=2)
    assert [record.id for record in result.records] == list(range(20))
    exchanges = server.by_trace()
    assert len(exchanges) == 20  # one traceparent per request, all distinct
    for record in result.records:
        assert record.status is Status.OK, record.error
        (written_ns,) = exchanges[record.trace_id].instants("content")
        truth_s = (written_ns - result.started_ns) / 1e9
        assert record.first_token_s is not None
        assert 0 <= record.first_token_s - truth_s < TRUTH_TOLERANCE_S
        assert record.schedule_lag_s is not None and -0.0005 < record.schedule_lag_s < 0.05


@pytest.mark.slow
def test_a_dead_worker_leaves_cancelled_records(server: ScriptedServer) -> None:
    server.route("w", SCRIPT)
    plan = plan_at([0.05 * i for i in range(40)])  # 2 s of traffic
    killed: list[int] = []

    def kill_one() -> None:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and len(server.exchanges) < 4:
            time.sleep(0.01)  # bounded: wait until traffic flows (after time zero)
        children = multiprocessing.active_children()
        if children:
            killed.append(children[0].pid or 0)
            children[0].kill()

    killer = threading.Thread(target=kill_one, daemon=True)
    killer.start()
    result = run_plan(plan, Target(server.url, "w"), workers=2)
    killer.join(timeout=5)
    assert killed, "no worker to kill"
    assert [record.id for record in result.records] == list(range(40))
    statuses = {record.status for record in result.records}
    assert statuses == {Status.OK, Status.CANCELLED}
    lost = [record for record in result.records if record.status is Status.CANCELLED]
    assert len(lost) == 20  # the dead worker's whole share
    assert all("died" in (record.error or "") for record in lost)
