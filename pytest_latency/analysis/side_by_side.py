"""Two saved runs of the same tests side by side: per phase, each metric's percentiles
in A and in B, and their ratio B/A (``pytest-latency compare``).

Descriptive, not a verdict: a ratio here has no confidence bound (``judge`` with a
``max_regression`` objective decides one). The percentiles are computed from each
run's requests as the verdicts count them (failed requests unbounded, ITL each
request's median gap), never read from the stored summaries.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from pytest_latency.analysis.environment_diff import environment_differences
from pytest_latency.analysis.percentiles import percentiles
from pytest_latency.analysis.samples import metric_samples
from pytest_latency.records import StoredRun

DEFAULT_METRICS: tuple[str, ...] = ("ttft", "itl", "e2e")
DEFAULT_PERCENTILES: tuple[float, ...] = (50.0, 90.0, 95.0, 99.0)


@dataclass(frozen=True, slots=True)
class Cell:
    """One percentile of one metric in one phase: A's value, B's, and B / A."""

    p: float
    a: float
    b: float

    @property
    def ratio(self) -> float:
        """B / A: ``inf`` when only B is unbounded (its requests failed) or A is 0, NaN
        when it means nothing (a missing value, A unbounded, 0 / 0)."""
        a, b = self.a, self.b
        if math.isnan(a) or math.isnan(b) or math.isinf(a) or (a == 0 and b == 0):
            return math.nan
        return math.inf if math.isinf(b) or a == 0 else b / a


@dataclass(frozen=True, slots=True)
class Row:
    phase: str
    metric: str
    cells: tuple[Cell, ...]


THROUGHPUT_KEYS: tuple[str, ...] = (
    "requests_per_s",
    "output_tokens_per_s",
    "total_tokens_per_s",
    "output_tokens_per_s_per_user",
)


@dataclass(frozen=True, slots=True)
class ThroughputRow:
    """One phase's throughput (``phases[].throughput``) in A and B; NaN where absent."""

    phase: str
    a: tuple[float, ...]  # in THROUGHPUT_KEYS order
    b: tuple[float, ...]


@dataclass(frozen=True, slots=True)
class TestComparison:
    """One test key present in both files: its rows, and how many requests each side had."""

    key: str
    rows: tuple[Row, ...]
    offered: tuple[int, int]
    invalid: tuple[bool, bool]  # a side's generator fell behind or it was cut short
    throughput: tuple[ThroughputRow, ...] = ()
    # What differed in where the two ran (GPUs, server version, model): compared anyway.
    environment_warnings: tuple[str, ...] = ()


def stored_throughput(run: StoredRun) -> dict[str, tuple[float, ...]]:
    """Each phase's stored throughput (files from before it was recorded have none)."""
    found: dict[str, tuple[float, ...]] = {}
    for phase in run.document.get("phases") or []:
        values = phase.get("throughput") if isinstance(phase, dict) else None
        if isinstance(values, dict):
            found[str(phase.get("name"))] = tuple(
                float(value) if isinstance(value, int | float) else math.nan
                for value in (values.get(key) for key in THROUGHPUT_KEYS)
            )
    return found


def throughput_rows(a: StoredRun, b: StoredRun) -> tuple[ThroughputRow, ...]:
    a_values, b_values = stored_throughput(a), stored_throughput(b)
    missing = (math.nan,) * len(THROUGHPUT_KEYS)
    return tuple(
        ThroughputRow(phase, a_values.get(phase, missing), b_values.get(phase, missing))
        for phase in phase_order(a, b)
        if phase in a_values or phase in b_values
    )


@dataclass(frozen=True, slots=True)
class Comparison:
    tests: tuple[TestComparison, ...]
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]


def phase_order(a: StoredRun, b: StoredRun) -> list[str]:
    """A's phases in request order, then any B has that A does not."""
    names: dict[str, None] = {}
    for run in (a, b):
        for record in sorted(run.records, key=lambda record: record.intended_s):
            names.setdefault(record.phase, None)
    return list(names)


def compare_pair(
    key: str,
    a: StoredRun,
    b: StoredRun,
    metrics: Sequence[str] = DEFAULT_METRICS,
    ps: Sequence[float] = DEFAULT_PERCENTILES,
) -> TestComparison:
    rows = []
    for phase in phase_order(a, b):
        a_records = [record for record in a.records if record.phase == phase]
        b_records = [record for record in b.records if record.phase == phase]
        for metric in metrics:
            a_values = percentiles(metric_samples(a_records, metric), ps)
            b_values = percentiles(metric_samples(b_records, metric), ps)
            cells = tuple(Cell(p, x, y) for p, x, y in zip(ps, a_values, b_values, strict=True))
            rows.append(Row(phase, metric, cells))
    return TestComparison(
        key,
        tuple(rows),
        (len(a.records), len(b.records)),
        (not a.valid, not b.valid),
        throughput_rows(a, b),
        tuple(environment_differences(a.document, b.document)),
    )


def compare_runs(
    a: Mapping[str, Sequence[StoredRun]],
    b: Mapping[str, Sequence[StoredRun]],
    metrics: Sequence[str] = DEFAULT_METRICS,
    ps: Sequence[float] = DEFAULT_PERCENTILES,
) -> Comparison:
    """Every key in both (A's order), compared on each side's newest run under it."""
    shared = [key for key in a if key in b]
    return Comparison(
        tuple(compare_pair(key, a[key][-1], b[key][-1], metrics, ps) for key in shared),
        tuple(key for key in a if key not in b),
        tuple(key for key in b if key not in a),
    )
