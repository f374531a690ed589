"""A completed stream that delivered nothing fails; an answer that never started has an
unbounded TTFO (docs/metrics.md).

Known truth: 200 requests, TTFT 50 ms each. Of them 24 (12%) are answers whose
reasoning ran into ``max_tokens`` before any answer token: their TTFT is 50 ms but their
answer never started. Counted as left out (the old rule), TTFO p95 would be 0.8 s and
pass a 1 s limit; counted as ``inf`` it fails it.
"""

from __future__ import annotations

import math

import numpy as np

from pytest_latency.analysis.samples import metric_samples
from pytest_latency.analysis.verdict import Verdict, decide
from pytest_latency.records import RequestRecord, Status
from pytest_latency.spec.model import objective

N, UNANSWERED = 200, 24


def _records() -> list[RequestRecord]:
    records = []
    for index in range(N):
        at = index * 0.2
        record = RequestRecord(index, "steady", at, 20)
        record.sent_s, record.status, record.output_tokens = at, Status.OK, 16
        record.first_token_s = at + 0.05
        record.end_s = at + 1.0
        record.itl_s = np.full(15, 0.06)
        record.reasoning_tokens = 8
        if index % (N // UNANSWERED) != 0 or index >= UNANSWERED * (N // UNANSWERED):
            record.ttfo_s = 0.8
            record.reasoning_s = 0.75
        records.append(record)
    return records


def test_an_answer_that_never_started_is_an_unbounded_ttfo() -> None:
    records = _records()
    ttfo = metric_samples(records, "ttfo")
    reasoning = metric_samples(records, "reasoning")
    assert ttfo.size == N and int(np.isinf(ttfo).sum()) == UNANSWERED
    assert reasoning.size == N and int(np.isinf(reasoning).sum()) == UNANSWERED
    # TTFT is about the first token of any kind: every one of them came.
    assert np.isfinite(metric_samples(records, "ttft")).all()


def test_twelve_percent_unanswered_fail_a_ttfo_p95() -> None:
    result = decide(objective("ttfo", p=95, max="1s"), _records(), 0.99)
    assert result.verdict is Verdict.FAIL, result.reason
    assert math.isinf(result.estimate_s)


def test_a_request_without_reasoning_still_has_no_reasoning_value() -> None:
    record = RequestRecord(0, "steady", 0.0, 20)
    record.sent_s, record.status, record.output_tokens = 0.0, Status.OK, 4
    record.first_token_s, record.ttfo_s, record.end_s = 0.05, 0.05, 0.2
    assert metric_samples([record], "reasoning").size == 0
    assert metric_samples([record], "ttfo").tolist() == [0.05]
