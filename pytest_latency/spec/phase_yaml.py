"""One phase of ``workload.phases`` in a ``*.slo.yaml``, whatever its arrival.

An open-loop phase has a rate (``{name: steady, rate: 5, duration: 30s}``; a ramp goes
``from:`` ``to:``); a closed-loop one has users (``{name: users, arrival: concurrent,
users: 4, duration: 10s}``, with ``think_time``, a duration, default 0, each user's
pause between the end of one request and the next); a trace phase replays a file
(sources_yaml.py). ``stop: {error_rate: ...}`` works on all of them.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from pytest_latency._units import parse_duration
from pytest_latency.spec import checks as check
from pytest_latency.spec.phase import ARRIVALS, Arrival, Phase, parse_stop
from pytest_latency.spec.sources_yaml import TRACE_PHASE_KEYS, parse_trace_phase
from pytest_latency.spec.yaml_context import YamlContext
from pytest_latency.spec.yaml_lines import LineMap

OPEN_KEYS = ("name", "arrival", "rate", "duration", "burstiness", "from", "to", "stop")
CLOSED_KEYS = ("name", "arrival", "users", "think_time", "duration", "stop")
ANY_PHASE_KEYS = tuple(dict.fromkeys(OPEN_KEYS + TRACE_PHASE_KEYS + CLOSED_KEYS))


def _arrival(value: Any) -> Arrival:
    if value not in ARRIVALS:
        raise ValueError(
            f"arrival must be one of {', '.join(ARRIVALS)}, got {value!r}"
            + check.did_you_mean(value, ARRIVALS)
        )
    return cast(Arrival, value)


# A Phase field read from a YAML key: (key, field, parse, value when the key is absent).
_Field = tuple[str, str, Callable[[Any], Any], Any]
_NAME: _Field = ("name", "name", check.as_text, None)
_DURATION: _Field = ("duration", "duration_s", check.as_positive_duration, None)
_STOP: _Field = ("stop", "stop", parse_stop, None)


def _open_fields(rate_key: str) -> tuple[_Field, ...]:
    """``rate_key``: rate, or from for a ramp (its starting rate)."""
    return (  # in the order they are read: a phase's first bad field is the one reported
        _NAME,
        (rate_key, "rate", check.as_number, None),
        ("to", "rate_to", check.as_number, None),
        _STOP,
        _DURATION,
        ("arrival", "arrival", _arrival, "poisson"),
        ("burstiness", "burstiness", check.as_number, 1.0),
    )


_CLOSED_FIELDS: tuple[_Field, ...] = (
    _NAME,
    _DURATION,
    ("users", "users", check.as_int, None),
    ("think_time", "think_time_s", parse_duration, 0.0),
    _STOP,
)


def parse_phase(context: YamlContext, value: Any, line: int, key: str) -> Phase:
    """The phase at ``key``; a spec error at the offending line otherwise."""
    node = context.mapping(value, line, key, ANY_PHASE_KEYS)
    arrival = node.get("arrival")
    if arrival == "trace":
        return parse_trace_phase(context, node, key)
    closed = arrival == "concurrent"
    _refuse_other_kinds_keys(context, node, key, closed)
    load_key = "users" if closed else "from" if arrival == "ramp" else "rate"
    for required in ("name", load_key, "duration"):
        if required not in node:
            raise context.fail(node.line, f"{key}.{required}", "missing")
    fields = _CLOSED_FIELDS if closed else _open_fields(load_key)
    fixed: dict[str, Any] = {"rate": 0.0, "arrival": "concurrent"} if closed else {}

    def build() -> Phase:
        parsed = {
            field: context.field(node, name, key, parse) if name in node else absent
            for name, field, parse, absent in fields
        }
        return Phase(**parsed, **fixed)

    return context.build(node, key, build)


def _refuse_other_kinds_keys(context: YamlContext, node: LineMap, key: str, closed: bool) -> None:
    """A spec error at the first key this kind of phase does not take, saying which does."""
    if closed:
        for name in node:
            if name not in CLOSED_KEYS:
                problem = "a closed loop has users, not a rate; allowed: " + ", ".join(CLOSED_KEYS)
                raise context.fail(node.key_lines[name], f"{key}.{name}", problem)
        return
    stray_keys = (name for name in node if name in ANY_PHASE_KEYS and name not in OPEN_KEYS)
    if (stray := next(stray_keys, None)) is not None:
        needed = "trace" if stray in TRACE_PHASE_KEYS else "concurrent"
        problem = f"{stray}: needs arrival: {needed}"
        raise context.fail(node.key_lines[stray], f"{key}.{stray}", problem)
    ramp = node.get("arrival") == "ramp"  # a ramp: from -> to
    if (stray := "rate" if ramp else "from") in node:
        problem = "a ramp takes from: and to:" if ramp else "from: needs arrival: ramp"
        raise context.fail(node.key_lines[stray], f"{key}.{stray}", problem)
