"""Cohorts by turn index and by prefix-cache hit, and their JSON shape."""

from __future__ import annotations

import json

from jsonschema import Draft202012Validator

from pytest_latency.analysis.cohorts import cohort_counts, cohort_key, summarise_cohorts
from pytest_latency.records import RequestRecord, Status
from tests.helpers.json_schema import SCHEMA_PATH


def _record(index: int, ttft: float, turn: int | None, cached: int | None) -> RequestRecord:
    record = RequestRecord(id=index, phase="chat", intended_s=float(index), input_tokens=300,
                           max_tokens=50, turn=turn, session=None if turn is None else 0,
                           cached_tokens=cached)  # fmt: skip
    record.status = Status.OK
    record.sent_s, record.first_token_s, record.end_s = float(index), index + ttft, index + 1.0
    return record


def test_turns_are_planned_cohorts_and_cache_hits_split_their_summaries() -> None:
    records = [_record(i, 0.15, 0, 0) for i in range(4)]
    records += [_record(10 + i, 0.04, 1, 288) for i in range(4)]
    records += [_record(20 + i, 0.15, 1, 0) for i in range(2)]
    records += [_record(30, 0.1, None, None)]
    assert cohort_key(records[0]) == "chat|in:257-1024|out:1-64|turn:0"
    assert cohort_key(records[-1]) == "chat|in:257-1024|out:1-64"  # outside sessions: as before
    assert cohort_counts(records) == {
        "chat|in:257-1024|out:1-64|turn:0": 4,
        "chat|in:257-1024|out:1-64|turn:1": 6,  # the mix compares plans, not cache outcomes
        "chat|in:257-1024|out:1-64": 1,
    }
    rows = [summary.to_json() for summary in summarise_cohorts(records)]
    assert [(row["turn"], row["cache_hit"], row["offered"]) for row in rows] == [
        (0, False, 4), (1, True, 4), (1, False, 2), (None, None, 1),
    ]  # fmt: skip
    hit, miss = rows[1], rows[2]
    assert hit["ttft_p50_s"] < miss["ttft_p50_s"]
    schema = json.loads(SCHEMA_PATH.read_text())
    cohort = {**schema["$defs"]["cohort"], "$defs": schema["$defs"]}
    for row in rows:
        Draft202012Validator(cohort).validate(json.loads(json.dumps(row)))
