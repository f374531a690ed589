"""How a workload's clients behave: retries of rejected requests (docs/retries.md).

``retry: {max: 2}``: a request the server rejected (429 or 503) is sent again, at most
``max`` more times, after the ``Retry-After`` the server gave, or else after a jittered
exponential backoff (``backoff``, doubling, at most ``max_backoff``), as the OpenAI SDK
does. The open-loop schedule of new requests is not touched: a retry is the same
request, one record, its latency still counted from its first planned send.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from pytest_latency._units import parse_duration
from pytest_latency.errors import SpecError
from pytest_latency.spec import checks as check

if TYPE_CHECKING:  # yaml loads only when a spec file is read (the plugin stays cheap)
    from pytest_latency.spec.yaml_lines import LineMap

T = TypeVar("T")

MAX_RETRIES = 10
MAX_BACKOFF_S = 600.0
#: Workload keys this module parses in ``*.slo.yaml``.
TRAFFIC_KEYS: tuple[str, ...] = ("retry",)


@dataclass(frozen=True, slots=True)
class Retry:
    """Retry a rejected request up to ``max_retries`` times (attempts after the first)."""

    max_retries: int
    backoff_s: float = 0.5  # the first wait when the server gave no Retry-After
    max_backoff_s: float = 8.0

    def __post_init__(self) -> None:
        check.whole("max_retries", self.max_retries, 1, MAX_RETRIES, what="retry max")
        check.number(
            "backoff_s", self.backoff_s, above=0, at_most=MAX_BACKOFF_S, what="retry backoff"
        )
        check.number(
            "max_backoff_s", self.max_backoff_s, at_least=self.backoff_s,
            at_most=MAX_BACKOFF_S, what="retry max_backoff (at least backoff)",
        )  # fmt: skip

    def to_json(self) -> dict[str, object]:
        """As the run's JSON and the baseline fingerprint keep it."""
        return {"max": self.max_retries, "backoff_s": self.backoff_s,
                "max_backoff_s": self.max_backoff_s}  # fmt: skip


class _Context(Protocol):
    def fail(self, line: int, key: str, problem: str) -> SpecError: ...
    def mapping(self, value: Any, line: int, key: str, allowed: tuple[str, ...]) -> LineMap: ...
    def field(self, parent: LineMap, name: str, key: str, parse: Callable[[Any], T]) -> T: ...
    def build(self, node: LineMap, key: str, make: Callable[[], T]) -> T: ...


def _retry(context: _Context, value: Any, line: int) -> Retry:
    key = "workload.retry"
    node = context.mapping(value, line, key, ("max", "backoff", "max_backoff"))
    if "max" not in node:
        raise context.fail(line, f"{key}.max", "missing: give the retries, e.g. {max: 2}")
    options: dict[str, Any] = {"max_retries": context.field(node, "max", key, check.as_int)}
    for name in ("backoff", "max_backoff"):
        if name in node:
            options[f"{name}_s"] = context.field(node, name, key, parse_duration)
    return context.build(node, key, lambda: Retry(**options))


def parse_traffic_keys(context: _Context, workload: LineMap) -> dict[str, object]:
    """``Workload`` keyword arguments for the ``retry:`` a workload has."""
    options: dict[str, object] = {}
    if "retry" in workload:
        options["retry"] = _retry(context, workload["retry"], workload.key_lines["retry"])
    return options
