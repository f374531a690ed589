"""The terminal summary says in words when expected server spans are missing."""

from __future__ import annotations

from pytest_latency.report.terminal import format_run
from pytest_latency.spec.model import Phase
from pytest_latency.telemetry.join import join_records
from tests.helpers.html_runs import lesson_record, make_result

RECEIVER = "http://127.0.0.1:4318/v1/traces"


def summary(expect_spans: bool) -> str:
    records = [lesson_record(index) for index in range(6)]
    for record in records:  # no server data of any kind: only spans could have said
        record.queue_wait_s = record.prefill_s = record.decode_s = None
        record.server_timing = None
        record.stream_timings = None
    result = make_result(records, (Phase("steady", rate=1, duration_s=6),))
    result.server_join = join_records(
        records, {}, waited_s=5.0, receiver=RECEIVER, expect_spans=expect_spans
    )
    return "\n".join(format_run(result, 200))


def test_spans_that_never_arrived_are_a_warning_in_the_summary() -> None:
    text = summary(expect_spans=True)
    assert f"server spans at {RECEIVER}: 0/6 requests joined" in text
    assert "WARNING: no server spans arrived for any of the 6 completed requests" in text
    assert "queue waits are unknown (null), not zero" in text


def test_no_warning_when_the_server_was_not_expected_to_send_spans() -> None:
    assert "WARNING" not in summary(expect_spans=False)
