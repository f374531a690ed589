"""Each way a request can end maps to exactly one status, with a safe error text."""

from __future__ import annotations

import socket
import time

import anyio
import pytest

from pytest_latency.driver import RequestRecord, Status, Target, make_client, run_plan
from pytest_latency.driver.httpx_transport import HttpxTransport
from pytest_latency.driver.request import Sender
from pytest_latency.driver.tracecontext import ClientSpans
from tests.helpers.run_queue import RunQueueWait
from tests.helpers.scripted_server import (
    DONE,
    PROMPT,
    Script,
    ScriptedServer,
    Step,
    plan_at,
)
from tests.helpers.status_cases import CASES, FIRST


@pytest.fixture
def routed(server: ScriptedServer) -> ScriptedServer:
    for name, (script, _, _) in CASES.items():
        server.route(name, script)
    return server


def one(server_url: str, model: str, timeout_s: float = 0.4) -> RequestRecord:
    (record,) = run_plan(plan_at([0.0], timeout_s=timeout_s), Target(server_url, model)).records
    return record


@pytest.mark.parametrize("case", list(CASES))
def test_status_classes(routed: ScriptedServer, case: str) -> None:
    _, status, error = CASES[case]
    record = one(routed.url, case)
    assert record.status is status, record.error
    assert (record.error or "").startswith(error), record.error
    assert PROMPT not in (record.error or "") and len(record.error or "") <= 220
    assert record.sent_s is not None and len(record.trace_id) == 32
    if record.end_s is not None:
        assert record.sent_s <= record.end_s < 0.4
    if status is Status.TIMEOUT:
        assert record.end_s is None
    streamed_first = {"cut", "error-event", "garbage-json", "no-done", "finish-abort"}
    if "first" in error or case in streamed_first:
        assert record.first_token_s is not None  # failed requests keep their timings
    if status is Status.OK:
        assert record.end_s is not None
        assert record.output_tokens == 1 and record.first_token_s is not None
    if case in {"done-no-content", "only-done", "stop-no-content"}:
        assert record.first_token_s is None and record.end_s is not None


def test_done_then_stalled_body_stays_ok(server: ScriptedServer) -> None:
    # [DONE] arrived: the response is complete even if the body never terminates
    server.route("done-hang", Script(steps=(FIRST, Step(0.03, DONE, "done")), end="hang"))
    with RunQueueWait(server.thread_id) as preempted:  # the machine's delay, not ours
        record = one(server.url, "done-hang")
    assert record.status is Status.OK and record.end_s is not None
    assert record.e2e_s == pytest.approx(0.03, abs=0.02 + preempted.seconds)


def test_refused_port_is_a_connection_error() -> None:
    with socket.socket() as probe:  # a port that was free a moment ago, now closed
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    started = time.monotonic()
    record = one(f"http://127.0.0.1:{port}", "m", timeout_s=5.0)
    assert record.status is Status.CONNECTION_ERROR
    assert (record.error or "").startswith("ConnectError")
    assert record.sent_s is not None and record.first_token_s is None
    assert time.monotonic() - started < 2.0


def test_deadline_counts_from_the_planned_send_time(server: ScriptedServer) -> None:
    # a request handed over 0.3 s late has only 0.1 s of its 0.4 s deadline left
    server.route("no-answer", Script(status=None))
    plan = plan_at([0.0], timeout_s=0.4)
    record = RequestRecord(id=0, phase="steady", intended_s=0.0, input_tokens=1)

    async def main() -> float:
        async with make_client() as client:
            sender = Sender(
                HttpxTransport(client, Target(server.url, "no-answer").url, owns_client=False),
                {},
                "no-answer",
                True,
                {},
                0.4,
                ClientSpans(),
                t0_ns=time.perf_counter_ns() - 300_000_000,
            )
            started = time.perf_counter()
            await sender.send(plan.requests[0], record, sender.t0_ns)
            return time.perf_counter() - started

    with RunQueueWait() as preempted:  # the machine's delay, not ours
        took = anyio.run(main)
    assert record.status is Status.TIMEOUT
    assert 0.08 < took < 0.2 + preempted.seconds, (took, preempted.seconds)
    assert record.schedule_lag_s is not None and record.schedule_lag_s >= 0.3
