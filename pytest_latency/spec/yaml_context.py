"""Where a ``*.slo.yaml`` parser is, for errors that name file, line and key.

A file's errors are collected, not raised one at a time: each part of the file (a
phase, an objective, a workload option) is parsed under :meth:`YamlContext.recover`,
which records its error and lets the parser go on with the next part, and the loader
raises them all at the end (:meth:`YamlContext.raise_collected`), one ``FILE:LINE: key:
problem`` per line, so a user fixes a file in one run instead of one run per mistake.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, TypeVar

from pytest_latency.errors import SpecError
from pytest_latency.spec.checks import did_you_mean
from pytest_latency.spec.yaml_lines import LineMap as _Map

T = TypeVar("T")
F = TypeVar("F")


class SpecFileError(SpecError):
    """A spec file is invalid: ``path:line: key: problem``.

    When a file has several errors, ``errors`` holds each (sorted by line), the message
    has one per line, and ``line``, ``key`` and ``problem`` are the first one's.
    """

    def __init__(
        self, path: Path, line: int, key: str, problem: str, errors: tuple[SpecFileError, ...] = ()
    ) -> None:
        self.path, self.line, self.key, self.problem = path, line, key, problem
        self.errors: tuple[SpecFileError, ...] = errors or (self,)
        if errors:
            super().__init__("\n".join(str(error) for error in errors))
        else:
            super().__init__(f"{path}:{line}: {key}: {problem}")


class PartInvalid(Exception):
    """A part of the file whose errors are already recorded: skip it, go on with the rest.

    Not a SpecError, so that no ``except SpecError`` between the part and the
    :meth:`YamlContext.recover` around it reports the part a second time.
    """


class YamlContext:
    """Where we are in the file, for error messages, and the errors found so far."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.errors: list[SpecFileError] = []

    def fail(self, line: int, key: str, problem: str) -> SpecFileError:
        return SpecFileError(self.path, line, key, problem)

    def report(self, line: int, key: str, problem: str) -> None:
        """Record an error and go on parsing."""
        self.errors.append(self.fail(line, key, problem))

    def recover(self, parse: Callable[[], T], fallback: F) -> T | F:
        """``parse()``; on a spec error, record it and return ``fallback``."""
        try:
            return parse()
        except SpecFileError as error:
            self.errors.extend(error.errors)
        except PartInvalid:
            pass
        return fallback

    def mark(self) -> int:
        """A place in the error list, for :meth:`check_since`."""
        return len(self.errors)

    def check_since(self, mark: int) -> None:
        """PartInvalid when errors were recorded since ``mark``: the part cannot be built."""
        if len(self.errors) > mark:
            raise PartInvalid

    def raise_collected(self) -> None:
        """Every error recorded, as one SpecFileError (sorted by line); nothing if none."""
        if not self.errors:
            return
        # One error per line and key (a key two checks refuse is reported once), by line.
        unique: dict[tuple[int, str], SpecFileError] = {}
        for error in self.errors:
            unique.setdefault((error.line, error.key), error)
        errors = tuple(sorted(unique.values(), key=lambda error: error.line))
        if len(errors) == 1:
            raise errors[0]
        first = errors[0]
        raise SpecFileError(self.path, first.line, first.key, first.problem, errors)

    def mapping(self, value: Any, line: int, key: str, allowed: tuple[str, ...]) -> _Map:
        """``value`` as a mapping; each unknown key is recorded with a suggestion."""
        if not isinstance(value, _Map):
            raise self.fail(line, key, f"expected a mapping, got {type(value).__name__}")
        for name in value:
            if name not in allowed:
                self.report(
                    value.key_lines[name],
                    f"{key}.{name}" if key else name,
                    f"unknown key; allowed: {', '.join(allowed)}{did_you_mean(name, allowed)}",
                )
        return value

    def field(self, parent: _Map, name: str, key: str, parse: Callable[[Any], T]) -> T:
        line = parent.key_lines.get(name, parent.line)
        try:
            return parse(parent[name])
        except (ValueError, TypeError) as error:
            raise self.fail(line, f"{key}.{name}" if key else name, str(error)) from None

    def fields(
        self, node: _Map, key: str, parsers: dict[str, Callable[[Any], Any]]
    ) -> dict[str, Any]:
        """Each of ``parsers``' keys that ``node`` has, parsed; every bad one is recorded."""
        values: dict[str, Any] = {}
        for name, parse in parsers.items():
            if name in node:
                values[name] = self.recover(partial(self.field, node, name, key, parse), None)
        return values

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
    "outage_s": "outage",
    "rate_to": "to",
    "until_decided_s": "until_decided",
}
