"""Open loop: sends follow the plan whatever the server does; runs end bounded, complete.

Lag bounds: the launcher wakes on the event loop's timer (epoll has 1 ms granularity)
and the request task starts on the next loop iteration, so lag is ~0.1-2 ms on an idle
machine. We allow 25 ms for p99/max: far below what any closed-loop or drifting
generator would show here (seconds behind with 2 s responses; 200 x 1 ms of
accumulated drift), yet tolerant of a busy shared CI box.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import anyio
import numpy as np
import pytest

from pytest_latency.driver import Run, Status, Target, run_plan
from tests.helpers.scripted_server import DONE, Script, ScriptedServer, Step, chat_chunk, plan_at

LAG_BOUND_S = 0.025
SLACK_S = 0.5  # event loop + client shutdown, beyond duration + request deadline


def lags(records: list) -> np.ndarray:  # type: ignore[type-arg]
    return np.array([record.schedule_lag_s for record in records])


@pytest.mark.slow
def test_slow_responses_do_not_delay_later_sends(server: ScriptedServer) -> None:
    slow = Script(
        steps=(Step(0.0, chat_chunk(role="assistant")), Step(1.9, chat_chunk("x")), Step(2.0, DONE))
    )
    server.route("slow", slow)
    times = [i * 0.05 for i in range(30)]  # 20 req/s for 1.5 s, each response takes 2 s
    result = run_plan(plan_at(times), Target(server.url, "slow"))
    assert all(record.status is Status.OK for record in result.records)
    lag = lags(result.records)
    assert np.percentile(lag, 99) < LAG_BOUND_S and lag.min() > -0.0005, lag
    # by the last send ~30 requests were in flight: a closed loop would be seconds late
    assert all(abs(record.e2e_s - 2.0) < 0.05 for record in result.records)  # type: ignore[operator]
    assert result.elapsed_s < times[-1] + 2.0 + SLACK_S


@pytest.mark.slow
def test_absolute_schedule_has_no_drift(server: ScriptedServer) -> None:
    quick = Script(steps=(Step(0.002, chat_chunk("x")), Step(0.004, DONE)))
    server.route("quick", quick)
    times = [i / 50 for i in range(200)]  # 50 req/s for 4 s
    result = run_plan(plan_at(times), Target(server.url, "quick"))
    assert len(result.records) == 200
    assert all(record.status is Status.OK for record in result.records)
    lag = lags(result.records)
    assert np.percentile(lag, 99) < LAG_BOUND_S and lag[-1] < LAG_BOUND_S, lag[-10:]
    arrivals = np.array(sorted(exchange.arrival_ns for exchange in server.exchanges)) / 1e9
    # the server saw the intended spacing: 199 gaps of 20 ms, 3.98 s in all
    assert abs((arrivals[-1] - arrivals[0]) - times[-1]) < LAG_BOUND_S
    print(
        f"\nlag p50 {np.median(lag) * 1e3:.2f}ms p99 {np.percentile(lag, 99) * 1e3:.2f}ms "
        f"last {lag[-1] * 1e3:.2f}ms"
    )


@pytest.mark.slow
def test_server_that_stops_answering_ends_bounded_with_all_records(
    server: ScriptedServer,
) -> None:
    normal = Script(steps=(Step(0.01, chat_chunk("x")), Step(0.02, DONE)))
    server.route("dies", lambda index: normal if index < 5 else Script(status=None))
    times = [i * 0.05 for i in range(20)]
    started = time.monotonic()
    result = run_plan(plan_at(times, timeout_s=1.0), Target(server.url, "dies"))
    wall = time.monotonic() - started
    statuses = [record.status for record in result.records]
    assert len(statuses) == 20
    assert statuses[:5] == [Status.OK] * 5 and statuses[5:] == [Status.TIMEOUT] * 15
    bound = times[-1] + 1.0 + SLACK_S
    assert result.elapsed_s < bound and wall < bound + 1.0, (result.elapsed_s, wall)
    for record in result.records[5:]:  # each timed out at its own planned time + 1 s
        assert record.sent_s is not None and record.end_s is None


def test_cancelled_run_still_has_every_record(server: ScriptedServer) -> None:
    slow = Script(steps=(Step(0.01, chat_chunk("x")), Step(2.0, DONE)))
    server.route("slow", slow)
    server.route("fast", Script(steps=(Step(0.005, chat_chunk("x")), Step(0.01, DONE))))
    times = [i * 0.1 for i in range(10)]
    plan = plan_at(times)
    run = Run(plan, Target(server.url, "slow"))

    async def main() -> None:
        with anyio.move_on_after(0.45):
            await run.drive()

    started = time.monotonic()
    anyio.run(main)
    assert time.monotonic() - started < 1.5
    records = run.result().records
    assert [record.id for record in records] == list(range(10))
    assert all(record.status is Status.CANCELLED for record in records)
    sent = [record for record in records if record.sent_s is not None]
    assert 3 <= len(sent) <= 6, [r.sent_s for r in records]
    assert all(r.error == "run cancelled before the request finished" for r in sent)
    assert all(r.first_token_s is not None for r in sent if r.intended_s < 0.3)
    unsent = records[len(sent) :]
    assert all(r.error == "run cancelled before the request was sent" for r in unsent)


INTERRUPTED = """
import json, sys
sys.path.insert(0, {here!r})
from tests.helpers.scripted_server import plan_at
from pytest_latency.driver import RunInterrupted, Target, run_plan
try:
    run_plan(plan_at([i * 0.1 for i in range(30)]), Target({url!r}, "slow"))
except RunInterrupted as exc:
    print(json.dumps([r.status.value for r in exc.result.records]))
"""


def test_ctrl_c_in_run_plan_raises_with_complete_records(server: ScriptedServer) -> None:
    server.route("slow", Script(steps=(Step(0.01, chat_chunk("x")), Step(5.0, DONE))))
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(__file__))))
    code = INTERRUPTED.format(here=root, url=server.url)  # root holds tests/helpers/
    child = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(code)], stdout=subprocess.PIPE, text=True
    )
    try:
        deadline = time.monotonic() + 10
        while len(server.exchanges) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)
        child.send_signal(signal.SIGINT)
        out, _ = child.communicate(timeout=10)
    finally:
        child.kill()
    statuses = json.loads(out)
    assert len(statuses) == 30 and set(statuses) == {"cancelled"}
