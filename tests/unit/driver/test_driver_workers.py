"""workers=N: the plan split across processes, one time zero, every request one record.

The scripted server runs in this process and logs its writes on ``perf_counter_ns``;
the workers are other processes. Comparing their first-token instants with the
server's proves the time zero is shared (CLOCK_MONOTONIC is system-wide): the same 5 ms
bound as the single-process timing tests, against the same truth, on each worker's
*median* error. A time zero that is not shared shifts every record of a worker by the
same amount, which the median shows; a busy machine delays single reads of processes
this test cannot observe (their preemption is not in this process), which it ignores.
"""

from __future__ import annotations

import multiprocessing
import threading
import time

import numpy as np
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
    errors: dict[int, list[float]] = {0: [], 1: []}  # per worker: ids are dealt round robin
    lags: dict[int, list[float]] = {0: [], 1: []}
    for record in result.records:
        assert record.status is Status.OK, record.error
        (written_ns,) = exchanges[record.trace_id].instants("content")
        truth_s = (written_ns - result.started_ns) / 1e9
        assert record.first_token_s is not None and record.schedule_lag_s is not None
        errors[record.id % 2].append(record.first_token_s - truth_s)
        lags[record.id % 2].append(record.schedule_lag_s)
    for worker in (0, 1):
        assert min(errors[worker]) >= -0.0005, errors  # never before the write
        assert np.median(errors[worker]) < TRUTH_TOLERANCE_S, errors
        assert min(lags[worker]) > -0.0005 and np.median(lags[worker]) < 0.05, lags


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


@pytest.mark.slow
def test_ctrl_c_while_the_workers_are_joined_keeps_their_records(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The last window of a run: every worker sent its records, Ctrl-C lands as they
    are joined. That used to escape as a bare KeyboardInterrupt, losing the run."""
    from pytest_latency.driver import RunInterrupted, workers

    server.route("w", SCRIPT)
    stop = workers._stop

    def interrupted_stop(pool: list[workers._Worker]) -> None:
        stop(pool)
        raise KeyboardInterrupt  # what a Ctrl-C during the joins raises

    monkeypatch.setattr(workers, "_stop", interrupted_stop)
    with pytest.raises(RunInterrupted) as interrupted:
        run_plan(plan_at([0.02 * i for i in range(10)]), Target(server.url, "w"), workers=2)
    records = interrupted.value.result.records
    assert [record.id for record in records] == list(range(10))
    assert {record.status for record in records} == {Status.OK}
