"""Merging the Ray actors' records, without Ray: one record per planned request; a lost
actor's missing requests are cancelled naming it and its node, and counted as lost."""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_latency.driver import Status
from pytest_latency.driver.ray_workers import _Actor, _merge
from pytest_latency.driver.worker_clocks import ClockOffset
from pytest_latency.driver.workers import partition
from pytest_latency.records import RequestRecord
from tests.helpers.scripted_server import plan_at


def _ended(request_id: int) -> RequestRecord:
    record = RequestRecord(id=request_id, phase="steady", intended_s=0.0, input_tokens=1)
    record.status, record.sent_s = Status.OK, 0.001
    return record


def _pool() -> tuple[object, list[_Actor]]:
    plan = plan_at([0.01 * i for i in range(6)])
    first, second = partition(plan, 2)  # ids 0, 2, 4 and 1, 3, 5
    pool = [
        _Actor(0, first, handle=None, node="node-a", offset=ClockOffset(2_000, 300)),
        _Actor(1, second, handle=None, node="node-b", offset=ClockOffset(-1_000, 400)),
    ]
    pool[0].keep([_ended(0), _ended(2), _ended(4)])
    pool[0].finished = True
    pool[1].keep([_ended(1)])  # collected before it was lost
    return plan, pool


def test_a_lost_actors_missing_requests_are_cancelled_naming_it_and_its_node() -> None:
    plan, pool = _pool()
    pool[1].lose("was lost: ActorDiedError: gone")
    result = _merge(plan, pool, t0=1)  # type: ignore[arg-type]
    assert [record.id for record in result.records] == list(range(6))
    assert [record.status for record in result.records] == [Status.OK] * 2 + [
        Status.OK,
        Status.CANCELLED,
        Status.OK,
        Status.CANCELLED,
    ]
    assert result.records[3].error == (
        "Ray actor pytest-latency-worker-1 on node node-b was lost: ActorDiedError: gone;"
        " the request's outcome is unknown"
    )
    assert [worker.to_json() for worker in result.workers] == [
        {"worker": "pytest-latency-worker-0", "node": "node-a", "clock_offset_s": 2e-6,
         "clock_uncertainty_s": 3e-7, "requests": 3, "lost": 0},
        {"worker": "pytest-latency-worker-1", "node": "node-b", "clock_offset_s": -1e-6,
         "clock_uncertainty_s": 4e-7, "requests": 3, "lost": 2},
    ]  # fmt: skip


def test_an_interrupted_run_cancels_what_did_not_come_back_without_calling_it_lost() -> None:
    plan, pool = _pool()
    result = _merge(plan, pool, t0=1, interrupted=True)  # type: ignore[arg-type]
    assert result.records[3].status is Status.CANCELLED
    assert result.records[3].error == "run interrupted; the request's outcome is unknown"
    assert [worker.lost for worker in result.workers] == [0, 0]


@pytest.mark.slow
def test_the_ray_driver_modules_import_ray_only_when_a_run_asks() -> None:
    code = (
        "import sys, pytest_latency.driver.ray_workers, pytest_latency.driver.ray_actor\n"
        "assert 'ray' not in sys.modules, 'ray was imported'"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
