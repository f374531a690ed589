"""Throughput per phase: completed work over the phase's own window, against known truth."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_latency.analysis.result import LatencyResult
from pytest_latency.analysis.throughput import phase_throughput, window_s
from pytest_latency.driver import Target, run_plan
from pytest_latency.records import RequestRecord, Status
from pytest_latency.report.json_report import write_json
from pytest_latency.servers.base import ServerInfo
from pytest_latency.sim import SimConfig, SimServer
from pytest_latency.spec.model import Phase, Workload
from pytest_latency.workload import build_plan


def record(
    index: int, intended: float, first: float, end: float, tokens: int, episode: int = 0
) -> RequestRecord:
    made = RequestRecord(index, "steady", intended, input_tokens=10, episode=episode)
    made.status, made.sent_s = Status.OK, intended
    made.first_token_s, made.end_s, made.output_tokens = first, end, tokens
    return made


def test_the_window_runs_to_the_last_response_when_it_ends_after_the_phase() -> None:
    records = [record(0, 0.5, 0.6, 1.5, 11), record(1, 9.5, 9.6, 12.0, 21)]
    assert window_s(records, [(0.0, 10.0)]) == pytest.approx(12.0)
    throughput = phase_throughput(records, [(0.0, 10.0)])
    assert throughput.requests_per_s == pytest.approx(2 / 12.0)
    assert throughput.output_tokens_per_s == pytest.approx(32 / 12.0)
    assert throughput.total_tokens_per_s == pytest.approx(52 / 12.0)
    # per user: mean of (11 - 1) / 0.9 and (21 - 1) / 2.4
    assert throughput.output_tokens_per_s_per_user == pytest.approx((10 / 0.9 + 20 / 2.4) / 2)


def test_episodes_add_their_windows_and_failures_count_for_nothing() -> None:
    late = record(1, 21.0, 21.1, 26.0, 5, episode=1)
    failed = record(2, 22.0, 22.1, 23.0, 5, episode=1)
    failed.status = Status.HTTP_ERROR
    records = [record(0, 1.0, 1.1, 2.0, 5), late, failed]
    windows = [(0.0, 10.0), (20.0, 30.0)]
    assert window_s(records, windows) == pytest.approx(20.0)  # 26 s < the planned end 30 s
    throughput = phase_throughput(records, windows)
    assert (throughput.completed, throughput.output_tokens) == (2, 10)
    assert throughput.to_json()["requests_per_s"] == pytest.approx(0.1)
    assert set(throughput.to_json()) == {
        "requests_per_s",
        "output_tokens_per_s",
        "total_tokens_per_s",
        "output_tokens_per_s_per_user",
    }


def test_a_phase_with_no_completed_request_has_zero_throughput_and_no_per_user_rate() -> None:
    throughput = phase_throughput([], [(0.0, 5.0)])
    assert throughput.requests_per_s == 0.0 and throughput.output_tokens_per_s_per_user is None


FAST = SimConfig(
    decode_base_s=0.002, decode_per_seq_s=0.0, prefill_base_s=0.0, prefill_per_token_s=0.0
)


@pytest.mark.slow
def test_throughput_is_the_served_token_count_over_the_window_on_loopback(
    tmp_path: Path,
) -> None:
    workload = Workload(
        phases=(Phase("steady", rate=20, duration_s=1.0, arrival="constant"),),
        input_tokens=(10, 30),
        output_tokens=12,
    )
    plan = build_plan(workload)
    with SimServer(FAST) as sim:
        before = sim.snapshot().counters
        drive = run_plan(plan, Target(sim.url, "sim-tiny"))
        after = sim.snapshot().counters
    records = drive.records
    assert [r.status for r in records] == [Status.OK] * 20
    served_output = after.generation_tokens - before.generation_tokens
    served_prompt = after.prompt_tokens - before.prompt_tokens
    assert served_output == 20 * 12
    window = max(1.0, max(r.end_s or 0.0 for r in records))  # phase start is time zero
    result = LatencyResult(
        "t.py::test_throughput", ServerInfo("sim", sim.url, "sim-tiny"), workload, records, 0.0, 1.0
    )
    (summary,) = result.summaries()
    assert summary.throughput is not None
    assert summary.throughput.window_s == pytest.approx(window)
    assert summary.throughput.output_tokens_per_s == pytest.approx(served_output / window)
    assert summary.throughput.total_tokens_per_s == pytest.approx(
        (served_output + served_prompt) / window
    )
    assert summary.throughput.requests_per_s == pytest.approx(20 / window)
    path = tmp_path / "run.json"
    write_json(path, [result])
    (phase,) = json.loads(path.read_text())["runs"][0]["phases"]
    assert phase["throughput"]["output_tokens_per_s"] == pytest.approx(served_output / window)
    assert phase["throughput_window_s"] == pytest.approx(window)


def test_compare_prints_each_phases_throughput_with_b_over_a(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from pytest_latency.cli.main import main

    workload = Workload(phases=(Phase("steady", rate=1, duration_s=10.0),))
    server = ServerInfo("sim", "http://127.0.0.1:1", "sim-tiny")
    paths = []
    for name, tokens in (("a", 11), ("b", 21)):  # B streams twice the tokens (less one)
        records = [record(0, 0.5, 0.6, 1.5, tokens), record(1, 5.0, 5.1, 6.0, tokens)]
        path = tmp_path / f"{name}.json"
        write_json(path, [LatencyResult("t.py::test_x", server, workload, records, 0.0, 10.0)])
        paths.append(str(path))
    assert main(["compare", *paths, "--width", "200"]) == 0
    lines = capsys.readouterr().out.splitlines()
    (output,) = [line for line in lines if line.startswith("throughput steady output tok/s:")]
    # 22 and 42 output tokens over the 10 s window.
    assert output == "throughput steady output tok/s: A 2.2, B 4.2, B/A 1.91x"
