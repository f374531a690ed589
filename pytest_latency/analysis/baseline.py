"""Baselines: earlier runs of the same tests, for relative objectives.

Any ``--latency-json`` file is a baseline: one format (``pytest-latency/1``, read through
:mod:`pytest_latency.records`), runs matched by their key (``baseline_key``: the test
file relative to the project plus the test name, or an explicit id; ``#2``, ``#3``... for
later runs of one test in one session; see :mod:`pytest_latency.keys`). A baseline may
hold several runs under one key: the history of one build, from which relative verdicts
estimate between-run noise.

Runs are only comparable when the same workload met the same kind of server: the
workload fingerprint (seed, phases, rates, shapes, repeats) and the server identity
(kind, model, api) are compared, and a mismatch is an error unless allowed. Runs that
were invalid (the generator fell behind) or cut short are never saved.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pytest_latency.errors import BaselineKeyError
from pytest_latency.keys import match_key, numbered
from pytest_latency.records import RunFileError, StoredRun, read_runs

BaselineError = RunFileError  # one error for unreadable run and baseline files
# Server fields that must match; the URL may not (the embedded server picks a free port).
_SERVER_IDENTITY = ("kind", "model", "api")
DEFAULT_HISTORY = 1


@dataclass(frozen=True, slots=True)
class Baseline:
    """Stored runs by key, oldest first, and the file they came from."""

    path: Path
    runs: dict[str, list[StoredRun]]

    def keys(self) -> list[str]:
        return sorted(self.runs)

    def lookup(self, key: str) -> list[StoredRun]:
        """The stored runs of ``key`` (see :func:`match_key`); BaselineKeyError if none."""
        return self.runs[match_key(key, self.runs, str(self.path))]


def run_keys(tests: Sequence[str]) -> list[str]:
    """A key per run: the test id, with ``#2``, ``#3``... for later runs of the same test."""
    return numbered(tests)


def stored_key(run: Mapping[str, Any], default: str) -> str:
    """A stored run's key: its ``baseline_key``, else (older files) ``default``."""
    key = run.get("baseline_key")
    return key if isinstance(key, str) else default


def load_baseline(path: Path) -> Baseline:
    """Every stored run of ``path`` by key; BaselineError naming the file otherwise."""
    stored = read_runs(path)
    runs: dict[str, list[StoredRun]] = {}
    for run, key in zip(stored, run_keys([run.test for run in stored]), strict=True):
        runs.setdefault(stored_key(run.document, key), []).append(run)
    return Baseline(path, runs)


def fingerprint(workload: Mapping[str, Any] | None, server: Mapping[str, Any]) -> dict[str, Any]:
    """What must match between a baseline run and a new run for a fair comparison."""
    shape = dict(workload or {})
    shape.pop("timeout_s", None)  # a deadline changes no request that met it
    if "until_decided" in shape:  # episodes run until decided: their count varies by run
        shape.pop("repeat", None)
        shape.pop("cooldown_s", None)
    return {"workload": shape, "server": {name: server.get(name) for name in _SERVER_IDENTITY}}


def mismatches(
    stored: StoredRun, workload: Mapping[str, Any], server: Mapping[str, Any]
) -> list[str]:
    """The fingerprint fields in which ``stored`` differs from the new run ([] = comparable)."""
    if stored.workload is None:
        return ["workload (the baseline was saved without one; save it again)"]
    old = fingerprint(stored.workload, stored.server)
    new = fingerprint(workload, server)
    differing = []
    for part in ("workload", "server"):
        for name in sorted(set(old[part]) | set(new[part])):
            if old[part].get(name) != new[part].get(name):
                differing.append(
                    f"{part}.{name}: baseline {json.dumps(old[part].get(name))},"
                    f" this run {json.dumps(new[part].get(name))}"
                )
    return differing


@dataclass(slots=True)
class SaveReport:
    """What saving did, by key: new, updated (with its history length), refused, kept."""

    new: list[str] = field(default_factory=list)
    updated: list[tuple[str, int]] = field(default_factory=list)
    refused: list[tuple[str, str]] = field(default_factory=list)
    renamed: list[tuple[str, str]] = field(default_factory=list)  # (old key, new key)
    kept: int = 0  # other keys of the file, unchanged

    @property
    def saved(self) -> bool:
        return bool(self.new or self.updated)


def merge_for_save(
    existing: Sequence[Mapping[str, Any]],
    session_runs: Sequence[Mapping[str, Any]],
    history: int = DEFAULT_HISTORY,
) -> tuple[list[dict[str, Any]], SaveReport]:
    """The runs to write: this session's valid runs merged into a file's earlier runs.

    Each run dict is a ``--latency-json`` run carrying ``baseline_key``. Keys this session
    ran keep up to ``history`` runs: the new one and the newest earlier ones with the
    same fingerprint. Other keys are kept as they were; an older file's key for the same
    test (another rootdir's test id, see :func:`match_key`) is replaced by the new key.
    """
    by_key: dict[str, list[dict[str, Any]]] = {}
    old_ids = run_keys([str(run.get("test")) for run in existing])
    for run, key in zip(existing, old_ids, strict=True):
        by_key.setdefault(stored_key(run, key), []).append(dict(run))
    earlier_keys = set(by_key)
    report = SaveReport()
    touched: set[str] = set()
    for run in session_runs:
        key = str(run["baseline_key"])
        why_not = _unsaveable(run)
        if why_not:
            report.refused.append((key, why_not))
            continue
        if key not in by_key:
            _adopt_old_key(by_key, key, earlier_keys, report)
        existed = key in by_key
        mark = fingerprint(run.get("workload"), run.get("server") or {})
        earlier = [
            old
            for old in by_key.get(key, [])
            if fingerprint(old.get("workload"), old.get("server") or {}) == mark
        ]
        kept = [*earlier, dict(run)][-max(history, 1) :]
        if existed:
            report.updated.append((key, len(kept)))
        else:
            report.new.append(key)
        touched.add(key)
        by_key[key] = [{**old, "baseline_key": key} for old in kept]
    report.kept = len(set(by_key) - touched)
    return [run for runs in by_key.values() for run in runs], report


def _adopt_old_key(
    by_key: dict[str, list[dict[str, Any]]], key: str, earlier: set[str], report: SaveReport
) -> None:
    """Move an older file's runs of this test (saved under a rootdir-relative id) to ``key``."""
    try:
        old = match_key(key, earlier & set(by_key), "")
    except BaselineKeyError:
        return  # none, or ambiguous: a new key; the old entries stay as they were
    by_key[key] = by_key.pop(old)
    report.renamed.append((old, key))


def _unsaveable(run: Mapping[str, Any]) -> str | None:
    if run.get("interrupted"):
        return "the run was cut short"
    generator = run.get("generator")
    if isinstance(generator, Mapping) and generator.get("valid") is False:
        return "the run was invalid: " + "; ".join(map(str, generator.get("reasons", [])))
    return None
