"""Per-request records and their one JSON codec (docs/metrics.md and docs/json.md).

This module sits below the driver, analysis and reports: the driver fills records, the
analysis reads them, and the JSON report, baselines and ``pytest-latency judge`` write and
read them through :func:`record_to_dict`, :func:`record_from_dict` and :func:`read_runs`.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Literal, get_args

import numpy as np

from pytest_latency.errors import RunFileError as RunFileError  # re-exported
from pytest_latency.file_format import decode, encode
from pytest_latency.file_format import plugin_version as plugin_version  # re-exported
from pytest_latency.gaps import GapSummary, summarise

RUN_SCHEMA = "pytest-latency/1"
# The error of every request a phase's stop rule kept from being sent (status cancelled).
STOPPED_EARLY = "stopped early: "
# Baselines written before one format served both (read, never written).
_LEGACY_BASELINE_SCHEMA = "pytest-latency-baseline/1"


class Status(StrEnum):
    """How a request ended. Exactly one per offered request."""

    OK = "ok"
    HTTP_ERROR = "http_error"
    REJECTED = "rejected"  # 429/503 from admission control
    TIMEOUT = "timeout"
    CONNECTION_ERROR = "connection_error"
    PROTOCOL_ERROR = "protocol_error"
    CANCELLED = "cancelled"


TokenSource = Literal["usage", "chunks"]
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

    @property
    def ok(self) -> bool:
        """The request completed (status ``ok``)."""
        return self.status is Status.OK

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
        """(e2e - ttft) / (output_tokens - 1), per request; None when undefined."""
        if self.first_token_s is None or self.end_s is None or not self.output_tokens:
            return None
        if self.output_tokens < 2:
            return None
        return (self.end_s - self.first_token_s) / (self.output_tokens - 1)


# Fields a reader restores; the derived ones (ttft_s, e2e_s, ...) are written for people
# and other tools, and recomputed from these on reading.
_INT_FIELDS = ("id", "input_tokens")
_OPTIONAL_INT_FIELDS = (
    "max_tokens", "http_status", "output_tokens", "session", "turn", "prompt_tokens",
    "cached_tokens",
)  # fmt: skip
_OPTIONAL_FLOAT_FIELDS = (
    "sent_s", "first_token_s", "end_s", "queue_wait_s", "prefill_s", "decode_s",
    "slot_wait_s",
)  # fmt: skip
_OPTIONAL_TEXT_FIELDS = ("error", "server_source", "prompt", "content")
_NUMBER_TYPES = frozenset({int, float})  # what JSON numbers parse to (bool is not one)
_STATUS_VALUES = frozenset(status.value for status in Status)


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
    row = {
        "id": record.id,
        "trace_id": record.trace_id,
        "phase": record.phase,
        "episode": record.episode,
        "status": record.status.value,
        "error": record.error,
        "http_status": record.http_status,
        "intended_s": record.intended_s,
        "sent_s": record.sent_s,
        "slot_wait_s": record.slot_wait_s,
        "first_token_s": record.first_token_s,
        "end_s": record.end_s,
        "ttft_s": record.ttft_s,
        "e2e_s": record.e2e_s,
        "itl_median_s": summary.median_s if summary else None,
        "itl_max_s": summary.max_s if summary else None,
        "itl_count": summary.count if summary else 0,
        "tpot_s": record.tpot_s,
        "queue_wait_s": record.queue_wait_s,
        "prefill_s": record.prefill_s,
        "decode_s": record.decode_s,
        "after_queue_s": record.after_queue_s,
        "unattributed_s": record.unattributed_s,
        "server_source": record.server_source,
        "input_tokens": record.input_tokens,
        "max_tokens": record.max_tokens,
        "output_tokens": record.output_tokens,
        "output_tokens_source": record.output_tokens_source,
        "input_tokens_source": record.input_tokens_source,
        "prompt_tokens": record.prompt_tokens,
        "cached_tokens": record.cached_tokens,
        "session": record.session,
        "turn": record.turn,
    }
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


# Written for people and other tools, derived from the other fields by every reader.
DERIVED_FIELDS = ("ttft_s", "e2e_s", "tpot_s", "after_queue_s", "unattributed_s")
_NOT_IN_BASELINES = ("itl_s", "prompt", "content")  # verdicts never read them
_NANOSECOND_DIGITS = 9  # the client clock's resolution: rounding there loses nothing real


def baseline_row(row: Mapping[str, Any]) -> dict[str, Any]:
    """A request row as a saved baseline keeps it: the gaps' summary instead of the gaps,
    no derived fields, times rounded to the nanosecond (about a tenth of the full row)."""
    compact = {
        name: round(value, _NANOSECOND_DIGITS) if type(value) is float else value
        for name, value in row.items()
        if name not in DERIVED_FIELDS and name not in _NOT_IN_BASELINES
    }
    gaps = row.get("itl_s")
    if isinstance(gaps, list) and gaps and "itl_median_s" not in compact:  # an older row
        compact["itl_median_s"] = round(float(np.median(gaps)), _NANOSECOND_DIGITS)
        compact["itl_max_s"] = round(float(max(gaps)), _NANOSECOND_DIGITS)
        compact["itl_count"] = len(gaps)
    return compact


def record_from_dict(row: Mapping[str, Any]) -> RequestRecord:
    """A record from its JSON object; ValueError naming the field that is wrong."""
    if not isinstance(row, Mapping):
        raise ValueError(f"a request must be an object, got {type(row).__name__}")
    values: dict[str, Any] = {}
    for name in _INT_FIELDS:
        values[name] = _integer(row, name, required=True)
    for name in _OPTIONAL_INT_FIELDS:
        values[name] = _integer(row, name, required=False)
    for name in _OPTIONAL_FLOAT_FIELDS:
        values[name] = _number(row, name, required=False)
    for name in _OPTIONAL_TEXT_FIELDS:
        values[name] = _text(row, name, required=False)
    source = row.get("output_tokens_source")
    if source is not None and source not in get_args(TokenSource):
        raise ValueError(f"output_tokens_source must be usage or chunks, got {source!r}")
    input_source = row.get("input_tokens_source", "estimate")
    if input_source not in get_args(InputTokenSource):
        raise ValueError(f"input_tokens_source must be tokenizer or estimate, got {input_source!r}")
    gaps = row.get("itl_s") or []
    # A set of the gaps' types, not a check per gap: a run file holds millions of gaps,
    # and this is most of the time spent reading one after the JSON parse itself.
    if not isinstance(gaps, list) or not {type(gap) for gap in gaps} <= _NUMBER_TYPES:
        raise ValueError("itl_s must be a list of numbers")
    summary = None if gaps else _gap_summary(row)
    status_text = row.get("status")
    if status_text not in _STATUS_VALUES:
        raise ValueError(f"status must be one of {', '.join(Status)}, got {status_text!r}")
    status = Status(status_text)
    return RequestRecord(
        phase=_text(row, "phase", required=True) or "",
        intended_s=_number(row, "intended_s", required=True) or 0.0,
        trace_id=_text(row, "trace_id", required=False) or "",
        episode=_integer(row, "episode", required=False) or 0,
        status=status,
        output_tokens_source=source,
        input_tokens_source=input_source,
        itl_s=np.asarray(gaps, dtype=np.float64),
        itl_summary=summary,
        **values,
    )


def _gap_summary(row: Mapping[str, Any]) -> GapSummary | None:
    """The stored summary of a row without gaps; None when it had no gap."""
    count = _integer(row, "itl_count", required=False)
    if not count:
        return None
    median = _number(row, "itl_median_s", required=True)
    largest = _number(row, "itl_max_s", required=True)
    assert median is not None and largest is not None  # required=True
    if count < 0 or largest < median:
        raise ValueError(
            f"itl_count {count}, itl_median_s {median}, itl_max_s {largest}: inconsistent"
        )
    return GapSummary(median, largest, count)


def _integer(row: Mapping[str, Any], name: str, *, required: bool) -> int | None:
    value = row.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    return value


def _number(row: Mapping[str, Any], name: str, *, required: bool) -> float | None:
    value = row.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def _text(row: Mapping[str, Any], name: str, *, required: bool) -> str | None:
    value = row.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string, got {value!r}")
    return value


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
    try:
        document = decode(path.read_bytes())
    except FileNotFoundError:
        raise RunFileError(f"{path}: no such file") from None
    except (OSError, ValueError) as error:
        raise RunFileError(f"{path}: not a readable JSON file ({error})") from None
    if not isinstance(document, dict) or document.get("schema") not in (
        RUN_SCHEMA,
        _LEGACY_BASELINE_SCHEMA,
    ):
        raise RunFileError(f"{path}: not a pytest-latency file (schema {RUN_SCHEMA} expected)")
    runs = document.get("runs")
    if isinstance(runs, dict):  # the legacy baseline layout: runs keyed by test
        runs = [{"test": key, **value} for key, value in runs.items() if isinstance(value, dict)]
    if not isinstance(runs, list):
        raise RunFileError(f"{path}: 'runs' must be a list")
    return [_stored_run(path, index, run) for index, run in enumerate(runs)]


def _stored_run(path: Path, index: int, run: object) -> StoredRun:
    where = f"{path}: runs[{index}]"
    if not isinstance(run, dict) or not isinstance(run.get("test"), str):
        raise RunFileError(f"{where}: a run must be an object with a 'test' name")
    rows = run.get("requests")
    if not isinstance(rows, list):
        raise RunFileError(f"{where} ({run['test']}): 'requests' must be a list")
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


def write_runs(path: Path, runs: Iterable[Mapping[str, Any]]) -> None:
    """Write a ``pytest-latency/1`` document atomically; the folder is created if missing.

    Each request is one line (a 10,000-request run stays readable with ``grep`` and
    small); a name ending in ``.gz`` is gzipped. OSError or ValueError (a non-finite
    number) leave any earlier file as it was.
    """
    document = {"schema": RUN_SCHEMA, "plugin_version": plugin_version(), "runs": list(runs)}
    data = encode(document, gzipped=path.name.endswith(".gz"))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)
