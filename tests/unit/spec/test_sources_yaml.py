"""``*.slo.yaml`` keys that point at files: paths beside the spec, errors at both lines."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_latency.spec.slo_yaml import SpecFileError, load_slo_file
from tests.helpers.tiny_tokenizer import write_tiny_tokenizer

TRACE = '{"timestamp": 0, "input_length": 5, "output_length": 2}\n' * 2


def _spec(tmp_path: Path, workload: str) -> Path:
    path = tmp_path / "specs" / "replay.slo.yaml"
    path.parent.mkdir(exist_ok=True)
    path.write_text(f"workload:\n{workload}objectives:\n  - {{metric: ttft, p: 50, max: 1s}}\n")
    return path


def test_a_trace_phase_reads_its_file_beside_the_spec(tmp_path: Path) -> None:
    (tmp_path / "specs").mkdir()
    (tmp_path / "specs" / "trace.jsonl").write_text(TRACE)
    path = _spec(
        tmp_path,
        "  phases:\n    - {name: replay, arrival: trace, file: trace.jsonl, speed: 2,"
        " window: {start: 0s, duration: 10s}}\n",
    )
    phase = load_slo_file(path).workload.phases[0]
    assert phase.arrival == "trace" and phase.trace is not None
    assert len(phase.trace.requests) == 2 and phase.duration_s == 5.0


@pytest.mark.parametrize(
    ("phase", "where"),
    [
        ("{name: r, arrival: trace, file: trace.jsonl, rate: 5}", ":3: workload.phases[0].rate:"),
        ("{name: r, arrival: trace}", ":3: workload.phases[0].file: missing"),
        ("{name: r, arrival: trace, file: absent.jsonl}", ":3: workload.phases[0].file: "),
        ("{name: r, arrival: trace, file: trace.jsonl, speed: 0}", ":3: workload.phases[0].speed"),
        ("{name: r, arrival: trace, file: trace.jsonl, window: 5}", ":3: workload.phases[0].wind"),
        ("{name: r, rate: 1, duration: 1s, file: t.jsonl}", ":3: workload.phases[0].file: file: n"),
    ],
)  # fmt: skip
def test_bad_trace_phases_name_the_spec_line_and_key(
    tmp_path: Path, phase: str, where: str
) -> None:
    path = _spec(tmp_path, f"  phases:\n    - {phase}\n")
    (path.parent / "trace.jsonl").write_text(TRACE)
    with pytest.raises(SpecFileError) as caught:
        load_slo_file(path)
    assert str(caught.value).startswith(str(path) + where), str(caught.value)


def test_a_bad_trace_line_names_both_files(tmp_path: Path) -> None:
    path = _spec(tmp_path, "  phases:\n    - {name: r, arrival: trace, file: trace.jsonl}\n")
    (path.parent / "trace.jsonl").write_text(TRACE + '{"timestamp": 3}\n')
    with pytest.raises(SpecFileError) as caught:
        load_slo_file(path)
    trace = path.parent / "trace.jsonl"
    assert str(caught.value) == (
        f"{path}:3: workload.phases[0].file: {trace}:3: input_length: missing (or give input_text)"
    )


def test_prompts_and_tokenizer(tmp_path: Path) -> None:
    path = _spec(
        tmp_path,
        "  prompts: {file: data/prompts.txt}\n  tokenizer: tok\n"
        "  phases:\n    - {name: steady, rate: 1, duration: 1s}\n",
    )
    (path.parent / "data").mkdir()
    (path.parent / "data" / "prompts.txt").write_text("one\ntwo\n")
    write_tiny_tokenizer(path.parent / "tok")
    workload = load_slo_file(path).workload
    assert workload.prompts is not None and len(workload.prompts.prompts) == 2
    assert workload.tokenizer == path.parent / "tok"
    assert workload.to_json()["tokenizer"] == "tok"


@pytest.mark.parametrize(
    ("lines", "where"),
    [
        ("  prompts: {file: data.jsonl}\n", ":2: workload.prompts.format: missing"),
        ("  prompts: {file: data.jsonl, format: alpaca}\n", ":2: workload.prompts.format: must"),
        ("  prompts: {file: data.jsonl, format: sharegpt}\n", ":2: workload.prompts.file: "),
        ("  prompts: {format: text}\n", ":2: workload.prompts.file: missing"),
        ("  tokenizer: nowhere\n", ":2: workload.tokenizer: no tokenizer.json"),
    ],
)  # fmt: skip
def test_bad_sources_name_the_spec_line_and_key(tmp_path: Path, lines: str, where: str) -> None:
    path = _spec(tmp_path, lines + "  phases:\n    - {name: steady, rate: 1, duration: 1s}\n")
    (path.parent / "data.jsonl").write_text('{"id": 1}\n')
    with pytest.raises(SpecFileError) as caught:
        load_slo_file(path)
    assert str(caught.value).startswith(str(path) + where), str(caught.value)
