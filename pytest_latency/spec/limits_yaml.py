"""An objective's limit in ``*.slo.yaml``: ``max`` (a duration, or a percentage for
``error_rate``), ``max_fraction`` or ``max_regression``, exactly one, with file:line errors."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from pytest_latency._units import parse_duration, parse_fraction
from pytest_latency.errors import SpecError
from pytest_latency.spec import checks as check
from pytest_latency.spec.yaml_lines import LineMap

T = TypeVar("T")


class _Context(Protocol):
    def fail(self, line: int, key: str, problem: str) -> SpecError: ...
    def field(self, parent: LineMap, name: str, key: str, parse: Callable[[Any], T]) -> T: ...


LIMIT_KEYS = ("max", "max_fraction", "max_regression")


def latency_duration(value: Any) -> float:
    return parse_duration(value, guess="latency")


def _percentage(value: Any) -> float:
    return parse_fraction(value, fraction_key="max_fraction: ")


def _fraction_number(value: Any) -> float:
    return check.number("max_fraction", value, at_least=0, at_most=1, what="a fraction")


def parse_limit(context: _Context, node: LineMap, key: str, metric: str) -> float | None:
    """The objective's ``max`` or ``max_fraction`` (None: relative); exactly one limit."""
    given = [name for name in LIMIT_KEYS if name in node]
    if len(given) != 1:
        where = given[1] if given else "max"
        raise context.fail(
            node.key_lines.get(where, node.line),
            f"{key}.{where}",
            "give exactly one of " + ", ".join(LIMIT_KEYS),
        )
    if metric == "error_rate":
        if "max_fraction" in node:
            return context.field(node, "max_fraction", key, _fraction_number)
        return context.field(node, "max", key, _percentage) if "max" in node else None
    if "max_fraction" in node:
        problem = f"max_fraction is for error_rate; a {metric} limit is a duration: max: 700ms"
        raise context.fail(node.key_lines["max_fraction"], f"{key}.max_fraction", problem)
    return context.field(node, "max", key, latency_duration) if "max" in node else None
