"""A run stopped early: planned requests never sent are counted, but they are neither
latency samples nor errors; a request sent and then cut off still fails
(docs/metrics.md, "Requests never sent, and requests cut off").

Known truth: 40 planned; 15 completed with TTFT 100..1500 ms, 2 timed out, 1 sent and
cut off mid-stream (``cancelled`` with a send instant), 22 never sent. Every number is
the one the 18 sent requests give, with the 3 that did not complete as ``inf``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from pytest_latency.analysis.percentiles import percentile
from pytest_latency.analysis.result import LatencyResult
from pytest_latency.analysis.samples import metric_samples
from pytest_latency.records import RUN_SCHEMA, STOPPED_EARLY, RequestRecord, Status
from pytest_latency.report.evidence import failed_count
from pytest_latency.report.html.model import ReportRun
from pytest_latency.report.html.tables import failures_table, phases_table
from pytest_latency.report.json_report import run_dict
from pytest_latency.report.markdown import run_section
from pytest_latency.report.terminal import format_run
from pytest_latency.servers.base import ServerInfo
from pytest_latency.spec.model import Phase, Workload, objective
from tests.helpers.json_schema import problems

PLANNED, COMPLETED, TIMED_OUT, CUT_OFF = 40, 15, 2, 1
SENT = COMPLETED + TIMED_OUT + CUT_OFF
TTFTS = [0.1 * (k + 1) for k in range(COMPLETED)]


def _records() -> list[RequestRecord]:
    records = []
    for index in range(PLANNED):
        at = index * 0.1
        record = RequestRecord(index, "load", at, 20)
        if index < COMPLETED:
            record.sent_s, record.status, record.output_tokens = at, Status.OK, 20
            record.first_token_s = at + TTFTS[index]
            record.itl_s = np.full(19, 0.01)
            record.end_s = record.first_token_s + 0.19
        elif index < COMPLETED + TIMED_OUT:
            record.sent_s, record.status, record.end_s = at, Status.TIMEOUT, at + 5.0
        elif index < SENT:  # sent, then cut off: the server had it and had not answered
            record.sent_s, record.error = at, "run cancelled before the request finished"
        else:
            record.error = f"{STOPPED_EARLY}phase 'load': over-saturated"
        records.append(record)
    return records


@pytest.fixture(scope="module")
def run() -> LatencyResult:
    workload = Workload(phases=(Phase("load", 10, 4.0),), seed=1, output_tokens=20)
    return LatencyResult(
        test="t",
        server=ServerInfo(kind="sim", url="http://127.0.0.1:1", model="m"),
        workload=workload,
        records=_records(),
        started_at_unix=0.0,
        elapsed_s=5.0,
    )


def _truth(p: float) -> float:
    """The percentile of the sent requests: the completed values, the rest unbounded."""
    return percentile(np.array([*TTFTS, *[math.inf] * (SENT - COMPLETED)]), p)


@pytest.mark.parametrize("p", [10, 50, 80])
def test_percentiles_are_those_of_the_sent_requests(run: LatencyResult, p: float) -> None:
    assert math.isfinite(_truth(p))  # 22 never-sent as inf would make p50 unbounded
    assert run.percentile("ttft", p) == pytest.approx(_truth(p))
    (summary,) = run.summaries()
    assert summary.percentiles["ttft"][50.0] == pytest.approx(_truth(50))
    assert metric_samples(run.records, "ttft").size == SENT


def test_the_counts_are_kept_and_say_what_was_never_sent(run: LatencyResult) -> None:
    (summary,) = run.summaries()
    assert (summary.offered, summary.completed, summary.failed, summary.unsent) == (
        PLANNED, COMPLETED, TIMED_OUT + CUT_OFF, PLANNED - SENT,
    )  # fmt: skip
    assert summary.statuses["cancelled"] == PLANNED - SENT + CUT_OFF
    assert run.offered == PLANNED  # one record per planned request


def test_the_error_rate_counts_sent_requests_only() -> None:
    fresh = LatencyResult(
        test="t",
        server=ServerInfo(kind="sim", url="http://127.0.0.1:1", model="m"),
        workload=Workload(phases=(Phase("load", 10, 4.0),), seed=1),
        records=_records(),
        started_at_unix=0.0,
        elapsed_s=5.0,
    )
    errors, attainment = fresh.evaluate(
        [
            objective("error_rate", max="50%"),
            objective("attainment", ttft="10s", min="50%"),
        ]
    )
    assert errors.n == SENT and errors.estimate_s == pytest.approx(3 / SENT)
    assert attainment.n == SENT and attainment.estimate_s == pytest.approx(COMPLETED / SENT)


def test_a_scope_with_nothing_sent_says_so() -> None:
    records = [r for r in _records() if r.never_sent]
    fresh = LatencyResult(
        test="t",
        server=ServerInfo(kind="sim", url="http://127.0.0.1:1", model="m"),
        workload=Workload(phases=(Phase("load", 10, 4.0),), seed=1),
        records=records,
        started_at_unix=0.0,
        elapsed_s=5.0,
    )
    (result,) = fresh.evaluate([objective("ttft", p=50, max="1s")])
    # They were kept back by a saturation stop: overload, not a way out (issue 33).
    assert result.verdict.value == "fail" and result.n == 0
    assert result.reason.startswith("the queue ran away in phase load: its saturation stop")
    assert "none of the 22 requests" in result.reason and "was sent" in result.reason


def test_every_report_agrees(run: LatencyResult) -> None:
    document = run_dict(run)
    assert not problems({"schema": RUN_SCHEMA, "plugin_version": "0", "runs": [document]})
    (phase,) = document["phases"]
    assert (phase["offered"], phase["failed"], phase["unsent"]) == (PLANNED, 3, PLANNED - SENT)
    assert phase["percentiles_s"]["ttft"]["p50"] == pytest.approx(_truth(50))
    run.evaluate([objective("attainment", ttft="10s", min="50%")])  # goodput follows it
    ((good,),) = [p["goodput"] for p in run_dict(run)["phases"]]
    assert (good["offered"], good["good"]) == (SENT, COMPLETED)  # of the sent

    lines = format_run(run, width=200)
    head = next(line for line in lines if line.split()[:2] == ["phase", "offered"])
    row = lines[lines.index(head) + 1].split()
    assert head.split()[1:5] == ["offered", "ok", "failed", "unsent"]
    assert row[1:5] == ["40", "15", "3", "22"]
    assert not any(" inf" in line for line in lines)

    assert failed_count(3, run.records) == (
        "3 of 18 sent requests failed (22 planned never sent: neither failed nor a sample)"
    )
    report = ReportRun(run.test, document, run.records)
    assert "3 of 18 sent requests failed" in failures_table(report)
    assert "<th>unsent</th>" in phases_table(document["phases"])
    assert "3 of 18 sent requests failed" in run_section(report)
