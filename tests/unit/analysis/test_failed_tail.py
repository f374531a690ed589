"""A percentile decided by its failed requests: failed requests are unbounded values, so
where they alone are surely more than the tail leaves room for, the percentile FAILs.

Two ways to be sure: the failures' own lower bound (independent failures, or outages
counted as events), and a scope that ended in failures covering half of it (the server
went away), decided by its own share as an error rate is. The second case came from a
live capacity probe: a queue that filled, then 429s, 0 of 2,307 requests good, and an
INCONCLUSIVE TTFT p90 (one long outage is one event to the bounds).
"""

from __future__ import annotations

import math

from pytest_latency.analysis.verdict import Verdict, decide
from pytest_latency.records import RequestRecord, Status
from pytest_latency.spec.model import objective

GOAL = objective("ttft", p=90, max="300ms")
CONFIDENCE = 0.99


def _records(statuses: list[Status]) -> list[RequestRecord]:
    records = []
    for index, status in enumerate(statuses):
        record = RequestRecord(index, "probe", index * 0.01, 100, max_tokens=16)
        record.status, record.sent_s = status, index * 0.01
        record.end_s = record.sent_s + 0.05
        if status is Status.OK:
            record.first_token_s = record.sent_s + 0.02
            record.output_tokens = 16
        records.append(record)
    return records


def test_a_scope_whose_server_went_away_fails_its_percentile() -> None:
    """200 good requests at 20 ms, then 1,000 rejected: one outage, yet 83% failed."""
    records = _records([Status.OK] * 200 + [Status.REJECTED] * 1000)
    result = decide(GOAL, records, CONFIDENCE)
    assert result.verdict is Verdict.FAIL and math.isinf(result.lower_s)
    assert "1000/1200 failed" in result.reason and "the server went away" in result.reason


def test_every_request_failed_fails_the_percentile() -> None:
    result = decide(GOAL, _records([Status.REJECTED] * 300), CONFIDENCE)
    assert result.verdict is Verdict.FAIL


def test_an_outage_in_the_middle_is_one_event_and_stays_undecided() -> None:
    """The same failures in the middle of the run, good requests after them: not a
    server that went away, and one outage is too few events to bound the share."""
    records = _records([Status.OK] * 100 + [Status.REJECTED] * 600 + [Status.OK] * 600)
    result = decide(GOAL, records, CONFIDENCE)
    assert result.verdict is Verdict.INCONCLUSIVE


def test_a_tail_of_failures_within_the_tails_room_is_not_failed_by_them() -> None:
    """The last 5% failed (under the 10% a p90 leaves): the good requests decide."""
    records = _records([Status.OK] * 950 + [Status.REJECTED] * 50)
    result = decide(GOAL, records, CONFIDENCE)
    assert result.verdict is not Verdict.FAIL
