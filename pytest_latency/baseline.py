"""Baselines: a session's per-request distributions saved for later relative objectives.

A baseline keeps every request of every run (the finest "distribution" there is, so any
objective scope, phase or cohort, can be applied to it exactly as to a new run), the
per-cohort counts for mix checks, and the identity of the server that produced it.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pytest_latency.analysis.cohorts import cohort_counts
from pytest_latency.records import RequestRecord, Status
from pytest_latency.records import record_to_dict as request_dict
from pytest_latency.report.json_report import server_identity
from pytest_latency.result import LatencyResult

SCHEMA = "pytest-latency-baseline/1"
# Record fields restored from a baseline; derived values (ttft_s, ...) are recomputed.
_STORED = (
    "id", "phase", "intended_s", "input_tokens", "max_tokens", "trace_id", "sent_s",
    "first_token_s", "end_s", "itl_s", "error", "http_status", "output_tokens",
    "output_tokens_source", "queue_wait_s", "prefill_s", "decode_s", "server_source",
)  # fmt: skip


class BaselineError(ValueError):
    """A baseline file is missing or malformed; the message names the file and problem."""


@dataclass(frozen=True, slots=True)
class BaselineRun:
    test: str
    server: dict[str, Any]
    records: list[RequestRecord]
    cohorts: dict[str, int]


def run_keys(runs: Sequence[LatencyResult]) -> list[str]:
    """A key per run: the test id, with ``#2``, ``#3``... for later runs of the same test."""
    seen: dict[str, int] = {}
    keys = []
    for run in runs:
        seen[run.test] = seen.get(run.test, 0) + 1
        keys.append(run.test if seen[run.test] == 1 else f"{run.test}#{seen[run.test]}")
    return keys


def save_baseline(path: Path, runs: Sequence[LatencyResult]) -> None:
    document = {
        "schema": SCHEMA,
        "created_unix": time.time(),
        "runs": {
            key: {
                "server": server_identity(run),
                "seed": run.workload.seed,
                "cohorts": cohort_counts(run.records),
                "requests": [
                    {name: value for name, value in request_dict(r).items() if name in _STORED}
                    | {"status": r.status.value}
                    for r in run.records
                ],
            }
            for key, run in zip(run_keys(runs), runs, strict=True)
        },
    }
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(document, allow_nan=False), encoding="utf-8")
    tmp.replace(path)


def load_baseline(path: Path) -> dict[str, BaselineRun]:
    """Every run of a baseline file by key; BaselineError with the reason otherwise."""
    try:
        document = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise BaselineError(
            f"{path}: no such baseline (save one with --latency-save-baseline)"
        ) from None
    except (OSError, ValueError) as error:
        raise BaselineError(f"{path}: not a readable JSON baseline ({error})") from None
    if not isinstance(document, dict) or document.get("schema") != SCHEMA:
        raise BaselineError(f"{path}: not a pytest-latency baseline (schema {SCHEMA} expected)")
    runs: dict[str, BaselineRun] = {}
    try:
        for key, run in document["runs"].items():
            runs[key] = BaselineRun(
                test=key,
                server=dict(run["server"]),
                records=[_record(row) for row in run["requests"]],
                cohorts={str(k): int(v) for k, v in run["cohorts"].items()},
            )
    except (KeyError, TypeError, ValueError, AttributeError) as error:
        raise BaselineError(
            f"{path}: malformed baseline ({type(error).__name__}: {error})"
        ) from None
    return runs


def _record(row: dict[str, Any]) -> RequestRecord:
    values = {name: row[name] for name in _STORED if name in row}
    values["itl_s"] = list(values.get("itl_s") or [])
    return RequestRecord(status=Status(row["status"]), **values)
