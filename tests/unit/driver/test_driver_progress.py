"""Progress reports come from a poller thread, count what the driver did, and cost no timing."""

from __future__ import annotations

import threading
import time

import numpy as np
import pytest

from pytest_latency.driver import Status, Target, run_plan
from pytest_latency.driver.progress import Progress, ScheduleProgress, reporting
from tests.helpers.scripted_server import DONE, Script, ScriptedServer, Step, chat_chunk, plan_at

LAG_BOUND_S = 0.025  # the open-loop tests' bound (see test_driver_open_loop.py)


class Listener:
    """Collects reports; ``interval_s`` is the poller's floor (1 s)."""

    interval_s = 1.0

    def __init__(self) -> None:
        self.reports: list[Progress] = []
        self.final = threading.Event()

    def __call__(self, progress: Progress) -> None:
        self.reports.append(progress)
        if progress.final:
            self.final.set()


@pytest.mark.slow
@pytest.mark.serial
def test_reports_count_sent_and_completed_without_moving_the_schedule(
    server: ScriptedServer,
) -> None:
    # 20 req/s for 2.5 s, each answer takes 0.5 s: ~10 requests in flight at any poll.
    server.route("slow", Script(steps=(Step(0.01, chat_chunk("x")), Step(0.5, DONE))))
    times = [i * 0.05 for i in range(50)]
    listener = Listener()
    result = run_plan(plan_at(times), Target(server.url, "slow"), progress=listener)
    assert all(record.status is Status.OK for record in result.records)
    lag = np.array([record.schedule_lag_s for record in result.records])
    assert np.percentile(lag, 99) < LAG_BOUND_S, lag
    *during, last = listener.reports
    assert last.final and last.sent == last.completed == last.planned == 50
    assert len(during) >= 2  # polls at ~1 s and ~2 s of a ~3 s run
    for report in during:
        assert not report.final and report.planned == 50 and report.completed is not None
        due = sum(1 for t in times if t <= report.elapsed_s)
        assert due - 3 <= report.sent <= due + 1, (report, due)  # read a moment apart
        assert report.in_flight is not None and 0 <= report.in_flight <= report.sent
        if 0.6 < report.elapsed_s < 2.4:  # 0.5 s answers at 20/s: ~10 open mid-run
            assert report.in_flight >= 5, report
    assert [r.sent for r in during] == sorted(r.sent for r in during)


@pytest.mark.slow
def test_a_failing_listener_is_dropped_and_the_run_goes_on(server: ScriptedServer) -> None:
    server.route("quick", Script(steps=(Step(0.002, chat_chunk("x")), Step(0.004, DONE))))
    calls: list[Progress] = []

    class Broken:
        interval_s = 1.0

        def __call__(self, progress: Progress) -> None:
            calls.append(progress)
            raise OSError("terminal gone")

    times = [i * 0.1 for i in range(25)]  # 2.5 s: two polls
    result = run_plan(plan_at(times), Target(server.url, "quick"), progress=Broken())
    assert len(calls) == 1  # dropped after its first failure, final report included
    assert all(record.status is Status.OK for record in result.records)


def test_no_final_report_before_time_zero() -> None:
    listener = Listener()
    with reporting(lambda: None, listener):
        pass
    assert listener.reports == []


def test_schedule_progress_counts_what_is_due_and_leaves_completions_unknown() -> None:
    schedule = ScheduleProgress([2.0, 0.0, 1.0, 3.0], duration_s=4.0)
    assert schedule() is None  # no time zero yet
    schedule.t0_ns = time.perf_counter_ns() - 1_500_000_000
    progress = schedule()
    assert progress is not None
    assert (progress.planned, progress.sent, progress.completed) == (4, 2, None)
    assert progress.in_flight is None and 2.4 < progress.time_left_s <= 2.5
