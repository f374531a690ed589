"""Trace files for ``arrival: trace``: one request per line, sent at the trace's instants.

Layouts (recognised by the first non-blank character: ``{`` is JSON Lines, else CSV):

- Mooncake: ``{"timestamp": <ms>, "input_length": N, "output_length": N, "hash_ids": [...]}``
- AIPerf fixed schedule: the same keys, with ``input_text`` (the exact prompt) allowed in
  place of ``input_length`` and ``output_length`` optional (the workload's
  ``output_tokens`` then), plus an optional ``session_id``.
- CSV with a header naming the same columns (``timestamp``, ``input_length``, optional
  ``output_length``, ``session_id``, and ``hash_ids`` as numbers separated by spaces).

Timestamps are milliseconds unless the phase says ``time_unit: s``; a trace whose
timestamps look like seconds under the default is refused with that fix
(:func:`check_unit`). Lines may come in any order (they are sorted, stably).
Each request's offset is its instant minus the first kept instant, divided by ``speed``:
the first request goes out at the phase start (docs/workloads.md "Trace replay").
"""

from __future__ import annotations

import csv
import itertools
import math
from dataclasses import dataclass
from pathlib import Path

from pytest_latency.spec import checks as check
from pytest_latency.spec.files import (
    MAX_TOKENS,
    DataFileError,
    DigestingReader,
    json_line,
    whole_number,
)
from pytest_latency.spec.phase import MAX_DURATION_S, MAX_RATE, Phase, StopRule
from pytest_latency.spec.trace_lines import Trace as Trace  # re-exported
from pytest_latency.spec.trace_lines import TraceRequest

MAX_SPEED = 1000.0
MIN_SPEED = 0.001
MIN_TRACE_DURATION_S = 0.001  # a trace of one instant still lasts this long
_COLUMNS = ("timestamp", "input_length", "output_length", "session_id", "hash_ids")


@dataclass(slots=True)
class _Row:
    timestamp_ms: float
    input_tokens: int | None
    output_tokens: int | None
    line: int
    text: str | None
    hash_ids: tuple[int, ...]
    session: object


