"""Credentials that cannot leak by being shown: ``Secret('***')`` in every repr and str.

A token or API key is read from the environment into a :class:`Secret` and travels as
one: through specs, server descriptions, ``pytest -l`` locals, logs and reports it
shows as ``Secret('***')``. Only the code that hands it to the other side (the
environment given to the Docker SDK, the ``Authorization`` header) calls
:meth:`Secret.reveal`, at that point and nowhere else. Texts that may quote a secret
(a server's error body, a container's log lines) go through :func:`redact`.
"""

from __future__ import annotations

import os
from collections.abc import Iterable

REDACTED = "***"
_MIN_PREFIX = 4  # a cut-off secret's head this long is still hidden
MIN_QUOTED = 8  # any stretch of a secret this long, anywhere in a text, is hidden


class Secret:
    """A credential's value, redacted wherever it is shown. ``name``: where it came
    from (an environment variable's name), safe to show."""

    __slots__ = ("_value", "name")

    def __init__(self, value: str, name: str = "") -> None:
        self._value = value
        self.name = name

    def reveal(self) -> str:
        """The value itself: call only where it leaves the process."""
        return self._value

    def __repr__(self) -> str:
        return f"Secret({REDACTED!r})"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return repr(self)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash((Secret, self._value))

    def __bool__(self) -> bool:
        return bool(self._value)


def from_environment(name: str) -> Secret | None:
    """The environment variable ``name`` as a Secret; None when unset or empty."""
    value = os.environ.get(name)
    return Secret(value, name) if value else None


def redact(text: str, secrets: Iterable[Secret | str]) -> str:
    """``text`` with every secret's value as ***: the whole value, any stretch of
    :data:`MIN_QUOTED` or more of its characters (a server quoting part of the key), and
    a cut-off head of at least 4 characters at the text's end."""
    for secret in secrets:
        value = secret.reveal() if isinstance(secret, Secret) else secret
        if not value:
            continue
        text = text.replace(value, REDACTED)
        text = _redact_stretches(text, value)
        stripped = text.rstrip("…")
        for length in range(min(len(value) - 1, len(stripped)), _MIN_PREFIX - 1, -1):
            if stripped.endswith(value[:length]):
                text = stripped[:-length] + REDACTED + text[len(stripped) :]
                break
    return text


def _redact_stretches(text: str, value: str) -> str:
    """Every maximal stretch of ``text`` that is a substring of ``value`` and at least
    MIN_QUOTED long, as ***."""
    if len(value) < MIN_QUOTED:
        return text
    windows = {value[i : i + MIN_QUOTED] for i in range(len(value) - MIN_QUOTED + 1)}
    out: list[str] = []
    start = 0
    i = 0
    while i <= len(text) - MIN_QUOTED:
        if text[i : i + MIN_QUOTED] not in windows:
            i += 1
            continue
        end = i + MIN_QUOTED
        while end < len(text) and text[i : end + 1] in value:
            end += 1
        out += [text[start:i], REDACTED]
        start = i = end
    out.append(text[start:])
    return "".join(out)
