"""A probe's counts agree with its phase's in every report: ``planned`` is the phase
table's ``offered``, ``cancelled`` its cancelled requests, ``sent`` what went out, and
``decided on`` what the verdicts rest on; with the server's durations per probe."""

from __future__ import annotations

import re

import numpy as np
import pytest

from pytest_latency.analysis.capacity_result import CapacityResult, ProbeResult
from pytest_latency.analysis.probe_counts import probe_counts, probe_server_times
from pytest_latency.analysis.result import LatencyResult
from pytest_latency.records import RUN_SCHEMA, RequestRecord, Status
from pytest_latency.report.html.capacity import capacity_section
from pytest_latency.report.html.model import ReportRun
from pytest_latency.report.json_report import run_dict
from pytest_latency.report.markdown import run_section
from pytest_latency.report.terminal import format_run
from pytest_latency.servers.base import ServerInfo
from pytest_latency.spec.model import Phase, Workload
from tests.helpers.json_schema import problems

PLANNED, SENT, DECIDED = 40, 15, 12  # a probe stopped early: 25 never sent


def _record(index: int, phase: str, at: float, sent: bool) -> RequestRecord:
    if not sent:
        return RequestRecord(index, phase, at, 20, status=Status.CANCELLED, error="stopped: x")
    return RequestRecord(
        index, phase, at, 20, sent_s=at, first_token_s=at + 0.05, end_s=at + 0.2,
        status=Status.OK, output_tokens=20, itl_s=np.full(19, 0.01),
        queue_wait_s=0.01 * index, prefill_s=0.02, decode_s=0.1, server_source="otlp",
    )  # fmt: skip


@pytest.fixture(scope="module")
def run() -> LatencyResult:
    phases = (Phase("warmup-1", 10, 1.0), Phase("probe-1", 10, 4.0))
    workload = Workload(phases=phases, seed=1, input_tokens=(20, 20), output_tokens=20)
    records = [_record(i, "warmup-1", i * 0.1, True) for i in range(10)]
    records += [_record(10 + j, "probe-1", 1 + j * 0.1, j < SENT) for j in range(PLANNED)]
    probe = ProbeResult(10.0, DECIDED, {"ttft p90 <= 1s": "fail"}, True, 3.0, "server queue empty")
    found = CapacityResult(None, 10.0, [probe], 30.0, 3.0, "a test")
    server = ServerInfo(kind="sim", url="http://127.0.0.1:1", model="m")
    return LatencyResult(
        test="t", server=server, workload=workload, records=records,
        started_at_unix=0.0, elapsed_s=5.0, capacity=found,
    )  # fmt: skip


def test_the_counts_of_a_probe_stopped_early() -> None:
    records = [_record(j, "probe-1", j * 0.1, j < SENT) for j in range(PLANNED)]
    counts = probe_counts(records, DECIDED)
    assert (counts.planned, counts.sent, counts.cancelled, counts.decided_on) == (40, 15, 25, 12)
    times = probe_server_times(records)
    assert (times.completed, times.joined) == (15, 15)
    assert times.queue_wait_p50_s == pytest.approx(0.07) and times.decode_p50_s == 0.1
    assert probe_server_times(records[SENT:]).queue_wait_p50_s is None  # nothing completed


def test_terminal_json_html_and_markdown_agree_with_the_phase_table(run: LatencyResult) -> None:
    document = run_dict(run)
    assert not problems({"schema": RUN_SCHEMA, "plugin_version": "0", "runs": [document]})
    (phase,) = [p for p in document["phases"] if p["name"] == "probe-1"]
    (probe,) = document["capacity"]["probes"]
    assert probe["planned"] == phase["offered"] == PLANNED
    assert probe["cancelled"] == phase["statuses"]["cancelled"] == PLANNED - SENT
    assert probe["sent"] == phase["statuses"]["ok"] == SENT
    assert probe["decided_on"] == probe["offered"] == DECIDED
    assert probe["server"]["joined"] == SENT and probe["server"]["prefill_p50_s"] == 0.02

    lines = format_run(run, width=80)
    assert all(len(line) <= 80 for line in lines)
    phase_row = next(line for line in lines if line.strip().startswith("probe-1 "))
    # offered, ok, failed, unsent: the never-sent are neither failed nor samples
    assert phase_row.split()[1:5] == ["40", "15", "0", "25"]
    assert phase["failed"] == 0 and phase["unsent"] == PLANNED - SENT
    assert phase["percentiles_s"]["ttft"]["p50"] == pytest.approx(0.05)  # not inf
    assert phase["percentiles_s"]["e2e"]["p99"] == pytest.approx(0.2)
    head = next(line for line in lines if line.split()[:2] == ["probe", "rate/s"])
    row = lines[lines.index(head) + 1].split()
    assert head.split()[2:6] == ["planned", "sent", "cancelled", "decided"]
    assert row[2:6] == ["40", "15", "25", "12"] and row[6:8] == ["fail,", "early"]
    assert any("server (15 of 15 completed joined): queue wait p50 170ms" in x for x in lines)

    html = capacity_section(document["capacity"])
    cells = re.findall(r"<td>(.*?)</td>", html.split("</table>")[0])
    assert cells[:6] == ["probe-1", "10/s", "40", "15", "25", "12"]
    assert cells[-3:] == ["170ms", "20ms", "100ms"]  # the server's medians for the probe

    markdown = run_section(ReportRun(run.test, document, run.records))
    assert "| rate | planned | sent | cancelled | decided on |" in markdown
    assert "| 10/s | 40 | 15 | 25 | 12 |" in markdown


def test_a_verdict_no_look_decided_is_shown_and_said_so() -> None:
    """A verdict without evidence (a probe the budget cut before any look, or a file from
    before runaway probes carried their objectives' evidence) still shows, saying that no
    look decided it."""
    import math

    from pytest_latency.analysis.capacity_result import ProbeEvidence
    from pytest_latency.report.capacity_table import capacity_lines

    queue = ProbeEvidence(
        objective="queue kept up", decided_as="in flight grows under 10/s", verdict="fail",
        estimate=30.0, lower=-math.inf, upper=math.inf, n=200, n_effective=None,
        unit="rps", limit=10.0, at_least=False,
    )  # fmt: skip
    verdicts = {"ttft p90 <= 500ms": "inconclusive", "queue kept up": "fail"}
    probe = ProbeResult(80.0, 170, verdicts, True, 8.0, "server queue empty", (queue,))
    found = CapacityResult(None, 80.0, [probe], 30.0, 8.0, "a test")
    text = "\n".join(capacity_lines(found, None, width=120))
    assert "ttft p90 <= 500ms: inconclusive (not decided at a look, no estimate)" in text
    assert "queue kept up: fail; in flight grew 30.00/s" in text
    html = capacity_section(found.to_json())
    rows = re.findall(r"<tr>(.*?)</tr>", html.split("<h4>")[1])
    cells = [re.findall(r"<td>(.*?)</td>", row) for row in rows]
    assert [row[1:4] for row in cells if row] == [
        ["queue kept up", "fail", "in flight grows under 10/s"],
        ["ttft p90 &lt;= 500ms", "inconclusive", "not decided at a look, no estimate"],
    ]
