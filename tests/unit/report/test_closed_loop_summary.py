"""The terminal says what latency means under a closed loop, and prints throughput."""

from __future__ import annotations

from pytest_latency.analysis.result import LatencyResult
from pytest_latency.records import RequestRecord, Status
from pytest_latency.report.terminal import format_run
from pytest_latency.servers.base import ServerInfo
from pytest_latency.spec.model import Workload, concurrent, steady


def done(index: int, phase: str, at: float) -> RequestRecord:
    record = RequestRecord(index, phase, at, input_tokens=10)
    record.status, record.sent_s, record.first_token_s = Status.OK, at, at + 0.1
    record.end_s, record.output_tokens, record.itl_s = at + 0.5, 5, [0.1] * 4
    return record


def test_a_closed_loop_phase_is_said_to_hide_queueing() -> None:
    workload = Workload(phases=(steady(2, 2.0), concurrent(2, 2.0)))
    records = [done(0, "steady", 0.5), done(1, "users", 2.0), done(2, "users", 2.5)]
    run = LatencyResult(
        "t.py::test_x", ServerInfo("sim", "http://127.0.0.1:1", "m"), workload, records, 0.0, 4.0
    )
    text = " ".join(" ".join(format_run(run, width=200)).split())
    assert "users: closed loop: each user sends when its previous request ended" in text
    assert "coordinated omission" in text
    assert "steady: closed loop" not in text
    assert "users: throughput 1.00 req/s" in text  # 2 completed over the 2 s window
