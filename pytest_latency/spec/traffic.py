"""How a workload's clients behave: service classes (docs/service-classes.md) and retries
of rejected requests (docs/retries.md).

``classes: [{name: premium, share: 20, priority: 0, headers: {x-priority: high}}, ...]``:
each request belongs to one class, drawn by share (percent, summing to 100); a class
sends its ``headers`` and, when given, vLLM's ``priority`` request field (lower is
served first under ``--scheduling-policy priority``). Records carry their ``class`` and
objectives may name one.

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

from pytest_latency._units import parse_duration, parse_fraction
from pytest_latency.errors import SpecError
from pytest_latency.spec import checks as check

if TYPE_CHECKING:  # yaml loads only when a spec file is read (the plugin stays cheap)
    from pytest_latency.spec.yaml_lines import LineMap

T = TypeVar("T")

MAX_RETRIES = 10
MAX_BACKOFF_S = 600.0
#: Workload keys this module parses in ``*.slo.yaml``.
TRAFFIC_KEYS: tuple[str, ...] = ("retry", "classes")
MAX_CLASSES = 64
_SHARE_SUM_SLACK = 1e-6  # shares are percents that must add up to 100
# Header names whose values are credentials: never written into a run's JSON.
_SECRET_HEADER_WORDS = ("authorization", "key", "token", "secret", "cookie", "password")


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


@dataclass(frozen=True, slots=True)
class ServiceClass:
    """A share of the requests with its own priority and headers."""

    name: str
    share: float  # a fraction of the requests, 0 < share <= 1 (written as percent)
    priority: int | None = None  # vLLM's request field ``priority``; lower first
    headers: tuple[tuple[str, str], ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.headers, dict):
            object.__setattr__(self, "headers", tuple(self.headers.items()))
        check.text("name", self.name, what="class name")
        check.number("share", self.share, above=0, at_most=1, what=f"class {self.name} share")
        if self.priority is not None:
            check.whole("priority", self.priority, -(2**31), 2**31 - 1, what="class priority")
        for name, value in self.headers:
            if not isinstance(name, str) or not isinstance(value, str) or not name:
                raise check.FieldError("headers", f"class {self.name}: headers are text: text")
            if any(ord(char) < 0x20 for char in name + value):  # it would end the header line
                raise check.FieldError(
                    "headers", f"class {self.name}: header {name} has a control character"
                )

    def to_json(self) -> dict[str, object]:
        """As the run's JSON and the baseline fingerprint keep it; credential-like header
        values are written as ``<redacted>``."""
        shown = {
            name: "<redacted>"
            if any(word in name.lower() for word in _SECRET_HEADER_WORDS)
            else value
            for name, value in self.headers
        }
        return {"name": self.name, "share": self.share * 100, "priority": self.priority,
                "headers": shown}  # fmt: skip


def _is_secret(header: str) -> bool:
    return any(word in header.lower() for word in _SECRET_HEADER_WORDS)


def check_traffic(retry: object, classes: tuple[ServiceClass, ...]) -> None:
    """A workload's ``retry`` and ``classes``: the right types, unique names, shares of 100%."""
    if retry is not None and not isinstance(retry, Retry):
        raise check.FieldError("retry", "retry must be a Retry")
    if not classes:
        return
    if len(classes) > MAX_CLASSES or not all(isinstance(c, ServiceClass) for c in classes):
        raise check.FieldError("classes", f"classes must be at most {MAX_CLASSES} ServiceClass")
    names = [c.name for c in classes]
    if len(set(names)) != len(names):
        raise check.FieldError("classes", f"class names must be unique, got {', '.join(names)}")
    total = sum(c.share for c in classes)
    if abs(total - 1.0) > _SHARE_SUM_SLACK:
        raise check.FieldError(
            "classes",
            f"class shares must add up to 100%, got {total * 100:g}% ({', '.join(names)})",
        )


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


def _percent(value: Any) -> float:
    """``20`` or ``"20%"``: a percent, as a fraction."""
    if isinstance(value, str):
        return parse_fraction(value, what="share")
    return check.number("share", value, above=0, at_most=100, what="share (percent)") / 100


def _headers(value: Any) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict):
        raise ValueError(f"expected a mapping of header names to text, got {value!r}")
    return tuple((str(name), str(text)) for name, text in value.items())


def _service_class(context: _Context, value: Any, line: int, key: str) -> ServiceClass:
    node = context.mapping(value, line, key, ("name", "share", "priority", "headers"))
    for name in ("name", "share"):
        if name not in node:
            raise context.fail(node.line, f"{key}.{name}", "missing")
    name = context.field(node, "name", key, check.as_text)
    share = context.field(node, "share", key, _percent)
    priority = context.field(node, "priority", key, check.as_int) if "priority" in node else None
    headers = context.field(node, "headers", key, _headers) if "headers" in node else ()
    return context.build(node, key, lambda: ServiceClass(name, share, priority, headers))


def _classes(context: _Context, value: Any, line: int) -> tuple[ServiceClass, ...]:
    if not isinstance(value, list) or not value:
        raise context.fail(line, "workload.classes", "expected a non-empty list of classes")
    lines = getattr(value, "item_lines", [line] * len(value))
    classes = tuple(
        _service_class(context, item, item_line, f"workload.classes[{index}]")
        for index, (item, item_line) in enumerate(zip(value, lines, strict=True))
    )
    try:
        check_traffic(None, classes)
    except SpecError as error:
        raise context.fail(line, "workload.classes", str(error)) from None
    return classes


def parse_traffic_keys(context: _Context, workload: LineMap) -> dict[str, object]:
    """``Workload`` keyword arguments for the ``retry:`` and ``classes:`` a workload has."""
    options: dict[str, object] = {}
    if "retry" in workload:
        options["retry"] = _retry(context, workload["retry"], workload.key_lines["retry"])
    if "classes" in workload:
        line = workload.key_lines["classes"]
        options["classes"] = _classes(context, workload["classes"], line)
    return options
