"""Per-request records and their one JSON codec (docs/metrics.md and docs/json.md).

This module sits below the driver, analysis and reports: the driver fills records, the
analysis reads them, and the JSON report, baselines and ``pytest-latency judge`` write and
read them through :func:`record_to_dict`, :func:`record_from_dict` and :func:`read_runs`.
The codec is derived from :class:`RequestRecord`'s fields; the document around the rows
(its schema, bytes and atomic writes) and the typed field readers are
:mod:`pytest_latency.file_format`'s.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import MISSING, Field, dataclass, field, fields
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal, get_type_hints

import numpy as np

from pytest_latency.errors import RunFileError as RunFileError  # re-exported
from pytest_latency.file_format import RUN_SCHEMA as RUN_SCHEMA  # re-exported
from pytest_latency.file_format import (
    FieldReader,
    field_reader,
    read_integer,
    read_number,
    read_run_objects,
)
from pytest_latency.file_format import plugin_version as plugin_version  # re-exported
from pytest_latency.file_format import write_runs as write_runs  # re-exported
from pytest_latency.gaps import GapSummary, summarise

# The error of every request a phase's stop rule kept from being sent (status cancelled).
STOPPED_EARLY = "stopped early: "


class Status(StrEnum):
    """How a request ended. Exactly one per offered request."""

    OK = "ok"
    HTTP_ERROR = "http_error"
    REJECTED = "rejected"  # 429/503 from admission control
    TIMEOUT = "timeout"
    CONNECTION_ERROR = "connection_error"
    PROTOCOL_ERROR = "protocol_error"
    CANCELLED = "cancelled"


# "implausible": the server's usage count was over the request's max_tokens (or absurd);
# output_tokens is the count of chunks instead, and the request has no TPOT.
TokenSource = Literal["usage", "chunks", "implausible"]
# How a request's planned ``input_tokens`` was counted: exactly, by a tokenizer, or as an
# estimate (one word per token); the server's count, when reported, is ``prompt_tokens``.
InputTokenSource = Literal["tokenizer", "estimate"]


@dataclass(slots=True)
class RequestRecord:
    """Client-side measurements of one request, in seconds from the run's start.

    ``first_token_s`` and ``end_s`` are instants on the client's monotonic clock
    relative to run start; ``ttft_s`` and ``e2e_s`` are measured from the *planned*
    send time ``intended_s`` so a late generator never hides latency.
    Server fields stay None unless the server reported them.
    """

    id: int
    phase: str
    intended_s: float
    input_tokens: int
    max_tokens: int | None = None  # the planned output cap
    trace_id: str = ""
    sent_s: float | None = None
    first_token_s: float | None = None
    end_s: float | None = None
    # Appended to as chunks arrive (a list), stored compactly once the request ended.
    itl_s: list[float] | np.ndarray = field(default_factory=list)
    # Read from a file that kept each request's gap summary but not its gaps (baselines).
    itl_summary: GapSummary | None = None
    status: Status = Status.CANCELLED
    error: str | None = None
    http_status: int | None = None
    output_tokens: int | None = None
    output_tokens_source: TokenSource | None = None
    queue_wait_s: float | None = None
    prefill_s: float | None = None
    decode_s: float | None = None
    server_source: str | None = None  # where the server durations came from, if anywhere
    # Raw server reports kept until the telemetry join reads them.
    server_timing: str | None = None  # the Server-Timing response header
    stream_timings: dict[str, object] | None = None  # llama.cpp's last-chunk ``timings``
    episode: int = 0  # which repeat of the workload's phases (``repeat: k``), from 0
    # With ``max_concurrency``: how long it waited for a free slot after its planned send
    # time (part of its latency, which is still measured from ``intended_s``).
    slot_wait_s: float | None = None
    # Multi-turn sessions: the conversation's id and this request's turn (0, 1, ...).
    session: int | None = None
    turn: int | None = None
    input_tokens_source: InputTokenSource = "estimate"
    # The server's own counts from ``usage``: prompt tokens, and how many of them it
    # served from its prefix cache (``prompt_tokens_details.cached_tokens``); None when
    # it did not report them.
    prompt_tokens: int | None = None
    cached_tokens: int | None = None
    # With ``--latency-record-content`` only: the request's own prompt (a session turn's
    # newest message) and the text it received, kept even for a failed request.
    prompt: str | None = None
    content: str | None = None
    # Reasoning models and multi-token chunks (docs/metrics.md). ``ttfo_s``: the first
    # *answer* token (not reasoning) minus ``intended_s``; equal to ``ttft_s`` when nothing
    # streamed before the answer, None when no answer token came.
    ttfo_s: float | None = None
    # From usage.completion_tokens_details.reasoning_tokens where given, else the count of
    # reasoning chunks; None when the stream carried no reasoning.
    reasoning_tokens: int | None = None
    # First reasoning chunk to first answer chunk; None without reasoning (or answer).
    reasoning_s: float | None = None
    # Tokens in each content-bearing chunk (reasoning chunks included, aligned with the
    # chunks whose gaps are ``itl_s``) where the server's per-chunk usage says so (vLLM's
    # ``continuous_usage_stats``); None: not reported, one token per chunk was assumed.
    chunk_tokens: list[int] | None = None
    # Retries of a rejected request (workload ``retry:``, docs/retries.md): one record
    # whatever the attempts; its latency still counts from the first planned send.
    attempts: int = 1  # sends of this request (1: never retried)
    retry_after_s: float | None = None  # the last Retry-After the server gave, if any
    retry_wait_s: float = 0.0  # waited between attempts, in all
    # The workload's service class the request belongs to (``class`` in the JSON); None
    # without classes.
    service_class: str | None = None

    @property
    def ok(self) -> bool:
        """The request completed (status ``ok``)."""
        return self.status is Status.OK

    @property
    def never_sent(self) -> bool:
        """Cancelled before it was sent (a stop rule, a decided probe, the run's end or a
        lost generator kept it back): counted as planned, but never offered to the
        server, so neither a latency sample nor an error (docs/metrics.md)."""
        return self.status is Status.CANCELLED and self.sent_s is None

    @property
    def schedule_lag_s(self) -> float | None:
        """How late the generator sent it (actual minus planned send time, less any wait
        for a concurrency slot, which is the cap's doing); None if unsent."""
        if self.sent_s is None:
            return None
        return self.sent_s - self.intended_s - (self.slot_wait_s or 0.0)

    @property
    def ttft_s(self) -> float | None:
        """Time to first content token, from the planned send time; None if none came."""
        return None if self.first_token_s is None else self.first_token_s - self.intended_s

    @property
    def e2e_s(self) -> float | None:
        """End to end, from the planned send time to the last byte; None if it never ended."""
        return None if self.end_s is None else self.end_s - self.intended_s

    @property
    def after_queue_s(self) -> float | None:
        """TTFT minus the server-reported queue wait, per request (never from percentiles)."""
        ttft = self.ttft_s
        if ttft is None or self.queue_wait_s is None:
            return None
        return ttft - self.queue_wait_s

    @property
    def unattributed_s(self) -> float | None:
        """The part of TTFT the server did not account for (queue wait and prefill).

        Only what the server reported is subtracted: with queue wait alone, the rest of
        TTFT is unattributed, not "prefill". None when the server reported neither.
        """
        ttft = self.ttft_s
        if ttft is None or (self.queue_wait_s is None and self.prefill_s is None):
            return None
        return ttft - (self.queue_wait_s or 0.0) - (self.prefill_s or 0.0)

    @property
    def tpot_s(self) -> float | None:
        """(e2e - ttft) / (output_tokens - 1), per request; None when undefined, and when
        the server's token count was implausible."""
        if self.first_token_s is None or self.end_s is None or not self.output_tokens:
            return None
        if self.output_tokens_source == "implausible":
            return None
        if self.output_tokens < 2:
            return None
        return (self.end_s - self.first_token_s) / (self.output_tokens - 1)


# The codec below is derived from RequestRecord's fields: a field added there is written
# and read (and checked by its type) with nothing to list here. Not written: the raw server
# reports, which the telemetry join reads before any file is; the gaps and their summary,
# and the content, which have their own rules.
_NOT_WRITTEN = frozenset({"server_timing", "stream_timings"})
_GAPS_AND_CONTENT = ("itl_s", "itl_summary", "prompt", "content")
# Written for people and other tools, derived from the other fields by every reader.
DERIVED_FIELDS = ("ttft_s", "e2e_s", "tpot_s", "after_queue_s", "unattributed_s")
_WRITTEN = tuple(
    spec.name
    for spec in fields(RequestRecord)
    if spec.name not in _NOT_WRITTEN and spec.name not in _GAPS_AND_CONTENT
)
_NUMBER_TYPES = frozenset({int, float})  # what JSON numbers parse to (bool is not one)
# Fields whose JSON key is not their name (``class`` is a Python keyword).
_JSON_KEYS = {"service_class": "class"}


def record_to_dict(
    record: RequestRecord, summary: GapSummary | None = None, *, keep_gaps: bool = True
) -> dict[str, Any]:
    """One request as the JSON object of a run's ``requests`` (docs/json.md).

    ``summary``: the record's gap summary when the caller computed it for many records
    at once (:func:`records_to_dicts`). Without ``keep_gaps`` the gaps themselves are
    left out (a saved baseline): ``itl_median_s``, ``itl_max_s`` and ``itl_count`` are
    all that verdicts read.
    """
    if summary is None:
        (summary,) = summarise([record.itl_s], [record.itl_summary])
    row = {_JSON_KEYS.get(name, name): getattr(record, name) for name in _WRITTEN}
    row["status"] = record.status.value
    row["itl_median_s"] = summary.median_s if summary else None
    row["itl_max_s"] = summary.max_s if summary else None
    row["itl_count"] = summary.count if summary else 0
    for name in DERIVED_FIELDS:
        row[name] = getattr(record, name)
    if record.prompt is not None:  # only with --latency-record-content: absent otherwise
        row["prompt"], row["content"] = record.prompt, record.content
    if keep_gaps and len(record.itl_s):
        row["itl_s"] = [float(gap) for gap in record.itl_s]
    return row


def records_to_dicts(
    records: Sequence[RequestRecord], *, keep_gaps: bool = True
) -> list[dict[str, Any]]:
    """:func:`record_to_dict` for a run's records, the gap summaries computed at once."""
    summaries = summarise([r.itl_s for r in records], [r.itl_summary for r in records])
    return [
        record_to_dict(record, summary, keep_gaps=keep_gaps)
        for record, summary in zip(records, summaries, strict=True)
    ]


_NOT_IN_BASELINES = ("itl_s", "prompt", "content")  # verdicts never read them
# Null in most rows (no reasoning, no per-chunk usage): left out of a baseline row when
# null, which reads back as the same default.
_LEFT_OUT_WHEN_NULL = (
    "ttfo_s", "reasoning_tokens", "reasoning_s", "chunk_tokens", "retry_after_s",
)  # fmt: skip
_NANOSECOND_DIGITS = 9  # the client clock's resolution: rounding there loses nothing real


def baseline_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A request row as a saved baseline keeps it: the gaps' summary instead of the gaps,
    no derived fields, times rounded to the nanosecond (about a tenth of the full row)."""
    compact = {
        name: round(value, _NANOSECOND_DIGITS) if type(value) is float else value
        for name, value in row.items()
        if name not in DERIVED_FIELDS
        and name not in _NOT_IN_BASELINES
        and not (value is None and name in _LEFT_OUT_WHEN_NULL)
    }
    gaps = row.get("itl_s")
    if isinstance(gaps, list) and gaps and "itl_median_s" not in compact:  # an older row
        compact["itl_median_s"] = round(float(np.median(gaps)), _NANOSECOND_DIGITS)
        compact["itl_max_s"] = round(float(max(gaps)), _NANOSECOND_DIGITS)
        compact["itl_count"] = len(gaps)
    return compact


def record_from_dict(row: Mapping[str, Any]) -> RequestRecord:
    """A record from its JSON object; ValueError naming the field that is wrong.

    A missing or null field takes the record's default (files written before it existed),
    except those without one and ``status``, which every request has.
    """
    if not isinstance(row, Mapping):
        raise ValueError(f"a request must be an object, got {type(row).__name__}")
    values: dict[str, Any] = {}
    for name, read, required in _READERS:
        value = read(row, _JSON_KEYS.get(name, name), required)
        if value is not None:
            values[name] = value
    gaps = row.get("itl_s") or []
    # A set of the gaps' types, not a check per gap: a run file holds millions of gaps,
    # and this is most of the time spent reading one after the JSON parse itself.
    if not isinstance(gaps, list) or not {type(gap) for gap in gaps} <= _NUMBER_TYPES:
        raise ValueError("itl_s must be a list of numbers")
    return RequestRecord(
        itl_s=np.asarray(gaps, dtype=np.float64),
        itl_summary=None if gaps else _gap_summary(row),
        **values,
    )


def _gap_summary(row: Mapping[str, Any]) -> GapSummary | None:
    """The stored summary of a row without gaps; None when it had no gap."""
    count = read_integer(row, "itl_count", False)
    if not count:
        return None
    median = read_number(row, "itl_median_s", True)
    largest = read_number(row, "itl_max_s", True)
    assert median is not None and largest is not None  # required
    if count < 0 or largest < median:
        raise ValueError(
            f"itl_count {count}, itl_median_s {median}, itl_max_s {largest}: inconsistent"
        )
    return GapSummary(median, largest, count)


def _readers() -> tuple[tuple[str, FieldReader, bool], ...]:
    """(field, reader, required) for every field a file holds. Required: the fields
    without a default, and the status (``cancelled`` only while a record is filled)."""
    hints = get_type_hints(RequestRecord)
    return tuple(
        (spec.name, field_reader(hints[spec.name], f"RequestRecord.{spec.name}"), _required(spec))
        for spec in fields(RequestRecord)
        if spec.name not in _NOT_WRITTEN and spec.name not in ("itl_s", "itl_summary")
    )


def _required(spec: Field[Any]) -> bool:
    return spec.name == "status" or (spec.default is MISSING and spec.default_factory is MISSING)


_READERS = _readers()


@dataclass(frozen=True, slots=True)
class StoredRun:
    """One run read back from a ``--latency-json`` file (or a baseline file)."""

    test: str
    server: dict[str, Any]
    workload: dict[str, Any] | None  # the workload as given; None in older files
    valid: bool  # False: the generator fell behind, or the run was cut short
    records: list[RequestRecord]
    document: dict[str, Any]  # the run's whole JSON object, as read


def read_runs(path: Path) -> list[StoredRun]:
    """Every run of a ``pytest-latency/1`` file (gzipped or not) in file order.

    RunFileError names the file and what is wrong with it.
    """
    return [_stored_run(path, index, run) for index, run in enumerate(read_run_objects(path))]


_RUN_FIELD_KINDS: dict[str, type] = {
    "server": dict,
    "workload": dict,
    "generator": dict,
    "phases": list,
    "objectives": list,
}


def _stored_run(path: Path, index: int, run: object) -> StoredRun:
    where = f"{path}: runs[{index}]"
    if not isinstance(run, dict) or not isinstance(run.get("test"), str):
        raise RunFileError(f"{where}: a run must be an object with a 'test' name")
    rows = run.get("requests")
    if not isinstance(rows, list):
        raise RunFileError(f"{where} ({run['test']}): 'requests' must be a list")
    for name, kind in _RUN_FIELD_KINDS.items():  # the shapes every reader relies on
        value = run.get(name)
        if value is not None and not isinstance(value, kind):
            shape = "an object" if kind is dict else "a list"
            raise RunFileError(f"{where} ({run['test']}): '{name}' must be {shape}")
    records = []
    for number, row in enumerate(rows):
        try:
            records.append(record_from_dict(row))
        except ValueError as error:
            raise RunFileError(f"{where} ({run['test']}): requests[{number}]: {error}") from None
    generator = run.get("generator")
    healthy = not isinstance(generator, dict) or generator.get("valid", True) is not False
    workload = run.get("workload")
    return StoredRun(
        test=run["test"],
        server=dict(run.get("server") or {}),
        workload=workload if isinstance(workload, dict) else None,
        valid=healthy and not run.get("interrupted", False),
        records=records,
        document=run,
    )
