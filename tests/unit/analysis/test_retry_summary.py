"""The summary shows how many retries were made and how long they waited; the error rate
counts a request as failed only after all its attempts."""

from __future__ import annotations

from pytest_latency.analysis.retries import retry_line, retry_summary
from pytest_latency.analysis.verdict import decide
from pytest_latency.records import RequestRecord, Status
from pytest_latency.spec.model import objective


def record(identifier: int, attempts: int, status: Status, waited: float = 0.0) -> RequestRecord:
    return RequestRecord(
        identifier, "steady", 0.0, 10, sent_s=0.0, end_s=1.0, status=status,
        attempts=attempts, retry_wait_s=waited,
    )  # fmt: skip


RECORDS = [
    record(0, 1, Status.OK),
    record(1, 2, Status.OK, 1.0),
    record(2, 3, Status.OK, 2.5),
    record(3, 3, Status.REJECTED, 3.0),
]


def test_retries_are_counted_per_request_and_per_send() -> None:
    assert retry_summary(RECORDS) == {
        "retried": 3, "retries": 5, "wait_s": 6.5, "failed_after_retries": 1,
    }  # fmt: skip
    (line,) = retry_line(RECORDS)
    assert "retried 3 rejected requests 5 times, waiting 6.5s in all" in line


def test_nothing_retried_gives_no_summary() -> None:
    assert retry_summary(RECORDS[:1]) is None and retry_line(RECORDS[:1]) == []


def test_a_request_that_succeeded_on_a_retry_is_not_an_error() -> None:
    result = decide(objective("error_rate", max="50%"), RECORDS, 0.99)
    assert result.estimate_s == 0.25 and result.n == 4
