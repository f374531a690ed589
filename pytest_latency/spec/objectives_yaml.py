"""The ``objectives:`` list of a ``*.slo.yaml``, with file:line errors.

Each objective is parsed on its own, so one bad objective does not hide the next one's
errors; an unknown phase gets a "did you mean" from the workload's phase names.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from functools import partial
from typing import Any, TypeVar, cast

from pytest_latency._units import parse_duration, parse_fraction
from pytest_latency.spec import checks as check
from pytest_latency.spec.gates_yaml import GATE_ONLY_KEYS, gate_objective
from pytest_latency.spec.limits_yaml import latency_duration, parse_limit
from pytest_latency.spec.model import METRICS, Metric, Objective
from pytest_latency.spec.yaml_context import YamlContext
from pytest_latency.spec.yaml_lines import LineList, LineMap

T = TypeVar("T")

OBJECTIVE_KEYS = (
    "metric",
    "p",
    "max",
    "max_fraction",
    "max_regression",
    "min_change",
    "phase",
    "class",  # a service class of the workload (spec/traffic.py)
    "input_tokens",
    "output_tokens",
    "outage",  # error_rate: an unseen outage allowed for (docs/specs.md)
    *GATE_ONLY_KEYS,  # release gates: spec/gates_yaml.py
)


def outage_duration(value: Any) -> float:
    """An outage's length: a duration with its unit (a bare number gets the fix)."""
    return parse_duration(value, guess="span")


def _parse_objective(
    context: YamlContext, value: Any, line: int, key: str, phases: set[str] | None
) -> Objective:
    node = context.mapping(value, line, key, OBJECTIVE_KEYS)
    if "metric" not in node:
        raise context.fail(node.line, f"{key}.metric", "missing")
    mark = context.mark()
    metric = context.field(node, "metric", key, check.as_text)
    if metric not in METRICS:  # reported here, so the line's other keys are checked too
        try:
            check.choice("metric", metric, METRICS, what="objective metric")
        except check.FieldError as error:
            context.report(node.key_lines.get("metric", node.line), f"{key}.metric", str(error))
    service_class = context.recover(
        lambda: context.field(node, "class", key, check.as_text) if "class" in node else None,
        None,
    )
    if (gate := gate_objective(context, node, key, metric, phases)) is not None:
        context.check_since(mark)
        return replace(gate, service_class=service_class)

    def optional(name: str, parse: Callable[[Any], T]) -> T | None:
        return context.field(node, name, key, parse) if name in node else None

    limit = context.recover(lambda: parse_limit(context, node, key, metric), None)
    phase = context.recover(lambda: optional("phase", check.as_text), None)
    if phase is not None and phases is not None and phase not in phases:
        context.report(node.key_lines["phase"], f"{key}.phase", check.unknown_phase(phase, phases))
    values = context.fields(
        node,
        key,
        {
            "p": partial(_as_percentile, what=f"objective {metric}: p"),
            "max_regression": parse_fraction,
            "min_change": latency_duration,
            "input_tokens": check.as_token_range,
            "output_tokens": check.as_token_range,
            "outage": outage_duration,
        },
    )
    context.check_since(mark)
    return context.build(
        node,
        key,
        lambda: Objective(
            metric=cast(Metric, metric),  # validated by Objective
            max_s=limit,
            p=values.get("p"),
            phase=phase,
            max_regression=values.get("max_regression"),
            min_change_s=values.get("min_change") or 0.0,
            input_tokens=values.get("input_tokens"),
            output_tokens=values.get("output_tokens"),
            outage_s=values.get("outage"),
            limit_text=node["max"].strip() if isinstance(node.get("max"), str) else None,
            service_class=service_class,
        ),
    )


def _as_percentile(value: Any, what: str) -> float:
    """``p`` checked here, not only when the objective is built: a bad metric on the same
    line stops the build, and must not hide this second mistake."""
    try:
        return check.percentile("p", check.as_number(value), what=what)
    except check.FieldError as error:
        raise ValueError(str(error)) from None


def parse_objectives(
    context: YamlContext, value: Any, line: int, phases: set[str] | None
) -> tuple[Objective, ...]:
    """Every objective that parses; each one that does not is recorded in ``context``."""
    if not isinstance(value, LineList):
        raise context.fail(line, "objectives", "expected a list of objectives")
    parsed = (
        context.recover(
            partial(_parse_objective, context, item, item_line, f"objectives[{index}]", phases),
            None,
        )
        for index, (item, item_line) in enumerate(zip(value, value.item_lines, strict=True))
    )
    return tuple(objective for objective in parsed if objective is not None)


def raw_phase_names(top: LineMap) -> set[str] | None:
    """The phase names an invalid workload spells out, to check objectives against;
    None (check nothing) when it names none."""
    workload = top.get("workload")
    phases = workload.get("phases") if isinstance(workload, LineMap) else None
    if not isinstance(phases, LineList):
        return None
    names = {
        phase["name"]
        for phase in phases
        if isinstance(phase, LineMap) and isinstance(phase.get("name"), str)
    }
    return names or None
