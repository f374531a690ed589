"""Trace files: the three layouts, window and speed, and errors at file:line naming the key."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_latency.spec.files import DataFileError
from pytest_latency.spec.model import SpecError, Workload
from pytest_latency.spec.trace import load_trace, trace_phase
from pytest_latency.workload import build_plan

MOONCAKE = [
    {"timestamp": 1000, "input_length": 40, "output_length": 5, "hash_ids": [1]},
    {"timestamp": 1250, "input_length": 30, "output_length": 6, "hash_ids": [1, 2]},
    {"timestamp": 3000, "input_length": 20, "output_length": 7, "hash_ids": [3]},
]


def _jsonl(tmp_path: Path, rows: list[dict[str, object]], name: str = "trace.jsonl") -> Path:
    path = tmp_path / name
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    return path


def test_mooncake_requests_are_shifted_to_the_phase_start(tmp_path: Path) -> None:
    trace = load_trace(_jsonl(tmp_path, MOONCAKE))
    assert [line.offset_s for line in trace.requests] == [0.0, 0.25, 2.0]
    assert [line.input_tokens for line in trace.requests] == [40, 30, 20]
    assert [line.hash_ids for line in trace.requests] == [(1,), (1, 2), (3,)]
    # The span plus one mean gap: 3 requests over 3 s, as a 1/s phase would offer.
    assert trace.duration_s == pytest.approx(3.0)


def test_plan_sends_at_the_trace_instants_with_the_trace_lengths(tmp_path: Path) -> None:
    from pytest_latency.spec.model import Phase

    phases = (Phase("warm", rate=2, duration_s=1.5, arrival="constant"),)
    phases += (trace_phase(_jsonl(tmp_path, MOONCAKE), name="replay"),)
    plan = build_plan(Workload(phases=phases, seed=3))
    replay = [r for r in plan.requests if r.phase == "replay"]
    assert [r.intended_s for r in replay] == [1.5, 1.75, 3.5]
    assert [(r.input_tokens, r.output_tokens) for r in replay] == [(40, 5), (30, 6), (20, 7)]
    assert [len(r.prompt.split()) for r in replay] == [40, 30, 20]
    # Shared block ids share the prompt's start; other blocks do not.
    assert replay[0].prompt.split()[:30] == replay[1].prompt.split()[:30]
    assert replay[2].prompt.split()[0] != replay[0].prompt.split()[0]


def test_arrival_times_of_a_trace_phase_are_the_trace_offsets(tmp_path: Path) -> None:
    import numpy as np

    from pytest_latency.workload import arrival_times

    phase = trace_phase(_jsonl(tmp_path, MOONCAKE))
    times = arrival_times(phase, np.random.default_rng(0))
    assert times.tolist() == [0.0, 0.25, 2.0]


def test_speed_and_window(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, MOONCAKE)
    fast = load_trace(path, speed=2.0)
    assert [line.offset_s for line in fast.requests] == [0.0, 0.125, 1.0]
    windowed = load_trace(path, window=(0.1, 2.0))  # trace time 1.1 s .. 3.1 s
    assert [line.line for line in windowed.requests] == [2, 3]
    assert [line.offset_s for line in windowed.requests] == [0.0, 1.75]
    assert windowed.duration_s == pytest.approx(1.85)  # to the window's end


def test_aiperf_layout_with_text_and_sessions(tmp_path: Path) -> None:
    rows = [
        {"timestamp": 0, "input_text": "hello there friend", "session_id": "a"},
        {"timestamp": 10, "input_length": 5, "output_length": 3, "session_id": "b"},
        {"timestamp": 20, "input_length": 5, "session_id": "a"},
    ]
    trace = load_trace(_jsonl(tmp_path, rows))
    assert [line.session for line in trace.requests] == [0, 1, 0]
    assert [line.turn for line in trace.requests] == [0, 0, 1]
    plan = build_plan(Workload(phases=(trace_phase(tmp_path / "trace.jsonl"),), output_tokens=9))
    assert plan.requests[0].prompt == "hello there friend"
    assert [(r.session, r.turn) for r in plan.requests] == [(0, 0), (1, 0), (0, 1)]
    assert [r.input_tokens for r in plan.requests] == [3, 5, 5]
    assert [r.output_tokens for r in plan.requests] == [9, 3, 9]


def test_csv_with_a_header(tmp_path: Path) -> None:
    path = tmp_path / "trace.csv"
    path.write_text("timestamp,input_length,output_length,hash_ids\n0,10,2,1 2\n500,12,3,\n")
    trace = load_trace(path)
    assert [(r.offset_s, r.input_tokens, r.hash_ids) for r in trace.requests] == [
        (0.0, 10, (1, 2)),
        (0.5, 12, ()),
    ]


def test_unsorted_lines_are_sorted_stably(tmp_path: Path) -> None:
    rows = [MOONCAKE[2], MOONCAKE[0], MOONCAKE[1]]
    trace = load_trace(_jsonl(tmp_path, rows))
    assert [line.line for line in trace.requests] == [2, 3, 1]


@pytest.mark.parametrize(
    ("text", "where"),
    [
        ('{"timestamp": 0, "input_length": 3}\n{"input_length": 3}\n', ":2: timestamp: missing"),
        ('{"timestamp": 0, "input_length": -3}\n', ":1: input_length: must be a whole number"),
        ('{"timestamp": "x", "input_length": 3}\n', ":1: timestamp: must be milliseconds"),
        ('{"timestamp": 0, "output_length": 3}\n', ":1: input_length: missing"),
        ('{"timestamp": 0, "input_length": 3, "hash_ids": 4}\n', ":1: hash_ids: must be a list"),
        ('{"timestamp": 0, "input_length": 3}\n{oops\n', ":2: (json): not valid JSON"),
        ("timestamp,input_len\n0,3\n", ":1: input_len: unknown column"),
        ("timestamp,input_length\n0,3,4\n", ":2: (csv): expected 2 values"),
        ("timestamp,input_length\n0,many\n", ":2: input_length: must be a number"),
        ("\n\n", ":1: (file): the trace has no requests"),
    ],
)
def test_bad_lines_name_file_line_and_key(tmp_path: Path, text: str, where: str) -> None:
    path = tmp_path / "bad.jsonl"
    path.write_text(text)
    with pytest.raises(DataFileError) as caught:
        load_trace(path)
    assert str(caught.value).startswith(str(path) + where), str(caught.value)


def test_missing_file_window_without_requests_and_bad_speed(tmp_path: Path) -> None:
    with pytest.raises(DataFileError, match="no such file"):
        load_trace(tmp_path / "absent.jsonl")
    path = _jsonl(tmp_path, MOONCAKE)
    with pytest.raises(DataFileError, match="window: no request"):
        load_trace(path, window=(100.0, 1.0))
    with pytest.raises(SpecError, match="speed"):
        load_trace(path, speed=0)


def test_a_trace_phase_needs_a_trace() -> None:
    from pytest_latency.spec.model import Phase

    with pytest.raises(SpecError, match="trace_phase"):
        Phase("replay", rate=1, duration_s=1, arrival="trace")


def test_lengths_over_the_limit_are_refused(tmp_path: Path) -> None:
    path = _jsonl(tmp_path, [{"timestamp": 0, "input_length": 2_000_000}])
    with pytest.raises(DataFileError, match=r":1: input_length: must be at most 1,000,000"):
        load_trace(path)
