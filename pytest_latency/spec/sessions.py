"""Shared prefixes and multi-turn sessions of a workload (docs/workloads.md).

``prefix: {groups: 8, tokens: 1000, share: 0.8}``: a ``share`` of the requests start
with one of ``groups`` shared prefixes of ``tokens`` tokens (a system prompt, a RAG
context), as a server's prefix cache sees them. ``sessions: {turns: [2, 6],
think_time: 2s}``: each arrival starts a conversation of ``turns`` turns; each later
turn is sent ``think_time`` after the previous answer ended and carries the whole
conversation so far.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pytest_latency._units import parse_duration, parse_fraction
from pytest_latency.errors import SpecError
from pytest_latency.spec import checks as check

if TYPE_CHECKING:  # yaml loads only when a spec file is read (the plugin stays cheap)
    from pytest_latency.spec.yaml_lines import LineMap

T = TypeVar("T")

MAX_PREFIX_GROUPS = 100_000
MAX_PREFIX_TOKENS = 1_000_000
MAX_TURNS = 1000
MAX_THINK_TIME_S = 3600.0
#: Workload keys this module parses in ``*.slo.yaml``.
SESSION_KEYS: tuple[str, ...] = ("prefix", "sessions")


@dataclass(frozen=True, slots=True)
class Prefix:
    """``share`` of the requests start with one of ``groups`` prefixes of ``tokens`` tokens.

    A prefixed request's ``input_tokens`` is the whole prompt: the prefix plus its own
    part, whose length is drawn from the workload's ``input_tokens``.
    """

    groups: int
    tokens: int
    share: float = 1.0

    def __post_init__(self) -> None:
        check.whole("groups", self.groups, 1, MAX_PREFIX_GROUPS, what="prefix groups")
        check.whole("tokens", self.tokens, 1, MAX_PREFIX_TOKENS, what="prefix tokens")
        check.number("share", self.share, at_least=0, at_most=1, what="prefix share")

    def to_json(self) -> dict[str, object]:
        """As the run's JSON and the baseline fingerprint keep it."""
        return {"groups": self.groups, "tokens": self.tokens, "share": self.share}


@dataclass(frozen=True, slots=True)
class Sessions:
    """Each arrival starts a conversation of ``turns`` (inclusive range, drawn per session)
    turns; a later turn is planned ``think_time_s`` after the previous one ended."""

    turns: tuple[int, int]
    think_time_s: float = 0.0

    def __post_init__(self) -> None:
        if isinstance(self.turns, list):
            object.__setattr__(self, "turns", tuple(self.turns))
        turns = check.token_range("turns", self.turns, 1, MAX_TURNS, what="sessions turns")
        object.__setattr__(self, "turns", turns)
        check.number(
            "think_time_s",
            self.think_time_s,
            at_least=0,
            at_most=MAX_THINK_TIME_S,
            what="sessions think_time",
        )

    @property
    def mean_turns(self) -> float:
        """Turns per session on average (the range's mid-point)."""
        return (self.turns[0] + self.turns[1]) / 2.0

    def to_json(self) -> dict[str, object]:
        """As the run's JSON and the baseline fingerprint keep it."""
        return {"turns": list(self.turns), "think_time_s": self.think_time_s}


class _Context(Protocol):
    def fail(self, line: int, key: str, problem: str) -> SpecError: ...
    def mapping(self, value: Any, line: int, key: str, allowed: tuple[str, ...]) -> LineMap: ...
    def field(self, parent: LineMap, name: str, key: str, parse: Callable[[Any], T]) -> T: ...
    def build(self, node: LineMap, key: str, make: Callable[[], T]) -> T: ...


def _share(value: Any) -> float:
    """``0.8`` or ``80%``."""
    if isinstance(value, str):
        return parse_fraction(value, what="share")
    return check.number("share", value, at_least=0, at_most=1, what="share (a fraction)")


def _turns(value: Any) -> tuple[int, int]:
    """``[2, 6]``, or one number for a fixed count."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value, value
    return check.as_token_range(value)


def _required(context: _Context, node: LineMap, key: str, names: tuple[str, ...]) -> None:
    for name in names:
        if name not in node:
            raise context.fail(node.line, f"{key}.{name}", "missing")


def _prefix(context: _Context, value: Any, line: int) -> Prefix:
    key = "workload.prefix"
    node = context.mapping(value, line, key, ("groups", "tokens", "share"))
    _required(context, node, key, ("groups", "tokens"))
    share = context.field(node, "share", key, _share) if "share" in node else 1.0
    groups = context.field(node, "groups", key, check.as_int)
    tokens = context.field(node, "tokens", key, check.as_int)
    return context.build(node, key, lambda: Prefix(groups=groups, tokens=tokens, share=share))


def _sessions(context: _Context, value: Any, line: int) -> Sessions:
    key = "workload.sessions"
    node = context.mapping(value, line, key, ("turns", "think_time"))
    _required(context, node, key, ("turns",))
    turns = context.field(node, "turns", key, _turns)
    think = context.field(node, "think_time", key, parse_duration) if "think_time" in node else 0.0
    return context.build(node, key, lambda: Sessions(turns=turns, think_time_s=think))


def parse_session_keys(context: _Context, workload: LineMap) -> dict[str, object]:
    """``Workload`` keyword arguments for the ``prefix:`` and ``sessions:`` a workload has."""
    options: dict[str, object] = {}
    if "prefix" in workload:
        options["prefix"] = _prefix(context, workload["prefix"], workload.key_lines["prefix"])
    if "sessions" in workload:
        line = workload.key_lines["sessions"]
        options["sessions"] = _sessions(context, workload["sessions"], line)
    return options
