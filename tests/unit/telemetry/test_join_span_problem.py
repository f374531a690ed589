"""A run whose expected server spans never came, or stopped coming, says so in words."""

from __future__ import annotations

import pytest

from pytest_latency.records import RequestRecord, Status
from pytest_latency.telemetry.join import join_records
from pytest_latency.telemetry.timings import ServerTimings


def records(count: int, *, failed: frozenset[int] = frozenset()) -> list[RequestRecord]:
    return [
        RequestRecord(
            id=index,
            phase="steady",
            intended_s=0.5 * index,
            input_tokens=10,
            trace_id=f"{index + 1:032x}",
            status=Status.HTTP_ERROR if index in failed else Status.OK,
        )
        for index in range(count)
    ]


def spans_for(run: list[RequestRecord], indices: range | set[int]) -> dict[str, ServerTimings]:
    return {
        run[index].trace_id: ServerTimings(
            trace_id=run[index].trace_id, source="otlp:vllm", queue_wait_s=0.1
        )
        for index in indices
    }


def test_no_span_at_all_is_named_with_the_count() -> None:
    run = records(6)
    report = join_records(run, {}, waited_s=5.0, receiver="http://x/v1/traces", expect_spans=True)
    assert report.joined == 0
    assert report.span_problem is not None
    assert "no server spans arrived for any of the 6 completed requests" in report.span_problem
    assert "unknown (null), not zero" in report.span_problem


def test_spans_that_stop_arriving_are_named_from_where_they_stopped() -> None:
    run = records(40)
    report = join_records(run, spans_for(run, range(30)), expect_spans=True)
    assert report.joined == 30
    assert report.span_problem is not None
    assert "stopped arriving: none for the last 10 of 40" in report.span_problem
    assert "planned from 15.0s" in report.span_problem  # request 30, planned at 0.5 s each


@pytest.mark.parametrize(
    ("count", "arrived", "failed"),
    [
        (40, set(range(40)), set()),  # every span came
        (40, set(range(38)), set()),  # the last two are late: counted, not a stop
        (40, set(range(40)) - {3, 17, 25}, set()),  # holes mid-run: counted only
        (10, set(range(7)), {7, 8, 9}),  # the unjoined tail failed: no span expected
        (100, set(range(96)), set()),  # 4 of 100 is under 5 %
    ],
)
def test_late_or_scattered_missing_spans_are_only_counted(
    count: int, arrived: set[int], failed: set[int]
) -> None:
    run = records(count, failed=frozenset(failed))
    report = join_records(run, spans_for(run, arrived), expect_spans=True)
    assert report.span_problem is None
    assert report.joined == len(arrived)


def test_no_problem_when_spans_were_not_expected() -> None:
    assert join_records(records(6), {}, expect_spans=False).span_problem is None


def test_spanless_requests_with_a_server_timing_header_say_where_their_waits_came_from() -> None:
    run = records(6)
    for record in run[:4]:
        record.server_timing = "queue;dur=200"
    report = join_records(run, {}, expect_spans=True)
    assert report.joined == 4
    assert report.span_problem is not None
    assert "2 of them have no queue wait (null, not zero); the rest from server-timing" in (
        report.span_problem
    )
    for record in run[4:]:
        record.server_timing = "queue;dur=200"
    report = join_records(run, {}, expect_spans=True)
    assert report.span_problem is not None
    assert "their queue waits come from server-timing instead" in report.span_problem


def test_requests_never_sent_are_not_counted_as_missing_spans() -> None:
    """A probe stopped early printed 'server spans: 56/310 requests joined' though only
    56 requests were sent: the 254 kept back have no span to wait for."""
    run = records(10)
    for record in run[6:]:
        record.status = Status.CANCELLED  # never sent: no send instant
    report = join_records(run, spans_for(run, range(6)))
    assert (report.requests, report.joined, report.missing) == (6, 6, 0)
    run[7].sent_s = 3.5  # sent, then cut off mid-stream: its span is still owed
    assert join_records(run, spans_for(run, range(6))).missing == 1
