"""Where a ``*.slo.yaml`` parser is, for errors that name file, line and key."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from pytest_latency.errors import SpecError
from pytest_latency.spec.yaml_lines import LineMap as _Map

T = TypeVar("T")


class SpecFileError(SpecError):
    """A spec file is invalid: ``path:line: key: problem``."""

    def __init__(self, path: Path, line: int, key: str, problem: str) -> None:
        self.path, self.line, self.key, self.problem = path, line, key, problem
        super().__init__(f"{path}:{line}: {key}: {problem}")


class YamlContext:
    """Where we are in the file, for error messages."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def fail(self, line: int, key: str, problem: str) -> SpecFileError:
        return SpecFileError(self.path, line, key, problem)

    def mapping(self, value: Any, line: int, key: str, allowed: tuple[str, ...]) -> _Map:
        if not isinstance(value, _Map):
            raise self.fail(line, key, f"expected a mapping, got {type(value).__name__}")
        for name in value:
            if name not in allowed:
                raise self.fail(
                    value.key_lines[name],
                    f"{key}.{name}" if key else name,
                    f"unknown key; allowed: {', '.join(allowed)}",
                )
        return value

    def field(self, parent: _Map, name: str, key: str, parse: Callable[[Any], T]) -> T:
        line = parent.key_lines.get(name, parent.line)
        try:
            return parse(parent[name])
        except (ValueError, TypeError) as error:
            raise self.fail(line, f"{key}.{name}" if key else name, str(error)) from None

    def build(self, node: _Map, key: str, make: Callable[[], T]) -> T:
        """``make()``; its SpecError points at the key it names, else at the node."""
        try:
            return make()
        except SpecFileError:
            raise
        except SpecError as error:
            name = _YAML_NAMES.get(getattr(error, "field", ""), getattr(error, "field", ""))
            if name in node.key_lines:
                raise self.fail(node.key_lines[name], f"{key}.{name}", str(error)) from None
            raise self.fail(node.line, key, str(error)) from None


# Python attribute -> YAML key, where they differ.
_YAML_NAMES = {
    "duration_s": "duration",
    "timeout_s": "timeout",
    "warmup_requests": "warmup",
    "cooldown_s": "cooldown",
    "max_s": "max",
    "min_change_s": "min_change",
    "rate_to": "to",
    "until_decided_s": "until_decided",
}
