"""Release-gate objectives in ``*.slo.yaml`` (attainment, recovery), with file:line errors.

``{metric: attainment, ttft: 700ms, e2e: 10s, min: 95%}`` and
``{metric: recovery, max: 10s, after: burst}`` and ``{metric: capacity, min: 20}`` (req/s,
decided on a ``capacity:`` search); see :mod:`pytest_latency.spec.gates`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from pytest_latency._units import parse_duration, parse_fraction
from pytest_latency.errors import SpecError
from pytest_latency.spec import checks as check
from pytest_latency.spec.gates import (
    GATE_METRICS,
    THRESHOLD_ALIASES,
    parse_rate,
    threshold_items,
)
from pytest_latency.spec.model import Objective
from pytest_latency.spec.yaml_lines import LineMap

T = TypeVar("T")

#: Keys only gate objectives take (besides metric, phase and max).
GATE_ONLY_KEYS: tuple[str, ...] = ("min", "min_fraction", "after", *THRESHOLD_ALIASES)
_ATTAINMENT_KEYS = ("metric", "phase", "min", "min_fraction", *THRESHOLD_ALIASES)
_RECOVERY_KEYS = ("metric", "max", "after")
_CAPACITY_KEYS = ("metric", "min")
_ALLOWED = {"attainment": _ATTAINMENT_KEYS, "recovery": _RECOVERY_KEYS, "capacity": _CAPACITY_KEYS}


class _Context(Protocol):
    def fail(self, line: int, key: str, problem: str) -> SpecError: ...
    def field(self, parent: LineMap, name: str, key: str, parse: Callable[[Any], T]) -> T: ...
    def build(self, node: LineMap, key: str, make: Callable[[], T]) -> T: ...


def gate_objective(
    context: _Context, node: LineMap, key: str, metric: str, phases: set[str] | None
) -> Objective | None:
    """The gate objective ``node`` describes; None when it is not one (no gate metric or key)."""
    if metric not in GATE_METRICS:
        stray = next((name for name in node if name in GATE_ONLY_KEYS), None)
        if stray is None:
            return None
        raise context.fail(
            node.key_lines[stray],
            f"{key}.{stray}",
            f"{stray} applies to metric: attainment, recovery or capacity, not {metric}",
        )
    allowed = _ALLOWED[metric]
    for name in node:
        if name not in allowed:
            raise context.fail(
                node.key_lines[name],
                f"{key}.{name}",
                f"unknown key for metric {metric}; allowed: {', '.join(allowed)}",
            )
    for name in ("phase", "after"):
        if name in node and phases is not None and node[name] not in phases:
            raise context.fail(
                node.key_lines[name],
                f"{key}.{name}",
                check.unknown_phase(node[name], phases),
            )
    if metric == "recovery":
        return _recovery(context, node, key)
    if metric == "capacity":
        return _capacity(context, node, key)
    return _attainment(context, node, key)


def _capacity(context: _Context, node: LineMap, key: str) -> Objective:
    if "min" not in node:
        raise context.fail(node.line, f"{key}.min", "missing: capacity needs min (req/s)")
    least = context.field(node, "min", key, parse_rate)
    return context.build(node, key, lambda: Objective(metric="capacity", min_value=least))


def _recovery(context: _Context, node: LineMap, key: str) -> Objective:
    for required in ("max", "after"):
        if required not in node:
            raise context.fail(node.line, f"{key}.{required}", "missing (recovery needs both)")
    max_s = context.field(node, "max", key, _latency)
    return context.build(
        node, key, lambda: Objective(metric="recovery", max_s=max_s, after=node["after"])
    )


def _attainment(context: _Context, node: LineMap, key: str) -> Objective:
    if ("min" in node) == ("min_fraction" in node):
        raise context.fail(node.line, f"{key}.min", "give exactly one of min (95%), min_fraction")
    if "min" in node:
        least = context.field(node, "min", key, _percentage)
    else:
        least = context.field(node, "min_fraction", key, check.as_number)
    seconds = {
        name: context.field(node, name, key, _latency) for name in node if name in THRESHOLD_ALIASES
    }

    def make() -> Objective:
        return Objective(
            metric="attainment",
            phase=node.get("phase"),
            thresholds=threshold_items(seconds, "attainment"),
            min_value=least,
        )

    return context.build(node, key, make)


def _latency(value: Any) -> float:
    return parse_duration(value, guess="latency")


def _percentage(value: Any) -> float:
    return parse_fraction(value, fraction_key="min_fraction: ")
