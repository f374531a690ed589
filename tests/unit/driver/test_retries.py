"""Rejected requests retried as SDKs retry them: Retry-After honoured, one record each."""

from __future__ import annotations

import dataclasses
import random
from email.utils import formatdate

import pytest

from pytest_latency.driver import RequestRecord, Status, Target, run_plan
from pytest_latency.driver.retry import backoff_s, parse_retry_after
from pytest_latency.spec.traffic import Retry
from tests.helpers.retry_server import rejecting
from tests.helpers.scripted_server import Script, ScriptedServer, Step, plan_at


def drive(server: ScriptedServer, times: list[float], retry: Retry | None) -> list[RequestRecord]:
    plan = plan_at(times, timeout_s=5.0)
    plan = dataclasses.replace(plan, workload=dataclasses.replace(plan.workload, retry=retry))
    return sorted(run_plan(plan, Target(server.url, "m")).records, key=lambda r: r.id)


def test_a_rejection_keeps_its_retry_after_without_a_retry_policy(server: ScriptedServer) -> None:
    server.route("m", rejecting(server, 1, (("Retry-After", "7"),)))
    (record,) = drive(server, [0.0], None)
    assert record.status is Status.REJECTED
    assert (record.attempts, record.retry_after_s, record.retry_wait_s) == (1, 7.0, 0.0)


def test_retried_requests_are_one_record_each_timed_from_the_first_planned_send(
    server: ScriptedServer,
) -> None:
    server.route("m", rejecting(server, 3, (("Retry-After", "0.2"),)))
    records = drive(server, [0.0, 0.01, 0.02, 0.03, 0.04, 0.05], Retry(max_retries=2))
    assert [r.status for r in records] == [Status.OK] * 6
    retried = [r for r in records if r.attempts == 2]
    assert len(retried) == 2 and len(server.exchanges) == 8
    for record in retried:
        assert record.retry_after_s == 0.2 and record.retry_wait_s == pytest.approx(0.2)
        assert record.ttft_s is not None and record.ttft_s >= 0.2
        # sent_s stays the first attempt's: the schedule lag is the generator's own
        assert record.sent_s is not None and record.sent_s - record.intended_s < 0.15
    for record in records:
        if record.attempts == 1:
            assert record.retry_after_s is None and record.retry_wait_s == 0.0


def test_a_request_rejected_on_every_attempt_fails_after_max_retries(
    server: ScriptedServer,
) -> None:
    server.route(
        "m", Script(status=429, steps=(Step(0, b"{}"),), headers=(("retry-after-ms", "30"),))
    )
    (record,) = drive(server, [0.0], Retry(max_retries=2))
    assert record.status is Status.REJECTED
    assert record.attempts == 3 and len(server.exchanges) == 3
    assert record.retry_wait_s == pytest.approx(0.06)


def test_a_wait_past_the_timeout_is_not_taken(server: ScriptedServer) -> None:
    server.route("m", rejecting(server, 1, (("Retry-After", "60"),)))
    (record,) = drive(server, [0.0], Retry(max_retries=2))
    assert record.status is Status.REJECTED and record.attempts == 1
    assert "not retried: the wait of 60s passes the timeout" in (record.error or "")


def test_without_retry_after_the_backoff_is_jittered_and_capped() -> None:
    policy = Retry(max_retries=5, backoff_s=0.5, max_backoff_s=1.5)
    rng = random.Random(1)
    waits = [[backoff_s(policy, retry, rng) for retry in (1, 2, 3, 4)] for _ in range(200)]
    for nominal, column in zip((0.5, 1.0, 1.5, 1.5), zip(*waits, strict=True), strict=True):
        assert 0.75 * nominal <= min(column) and max(column) <= nominal
        assert max(column) - min(column) > 0.15 * nominal  # jittered, not fixed


@pytest.mark.parametrize(
    ("seconds", "milliseconds", "expected"),
    [
        ("1", "", 1.0),
        ("0.5", "", 0.5),
        ("1", "250", 0.25),  # retry-after-ms wins, as the OpenAI SDK reads it
        ("", "", None),
        ("soon", "", None),
        ("-3", "", 0.0),
    ],
)
def test_retry_after_values(seconds: str, milliseconds: str, expected: float | None) -> None:
    assert parse_retry_after(seconds, milliseconds) == expected


def test_retry_after_as_an_http_date() -> None:
    now = 1_760_000_000.0
    assert parse_retry_after(formatdate(now + 30, usegmt=True), now=now) == pytest.approx(30)
