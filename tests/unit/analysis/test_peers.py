"""A recorded stream gives each peer's own numbers, computed here by hand from the
peers' published formulas (vLLM ``calculate_metrics``, AIPerf's metrics reference)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_latency.analysis.peers import PeerStatistic, aiperf_statistics, vllm_statistics
from pytest_latency.analysis.result import LatencyResult
from pytest_latency.cli.main import main
from pytest_latency.records import RequestRecord, Status
from pytest_latency.report.json_report import write_json
from pytest_latency.servers.base import ServerInfo
from pytest_latency.spec.model import Phase, Workload


def stream(
    index: int, sent: float, first: float, gaps: list[float], tokens: int, lag: float = 0.1
) -> RequestRecord:
    """A completed request sent ``lag`` after its plan; its last byte 1 ms after the
    last chunk (the [DONE] line)."""
    record = RequestRecord(index, "steady", sent - lag, input_tokens=10)
    record.status, record.sent_s, record.first_token_s = Status.OK, sent, first
    record.itl_s, record.output_tokens, record.prompt_tokens = gaps, tokens, 12
    record.end_s = first + sum(gaps) + 0.001
    record.ttfo_s = first - record.intended_s
    return record


# Request A: sent at 1.0, first chunk 1.2, chunk gaps 0.1, 0.3 (3 chunks), 5 tokens.
# Request B: sent at 2.0, first chunk 2.5, chunk gap 0.2 (2 chunks), 2 tokens.
RECORDS = [stream(0, 1.0, 1.2, [0.1, 0.3], 5), stream(1, 2.0, 2.5, [0.2], 2)]


def by_name(statistics: list[PeerStatistic]) -> dict[str, dict[str, float]]:
    return {statistic.name: statistic.values for statistic in statistics}


def test_vllm_numbers_are_its_own_definitions() -> None:
    found = by_name(vllm_statistics(RECORDS))
    # TTFT from the send: 0.2 and 0.5 s.
    assert found["TTFT"]["Mean"] == pytest.approx(350.0)
    assert found["TTFT"]["Median"] == pytest.approx(350.0)
    assert found["TTFT"]["P99"] == pytest.approx(200.0 + 0.99 * 300.0)  # linear
    # E2EL to the last chunk: 0.6 and 0.7 s; TPOT (e2el - ttft) / (tokens - 1).
    assert found["E2EL"]["Mean"] == pytest.approx(650.0)
    assert found["TPOT"]["Mean"] == pytest.approx((400.0 / 4 + 200.0 / 1) / 2)
    # ITL pools the three gaps of both requests: 0.1, 0.3, 0.2.
    assert found["ITL"]["Mean"] == pytest.approx(200.0)
    assert found["ITL"]["Median"] == pytest.approx(200.0)
    # Throughput over time zero to the last end (2.5 + 0.2 + 0.001).
    duration = 2.701
    assert found["Request throughput"][""] == pytest.approx(2 / duration)
    assert found["Output token throughput"][""] == pytest.approx(7 / duration)
    assert found["Total Token throughput"][""] == pytest.approx((7 + 24) / duration)


def test_aiperf_numbers_are_its_own_definitions() -> None:
    found = by_name(aiperf_statistics(RECORDS))
    # Request latency to the last response: 0.601 and 0.701 s.
    assert found["Request Latency"]["avg"] == pytest.approx(651.0)
    # ITL = (latency - TTFT) / (OSL - 1): 0.401 / 4 and 0.201 / 1.
    itls = [0.401 / 4, 0.201]
    assert found["Inter Token Latency"]["avg"] == pytest.approx(sum(itls) / 2 * 1000)
    assert found["Inter Token Latency"]["min"] == pytest.approx(min(itls) * 1000)
    # ICL: every chunk gap.
    assert found["Inter Chunk Latency"]["avg"] == pytest.approx(200.0)
    assert found["Inter Chunk Latency"]["max"] == pytest.approx(300.0)
    assert found["Output Token Throughput Per User"]["avg"] == pytest.approx(
        sum(1 / itl for itl in itls) / 2
    )
    assert found["Time to First Output Token"]["avg"] == pytest.approx(350.0)
    # Duration: the first send (1.0) to the last response (2.701).
    assert found["Request Throughput"][""] == pytest.approx(2 / 1.701)
    assert found["Output Token Throughput"][""] == pytest.approx(7 / 1.701)


def test_failed_requests_are_left_out_as_the_peers_leave_them() -> None:
    failed = stream(2, 3.0, 3.1, [0.1], 2)
    failed.status = Status.TIMEOUT
    found = by_name(vllm_statistics([*RECORDS, failed]))
    assert found["TTFT"]["Mean"] == pytest.approx(350.0)


def test_compare_as_vllm_prints_its_names_in_ms(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workload = Workload(phases=(Phase("steady", rate=1, duration_s=3),))
    run = LatencyResult(
        "t.py::test_peer",
        ServerInfo("sim", "http://127.0.0.1:1", "sim-tiny"),
        workload,
        RECORDS,
        0.0,
        3.0,
    )
    path = tmp_path / "run.json"
    write_json(path, [run])
    assert main(["compare", "--as", "vllm", str(path)]) == 0
    text = capsys.readouterr().out
    assert "Mean TTFT (ms):" in text and "350.00" in text
    assert "P99 ITL (ms):" in text and "Median E2EL (ms):" in text
    assert main(["compare", "--as", "aiperf", str(path)]) == 0
    assert "Inter Chunk Latency (ms)" in capsys.readouterr().out
    assert main(["compare", "--as", "vllm", str(path), str(path)]) == 2