def _timestamp(path: Path, line: int, value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise DataFileError(path, line, "timestamp", f"must be milliseconds, got {value!r}")
    if value < 0:
        raise DataFileError(path, line, "timestamp", f"must be >= 0, got {value!r}")
    return float(value)


def _hash_ids(path: Path, line: int, value: object) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise DataFileError(path, line, "hash_ids", f"must be a list of numbers, got {value!r}")
    return tuple(whole_number(path, line, "hash_ids", item) for item in value)


def _row(path: Path, line: int, record: dict[str, object]) -> _Row:
    """One request from a JSON object or a CSV row (values already typed)."""
    if "timestamp" not in record:
        raise DataFileError(path, line, "timestamp", "missing (milliseconds from the trace start)")
    text = record.get("input_text")
    if text is not None and not isinstance(text, str):
        raise DataFileError(path, line, "input_text", f"must be text, got {text!r}")
    if "input_length" not in record and text is None:
        raise DataFileError(path, line, "input_length", "missing (or give input_text)")
    inputs = record.get("input_length")
    outputs = record.get("output_length")
    return _Row(
        timestamp_ms=_timestamp(path, line, record["timestamp"]),
        input_tokens=None
        if inputs is None
        else whole_number(path, line, "input_length", inputs, 1, MAX_TOKENS),
        output_tokens=None
        if outputs is None
        else whole_number(path, line, "output_length", outputs, 1, MAX_TOKENS),
        line=line,
        text=text,
        hash_ids=_hash_ids(path, line, record["hash_ids"]) if "hash_ids" in record else (),
        session=record.get("session_id"),
    )


def _csv_value(path: Path, line: int, key: str, text: str) -> object:
    if key == "session_id" or text == "":
        return text or None
    if key == "hash_ids":
        return [_csv_number(path, line, key, part) for part in text.replace(";", " ").split()]
    return _csv_number(path, line, key, text)


def _csv_number(path: Path, line: int, key: str, text: str) -> object:
    try:
        return int(text) if text.lstrip("-").isdigit() else float(text)
    except ValueError:
        raise DataFileError(path, line, key, f"must be a number, got {text!r}") from None


def _csv_columns(path: Path, line: int, header: str) -> list[str]:
    columns = [name.strip() for name in next(csv.reader([header]))]
    for name in columns:
        if name not in _COLUMNS:
            allowed = ", ".join(_COLUMNS)
            raise DataFileError(path, line, name, f"unknown column; allowed: {allowed}")
    return columns


def _csv_row(path: Path, line: int, text: str, columns: list[str]) -> _Row:
    cells = next(csv.reader([text]))
    if len(cells) != len(columns):
        problem = f"expected {len(columns)} values as in the header, got {len(cells)}"
        raise DataFileError(path, line, "(csv)", problem)
    record = {
        key: _csv_value(path, line, key, cell.strip())
        for key, cell in zip(columns, cells, strict=True)
    }
    return _row(path, line, {key: value for key, value in record.items() if value is not None})


def _read_rows(path: Path) -> tuple[list[_Row], str]:
    """Every request of the file, parsed as it streams by (only the rows are kept)."""
    reader = DigestingReader(path)
    rows: list[_Row] = []
    columns: list[str] | None = None
    jsonl: bool | None = None
    for number, text in reader.lines():
        if not text.strip():
            continue
        if jsonl is None:
            jsonl = text.lstrip().startswith("{")
            if not jsonl:
                columns = _csv_columns(path, number, text)
                continue
        if columns is None:
            rows.append(_row(path, number, json_line(path, number, text)))
        else:
            rows.append(_csv_row(path, number, text, columns))
    if not rows:
        raise DataFileError(path, 1, "(file)", "the trace has no requests")
    return rows, reader.sha256


def _sessions(rows: list[_Row]) -> list[tuple[int | None, int | None]]:
    """(session, turn) per row: session ids (any text or number) as 0, 1, ... by first
    appearance, and each line's turn as its place among its session's lines in time."""
    numbers: dict[str, int] = {}
    turns: dict[int, int] = {}
    placed: list[tuple[int | None, int | None]] = []
    for row in rows:
        if row.session is None:
            placed.append((None, None))
            continue
        session = numbers.setdefault(str(row.session), len(numbers))
        turns[session] = turns.get(session, -1) + 1
        placed.append((session, turns[session]))
    return placed


def _window(
    rows: list[_Row], window: tuple[float, float] | None, path: Path
) -> tuple[list[_Row], float | None]:
    """The rows inside the window (trace time from its first instant) and the window's end."""
    if window is None:
        return rows, None
    first = rows[0].timestamp_ms
    start_ms, end_ms = first + window[0] * 1e3, first + (window[0] + window[1]) * 1e3
    kept = [row for row in rows if start_ms <= row.timestamp_ms < end_ms]
    if not kept:
        raise DataFileError(path, 1, "window", "no request of the trace falls in the window")
    return kept, end_ms


TIME_UNITS = ("ms", "s")
#: Under the default (ms), a trace whose instants all lie below this many units, with
#: steps below one unit, was written in seconds: 0.066, 0.132, ... is 66 ms apart.
SECONDS_LIKE_MAX = 500.0
#: Under the default (ms), a trace offering more requests per second than this (before
#: speed) is far beyond any one endpoint's traffic: its instants were seconds.
IMPLAUSIBLE_RATE = 2000.0


def check_unit(rows: list[_Row], path: Path, declared: bool) -> None:
    """DataFileError when undeclared millisecond timestamps look like seconds."""
    if declared or len(rows) < 2:
        return
    instants = [row.timestamp_ms for row in rows]
    gaps = [later - earlier for earlier, later in itertools.pairwise(instants) if later > earlier]
    span_ms = instants[-1] - instants[0]
    small = instants[-1] < SECONDS_LIKE_MAX and any(gap < 1.0 for gap in gaps)
    rate = (len(rows) - 1) / (span_ms / 1e3) if span_ms > 0 else math.inf
    if not small and not (len(rows) >= 10 and rate > IMPLAUSIBLE_RATE):
        return
    shown = ", ".join(f"{value:g}" for value in instants[:3])
    raise DataFileError(
        path,
        rows[0].line,
        "timestamp",
        f"the timestamp column looks like seconds ({shown}, ...: {len(rows)} requests over"
        f" {span_ms:g} ms, {rate:,.0f}/s read as milliseconds): add time_unit: s to the"
        " trace phase (time_unit: ms if they are milliseconds)",
    )


def load_trace(
    path: Path,
    *,
    speed: float = 1.0,
    window: tuple[float, float] | None = None,
    name: str = "",
    time_unit: str | None = None,
) -> Trace:
    """Read and place a trace; DataFileError names the file, line and key of a bad line.

    ``time_unit``: ``"ms"`` (the default) or ``"s"``, the unit of the timestamps.
    """
    check.number("speed", speed, at_least=MIN_SPEED, at_most=MAX_SPEED, what="trace speed")
    if window is not None:
        check.number("window", window[0], at_least=0, at_most=MAX_DURATION_S, what="window start")
        check.number("window", window[1], above=0, at_most=MAX_DURATION_S, what="window duration")
    unit = check.choice("time_unit", time_unit or "ms", TIME_UNITS, what="trace time_unit")
    rows, digest = _read_rows(path)
    if unit == "s":
        for row in rows:
            row.timestamp_ms *= 1e3
    rows.sort(key=lambda row: row.timestamp_ms)  # stable: equal instants keep file order
    check_unit(rows, path, declared=time_unit is not None)
    rows, end_ms = _window(rows, window, path)
    first, last = rows[0].timestamp_ms, rows[-1].timestamp_ms
    if end_ms is not None:  # the phase lasts to the window's end
        span_s = (end_ms - first) / 1e3
    else:  # the span plus one mean gap, like a rate x duration phase
        span_s = (last - first) / 1e3 * (len(rows) / max(len(rows) - 1, 1))
    requests = tuple(
        TraceRequest(
            offset_s=(row.timestamp_ms - first) / 1e3 / speed,
            input_tokens=row.input_tokens,
            output_tokens=row.output_tokens,
            line=row.line,
            text=row.text,
            hash_ids=row.hash_ids,
            session=session,
            turn=turn,
        )
        for row, (session, turn) in zip(rows, _sessions(rows), strict=True)
    )
    return Trace(
        file=name or path.name,
        sha256=digest,
        requests=requests,
        duration_s=max(span_s / speed, MIN_TRACE_DURATION_S),
        speed=float(speed),
        window=None if window is None else (float(window[0]), float(window[1])),
        time_unit=unit,
    )


def trace_phase(
    file: str | Path,
    *,
    name: str = "replay",
    speed: float = 1.0,
    window: tuple[float, float] | None = None,
    stop: StopRule | None = None,
    time_unit: str | None = None,
) -> Phase:
    """A phase that replays a trace file at its instants: ``trace_phase("trace.jsonl")``.

    ``speed`` scales time (2 plays twice as fast); ``window`` is ``(start_s, duration_s)``
    of trace time, counted from the trace's first instant. A relative ``file`` is read
    from the current directory (a ``*.slo.yaml`` reads it beside the spec file).
    ``time_unit`` is the timestamps' unit, ``"ms"`` (default) or ``"s"``.
    """
    trace = load_trace(Path(file), speed=speed, window=window, time_unit=time_unit)
    rate = len(trace.requests) / trace.duration_s
    if rate > MAX_RATE or trace.duration_s > MAX_DURATION_S:
        raise check.FieldError(
            "trace",
            f"phase {name!r}: the trace offers {len(trace.requests)} requests over"
            f" {trace.duration_s:g}s; a phase allows at most {MAX_RATE:g}/s and"
            f" {MAX_DURATION_S:g}s: set speed or a window",
        )
    return Phase(
        name=name,
        rate=rate,
        duration_s=trace.duration_s,
        arrival="trace",
        trace=trace,
        stop=stop,
    )
