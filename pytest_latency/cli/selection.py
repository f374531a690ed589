"""``--test PATTERN`` for ``judge``, ``compare`` and ``report``, and ``compare``'s pairing.

A run is selected when PATTERN is a substring of its test id or of its baseline key.
``compare`` pairs the runs of two files as ``--latency-baseline`` matches them
(:mod:`pytest_latency.analysis.pairing`), and says which it paired and which it could not.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from pathlib import Path

from pytest_latency.analysis.baseline import Baseline, run_keys, stored_key
from pytest_latency.analysis.pairing import pair_keys
from pytest_latency.analysis.side_by_side import Comparison, compare_pair
from pytest_latency.cli.judge import UsageError
from pytest_latency.records import StoredRun


def add_test_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--test",
        metavar="PATTERN",
        help="only the runs whose test id or baseline key contains PATTERN",
    )


def _held(names: Sequence[str]) -> str:
    shown = ", ".join(names[:20]) + (f", ... ({len(names)} runs)" if len(names) > 20 else "")
    return shown or "no runs"


def select_runs(runs: Sequence[StoredRun], pattern: str | None, where: Path) -> list[StoredRun]:
    """The runs ``pattern`` selects (all when None); UsageError when it selects none."""
    if pattern is None:
        return list(runs)
    keys = [
        stored_key(run.document, key)
        for run, key in zip(runs, run_keys([run.test for run in runs]), strict=True)
    ]
    chosen = [
        run for run, key in zip(runs, keys, strict=True) if pattern in run.test or pattern in key
    ]
    if not chosen:
        raise UsageError(f"--test {pattern!r}: no run of {where} matches (it holds: {_held(keys)})")
    return chosen


def _select_keys(
    runs: Mapping[str, list[StoredRun]], pattern: str | None
) -> dict[str, list[StoredRun]]:
    if pattern is None:
        return dict(runs)
    return {
        key: stored
        for key, stored in runs.items()
        if pattern in key or any(pattern in run.test for run in stored)
    }


def paired_comparison(
    a: Baseline, b: Baseline, metrics: Sequence[str], ps: Sequence[float], pattern: str | None
) -> tuple[Comparison, list[str]]:
    """Each pair's comparison (newest run of each key), and lines saying how runs paired."""
    a_runs, b_runs = _select_keys(a.runs, pattern), _select_keys(b.runs, pattern)
    if pattern is not None and not a_runs and not b_runs:
        raise UsageError(
            f"--test {pattern!r}: no run matches ({a.path}: {_held(list(a.runs))};"
            f" {b.path}: {_held(list(b.runs))})"
        )
    pairing = pair_keys(list(a_runs), list(b_runs))
    if not pairing.pairs:
        raise UsageError(
            f"no test is in both files ({a.path}: {_held(list(a_runs))};"
            f" {b.path}: {_held(list(b_runs))})"
            + "".join(f"; {reason}" for reason in pairing.ambiguous)
        )
    tests = tuple(
        compare_pair(_label(key_a, key_b), a_runs[key_a][-1], b_runs[key_b][-1], metrics, ps)
        for key_a, key_b in pairing.pairs
    )
    shown = "; ".join(
        key_a if key_a == key_b else f"A {key_a} = B {key_b}" for key_a, key_b in pairing.pairs
    )
    notes = [f"paired {len(pairing.pairs)} run(s) by baseline key: {shown}"]
    notes += [f"not paired: {reason}" for reason in pairing.ambiguous]
    return Comparison(tests, pairing.only_a, pairing.only_b), notes


def _label(key_a: str, key_b: str) -> str:
    return key_a if key_a == key_b else f"{key_a} (B: {key_b})"
