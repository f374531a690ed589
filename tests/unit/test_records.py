"""A request's JSON row is derived from RequestRecord's fields: every field is written and
read back, each is checked by its type, and the row holds exactly the documented fields
(docs/json.md, "Requests")."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from pytest_latency.file_format import RUN_SCHEMA, encode, field_reader
from pytest_latency.gaps import GapSummary
from pytest_latency.records import (
    RequestRecord,
    RunFileError,
    Status,
    baseline_row,
    read_runs,
    record_from_dict,
    record_to_dict,
)

# docs/json.md lists these; the derived ones are recomputed by readers.
DOCUMENTED = {
    "id", "trace_id", "phase", "episode", "status", "error", "http_status", "intended_s",
    "sent_s", "slot_wait_s", "first_token_s", "end_s", "ttft_s", "e2e_s", "itl_median_s",
    "itl_max_s", "itl_count", "tpot_s", "queue_wait_s", "prefill_s", "decode_s",
    "after_queue_s", "unattributed_s", "server_source", "input_tokens", "input_tokens_source",
    "max_tokens", "output_tokens", "output_tokens_source", "prompt_tokens", "cached_tokens",
    "session", "turn", "ttfo_s", "reasoning_tokens", "reasoning_s", "chunk_tokens",
    "attempts", "retry_after_s", "retry_wait_s", "class",
}  # fmt: skip
# Raw server reports: the telemetry join reads them before anything is written.
NEVER_WRITTEN = {"server_timing", "stream_timings"}


def every_field_set() -> RequestRecord:
    """A record whose every field differs from its default, so a field the codec dropped
    would read back as the default and show."""
    return RequestRecord(
        id=7,
        phase="burst",
        intended_s=1.5,
        input_tokens=300,
        max_tokens=64,
        trace_id="ab" * 16,
        sent_s=1.501,
        first_token_s=1.75,
        end_s=2.5,
        itl_s=[0.01, 0.02, 0.03],
        status=Status.OK,
        error="a warning kept on an ok request",
        http_status=200,
        output_tokens=4,
        output_tokens_source="usage",
        queue_wait_s=0.1,
        prefill_s=0.05,
        decode_s=0.6,
        server_source="otlp",
        episode=2,
        slot_wait_s=0.001,
        session=3,
        turn=1,
        input_tokens_source="tokenizer",
        prompt_tokens=310,
        cached_tokens=256,
        ttfo_s=0.4,
        reasoning_tokens=20,
        reasoning_s=0.15,
        chunk_tokens=[1, 1, 1, 1],
        prompt="hello",
        content="world",
    )


def round_trip(record: RequestRecord) -> RequestRecord:
    return record_from_dict(json.loads(json.dumps(record_to_dict(record))))


def test_every_field_survives_a_round_trip_through_json() -> None:
    record = every_field_set()
    again = round_trip(record)
    for spec in dataclasses.fields(RequestRecord):
        if spec.name in NEVER_WRITTEN:
            continue
        expected, read = getattr(record, spec.name), getattr(again, spec.name)
        if spec.name == "itl_s":
            assert list(read) == expected
        else:
            assert read == expected, spec.name


def test_the_row_holds_the_documented_fields_and_content_only_when_recorded() -> None:
    row = record_to_dict(every_field_set())
    assert set(row) == DOCUMENTED | {"prompt", "content", "itl_s"}
    assert row["status"] == "ok" and type(row["status"]) is str
    plain = dataclasses.replace(every_field_set(), prompt=None, content=None, itl_s=[])
    assert set(record_to_dict(plain)) == DOCUMENTED


def test_a_baseline_row_reads_back_with_the_gap_summary_instead_of_the_gaps() -> None:
    record = every_field_set()
    again = record_from_dict(baseline_row(record_to_dict(record)))
    assert len(again.itl_s) == 0
    assert again.itl_summary == GapSummary(0.02, 0.03, 3)
    assert again.ttft_s == pytest.approx(record.ttft_s)


def test_a_row_with_only_the_required_fields_reads_with_the_defaults() -> None:
    row = {"id": 1, "phase": "steady", "intended_s": 0.5, "input_tokens": 9, "status": "timeout"}
    record = record_from_dict(row)
    expected = RequestRecord(1, "steady", 0.5, 9, status=Status.TIMEOUT)
    assert dataclasses.replace(record, itl_s=[]) == expected
    for name in row:
        with pytest.raises(ValueError, match=f"^{name} must be"):
            record_from_dict({key: value for key, value in row.items() if key != name})


READABLE = [
    spec.name
    for spec in dataclasses.fields(RequestRecord)
    if spec.name not in NEVER_WRITTEN | {"itl_summary"}
]


@pytest.mark.parametrize("name", READABLE)
def test_a_field_of_the_wrong_type_is_an_error_naming_it(name: str) -> None:
    row = record_to_dict(every_field_set())
    key = {"service_class": "class"}.get(name, name)  # a Python keyword in the JSON
    with pytest.raises(ValueError, match=f"^{key} must be"):
        record_from_dict({**row, key: [True]})


def test_numbers_must_be_finite_and_booleans_are_not_integers() -> None:
    row = record_to_dict(every_field_set())
    with pytest.raises(ValueError, match="end_s must be a finite number"):
        record_from_dict({**row, "end_s": float("inf")})
    with pytest.raises(ValueError, match="http_status must be an integer"):
        record_from_dict({**row, "http_status": True})
    with pytest.raises(ValueError, match="status must be one of ok, http_error"):
        record_from_dict({**row, "status": "fine"})


def test_a_field_type_json_cannot_hold_has_no_reader() -> None:
    with pytest.raises(TypeError, match="Thing when: no JSON reader"):
        field_reader(dict[str, int] | None, "Thing when")
    read = field_reader(float | None, "Thing.x")
    assert (read({"x": 1}, "x", False), read({}, "x", False)) == (1.0, None)


def test_runs_are_read_back_gzipped_and_a_legacy_baseline_layout_still_reads(
    tmp_path: Path,
) -> None:
    # Written by hand, without plugin_version: the schema check of conftest.py is for
    # whole runs the plugin writes (write_runs is exercised by the report tests).
    rows = [record_to_dict(every_field_set())]
    path = tmp_path / "runs.json.gz"
    path.write_bytes(
        encode({"schema": RUN_SCHEMA, "runs": [{"test": "t::a", "requests": rows}]}, gzipped=True)
    )
    (run,) = read_runs(path)
    assert (run.test, run.valid, run.records[0].content) == ("t::a", True, "world")
    legacy = tmp_path / "legacy.json"
    legacy.write_text(
        json.dumps({"schema": "pytest-latency-baseline/1", "runs": {"t::b": {"requests": rows}}})
    )
    assert [run.test for run in read_runs(legacy)] == ["t::b"]
    other = tmp_path / "other.json"
    other.write_text(json.dumps({"schema": "x", "runs": []}))
    with pytest.raises(RunFileError, match=f"schema {RUN_SCHEMA} expected"):
        read_runs(other)
