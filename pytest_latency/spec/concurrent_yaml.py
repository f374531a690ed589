"""A closed-loop phase in YAML: ``{name: users, arrival: concurrent, users: 4, duration: 10s}``.

``think_time`` (a duration, default 0) is each user's pause between the end of one
request and the next; ``stop: {error_rate: ...}`` works as on other phases.
"""

from __future__ import annotations

from collections.abc import Sequence

from pytest_latency._units import parse_duration
from pytest_latency.spec import checks as check
from pytest_latency.spec.phase import Phase, parse_stop
from pytest_latency.spec.yaml_context import YamlContext
from pytest_latency.spec.yaml_lines import LineMap


def parse_concurrent_phase(
    context: YamlContext, node: LineMap, key: str, allowed: Sequence[str]
) -> Phase:
    """The closed-loop phase of ``node``; a spec error at the offending line otherwise."""
    for name in node:
        if name not in allowed:
            problem = "a closed loop has users, not a rate; allowed: " + ", ".join(allowed)
            raise context.fail(node.key_lines[name], f"{key}.{name}", problem)
    for required in ("name", "users", "duration"):
        if required not in node:
            raise context.fail(node.line, f"{key}.{required}", "missing")
    return context.build(
        node,
        key,
        lambda: Phase(
            name=context.field(node, "name", key, check.as_text),
            rate=0.0,
            duration_s=context.field(node, "duration", key, check.as_positive_duration),
            arrival="concurrent",
            users=context.field(node, "users", key, check.as_int),
            think_time_s=context.field(node, "think_time", key, parse_duration)
            if "think_time" in node
            else 0.0,
            stop=context.field(node, "stop", key, parse_stop) if "stop" in node else None,
        ),
    )
