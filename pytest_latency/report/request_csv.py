"""Every request as a CSV row (``--latency-csv PATH``, ``pytest-latency report --csv``).

For notebooks and spreadsheets: a header row naming the columns, then one row per
offered request of every run, in each run's request order. The columns are the run's
``test`` and ``baseline_key``, then the request's scalar fields as the JSON's
``requests`` has them (docs/json.md), derived from the record by reflection, so a field
added to records is a column here too: ``ttft_s``, ``e2e_s``, ``tpot_s`` and the gap
summary (``itl_median_s``, ``itl_max_s``, ``itl_count``) included. The gaps themselves
and the tokens of each chunk (lists: ``itl_s``, ``chunk_tokens``) stay in the JSON, as
do prompts and answers (``--latency-record-content``).
An empty cell is a value the request does not have (no first token, no server report).
Times are seconds; the header is documented in docs/reports.md.

A text cell that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return
gets a leading ``'`` (OWASP's rule against CSV injection): a spreadsheet would run it
as a formula, and test names, error texts and server-reported ids come from outside.
"""

from __future__ import annotations

import csv
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import NamedTuple

from pytest_latency.analysis.baseline import run_keys, stored_key
from pytest_latency.file_format import replacing
from pytest_latency.records import RequestRecord, StoredRun, records_to_dicts

RUN_COLUMNS = ("test", "baseline_key")
_NOT_SCALAR = frozenset({"itl_s", "chunk_tokens", "prompt", "content"})


class CsvRun(NamedTuple):
    """One run's rows: its test id, its baseline key, and its records."""

    test: str
    baseline_key: str
    records: Sequence[RequestRecord]


def request_columns() -> tuple[str, ...]:
    """The header: the run columns, then every scalar field of a request's JSON row."""
    template = RequestRecord(id=0, phase="", intended_s=0.0, input_tokens=0)
    (row,) = records_to_dicts([template], keep_gaps=False)
    return RUN_COLUMNS + tuple(name for name in row if name not in _NOT_SCALAR)


_FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


def _cell(value: object) -> object:
    if value is None:
        return ""
    if isinstance(value, str) and value.startswith(_FORMULA_STARTS):
        return "'" + value  # shown as text, never evaluated
    return value


def write_requests_csv(path: Path, runs: Iterable[CsvRun]) -> int:
    """Write the header and one row per request, atomically; returns the rows written."""
    columns = request_columns()
    written = 0
    with replacing(path) as handle:
        writer = csv.writer(handle)
        writer.writerow(columns)
        for run in runs:
            for row in records_to_dicts(run.records, keep_gaps=False):
                row = {"test": run.test, "baseline_key": run.baseline_key, **row}
                writer.writerow([_cell(row.get(name)) for name in columns])
                written += 1
    return written


def write_csv_from_file(
    path: Path, runs: Sequence[StoredRun], baseline: object = None, template: object = None
) -> None:
    """``pytest-latency report RUN.json --csv OUT.csv`` (baseline and template unused)."""
    keys = run_keys([run.test for run in runs])
    write_requests_csv(
        path,
        (
            CsvRun(run.test, stored_key(run.document, key), run.records)
            for run, key in zip(runs, keys, strict=True)
        ),
    )
