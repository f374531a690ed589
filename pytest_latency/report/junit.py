"""Objective verdicts in pytest's JUnit XML (``--junitxml``), under either family.

pytest's ``record_property`` puts ``<properties>`` inside ``<testcase>`` and warns under
the default family, xunit2, whose schema has no such element. pytest's answer for
plugins that stay valid under xunit2 is ``record_testsuite_property``: properties of the
``<testsuite>``. So every family gets suite properties named by the test id
(``tests/test_chat.py::test_chat::latency.ttft.p95.steady.verdict``); under xunit1 (and
``legacy``), where testcase properties are valid, each ``<testcase>`` also gets its
own, without the test id (``latency.ttft.p95.steady.verdict``). Neither path warns.

Names and values are documented in docs/reports.md ("JUnit XML").
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from _pytest.junitxml import LogXML

    from pytest_latency.analysis.result import LatencyResult
    from pytest_latency.analysis.verdict import ObjectiveResult

# Light at import (no analysis modules): the plugin loads it in every test's setup.

PREFIX = "latency"
#: Separates the test id from the property in a suite property's name.
TEST_SEPARATOR = "::"
#: Families whose ``<testcase>`` may hold ``<properties>`` (pytest's own rule).
TESTCASE_FAMILIES = frozenset({"xunit1", "legacy"})


def objective_key(result: ObjectiveResult) -> str:
    """``latency.ttft.p95.steady``: metric, percentile, phase (``all``), cohort, relative."""
    objective = result.objective
    parts = [PREFIX, objective.metric]
    if objective.p is not None:
        parts.append(f"p{objective.p:g}")
    parts.append(objective.phase or "all")
    if objective.input_tokens:
        parts.append("in{}-{}".format(*objective.input_tokens))
    if objective.output_tokens:
        parts.append("out{}-{}".format(*objective.output_tokens))
    if objective.relative:
        parts.append("regression")
    return ".".join(parts)


def format_value(value: float | int | None) -> str:
    """A number as Python's ``float()`` reads it: 9 significant digits (a nanosecond
    of a second), ``inf`` for an unbounded bound."""
    if value is None:
        return ""
    if isinstance(value, int):
        return str(value)
    if math.isnan(value):
        return "nan"
    if math.isinf(value):
        return "inf" if value > 0 else "-inf"
    return f"{value:.9g}"


def _unit(result: ObjectiveResult) -> str:
    if result.objective.relative:
        return "ratio"
    return "fraction" if result.objective.metric == "error_rate" else "seconds"


#: The suffix of each value's name by its unit: a fraction or a ratio is not seconds.
UNIT_SUFFIX = {"seconds": "_s", "fraction": "_fraction", "ratio": "_ratio"}


def objective_properties(results: Iterable[ObjectiveResult]) -> list[tuple[str, str]]:
    """(name, value) of every decided objective; a repeated objective gets ``#2``, ``#3``."""
    seen: dict[str, int] = {}
    properties: list[tuple[str, str]] = []
    for result in results:
        key = objective_key(result)
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            key = f"{key}#{seen[key]}"
        objective = result.objective
        unit = _unit(result)
        suffix = UNIT_SUFFIX[unit]
        limit = (
            ("max_regression", objective.max_regression)
            if objective.relative
            else (f"max{suffix}", objective.max_s)
        )
        fields: list[tuple[str, str]] = [
            ("verdict", result.verdict.value),
            (f"estimate{suffix}", format_value(result.estimate_s)),
            (f"lower{suffix}", format_value(result.lower_s)),
            (f"upper{suffix}", format_value(result.upper_s)),
            ("unit", unit),
            (limit[0], format_value(limit[1])),
            ("n", format_value(result.n)),
            ("n_effective", format_value(result.effective_n)),
            ("confidence", format_value(result.confidence)),
        ]
        properties.extend((f"{key}.{name}", value) for name, value in fields)
    return properties


#: How many runs the session held when the item's setup began: its runs come after.
RUNS_BEFORE = pytest.StashKey[int]()


def _junit_xml(config: pytest.Config) -> LogXML | None:
    """pytest's LogXML while ``--junitxml`` is active (what ``record_testsuite_property``
    hands out), None otherwise or under an xdist worker, which writes no XML."""
    from _pytest.junitxml import xml_key

    return config.stash.get(xml_key, None)


def item_results(item: pytest.Item, runs: Sequence[LatencyResult]) -> list[ObjectiveResult]:
    """The objectives decided in ``item``: on its runs, then on its paired comparisons."""
    start = item.stash.get(RUNS_BEFORE, 0)
    results = [
        result
        for run in runs[start:]
        if run.test == item.nodeid
        for result in run.objective_results
    ]
    fixture = (getattr(item, "funcargs", None) or {}).get("latency")
    for comparison in getattr(fixture, "comparisons", ()):
        results.extend(comparison.results)
    return results


def add_junit_properties(item: pytest.Item, runs: Sequence[LatencyResult]) -> None:
    """Record the objectives decided in ``item`` in the session's JUnit XML, if any.

    Called before the item's teardown report is made, so its ``user_properties`` reach
    that report.
    """
    xml = _junit_xml(item.config)
    if xml is None:
        return
    properties = objective_properties(item_results(item, runs))
    for name, value in properties:
        xml.add_global_property(f"{item.nodeid}{TEST_SEPARATOR}{name}", value)
    if xml.family in TESTCASE_FAMILIES:
        item.user_properties.extend(properties)
