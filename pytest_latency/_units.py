"""Parsing of the human units used in specs and flags: durations and percentages.

One place so YAML, Python and command-line values agree on what "700ms" means. A
number without a unit is refused, because whether ``700`` meant 700 ms or 700 s (or
``1`` meant 1% or 100%) is a guess that, made silently, turns a strict objective into
one that always passes. The error shows the fix. ``0`` needs no unit: it is the same
in every unit.
"""

from __future__ import annotations

import math
import re
from typing import Literal

_NUMBER = r"([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)"
_DURATION = re.compile(rf"^\s*{_NUMBER}\s*(us|µs|ms|s|m|min|h)?\s*$")
# Sub-second units divide rather than multiply so "700ms" is exactly 0.7, as written.
_DIVISOR = {"us": 1e6, "µs": 1e6, "ms": 1e3, "s": 1.0}
_MULTIPLIER = {"m": 60.0, "min": 60.0, "h": 3600.0}
_PERCENT = re.compile(rf"^\s*{_NUMBER}\s*(%)?\s*$")

#: What a unit-less duration most likely meant, for the hint in its error: a latency
#: limit (ms when large, s when small) or a span of time (phase, timeout: seconds).
Guess = Literal["latency", "span"]


def plain(number: float) -> str:
    """A number as a person would write it: 700, 0.7, 1.5 (no trailing .0)."""
    return f"{number:.15g}"


def parse_duration(value: object, *, what: str = "", guess: Guess = "span") -> float:
    """Seconds from ``700ms``, ``30s``, ``250us``, ``2m``, ``1h`` (or ``0``); ValueError otherwise.

    A number without a unit (``700``, ``"1.5"``) is an error that suggests the unit,
    by what it most likely meant (``guess``, see :data:`Guess`). ``what`` names the
    value (``"ttft max"``) at the start of every error message.
    """
    try:
        return _duration(value, guess)
    except ValueError as error:
        raise ValueError(f"{what}: {error}" if what else str(error)) from None


def _duration(value: object, guess: Guess) -> float:
    problem = f"expected a duration such as 700ms or 30s, got {value!r}"
    if isinstance(value, bool):
        raise ValueError(problem)
    unit: str | None = None
    if isinstance(value, int | float):
        number = float(value) if abs(value) < 1e300 else math.inf
    elif isinstance(value, str):
        match = _DURATION.match(value)
        if match is None:
            raise ValueError(problem)
        number, unit = float(match.group(1)), match.group(2)
    else:
        raise ValueError(problem)
    if not 0 <= number < math.inf:
        raise ValueError(f"a duration must be finite and zero or positive, got {value!r}")
    if unit is not None:
        return number * _MULTIPLIER[unit] if unit in _MULTIPLIER else number / _DIVISOR[unit]
    if number == 0:
        return 0.0
    shown = plain(number)
    if guess == "span" or number < 1:
        fix = f"{shown}s"
    elif number > 10:
        fix = f"{shown}ms"
    else:  # 1..10: as plausible in seconds as in milliseconds
        fix = f"{shown}ms or {shown}s"
    raise ValueError(f"{shown} needs a unit: did you mean {fix}?")


def parse_fraction(value: object, *, what: str = "", fraction_key: str = "") -> float:
    """A fraction in [0, 1] from a percentage: ``1%``, ``0.5%`` (or ``0``); ValueError otherwise.

    A number without ``%`` is an error that shows both readings; ``fraction_key`` names
    the explicit-fraction form to offer (``"max_fraction: "`` in YAML, ``"max_fraction="``
    in Python). ``what`` names the value (``"error_rate max"``) at the start of every
    error message.
    """
    try:
        return _fraction(value, fraction_key)
    except ValueError as error:
        raise ValueError(f"{what}: {error}" if what else str(error)) from None


def _fraction(value: object, fraction_key: str) -> float:
    problem = f"expected a percentage such as 1%, got {value!r}"
    if isinstance(value, bool):
        raise ValueError(problem)
    percent = False
    if isinstance(value, str):
        match = _PERCENT.match(value)
        if match is None:
            raise ValueError(problem)
        number, percent = float(match.group(1)), match.group(2) is not None
    elif isinstance(value, int | float):
        number = float(value) if abs(value) < 1e300 else math.inf
    else:
        raise ValueError(problem)
    if not 0.0 <= number < math.inf or (percent and number > 100.0):
        raise ValueError(f"a percentage must lie between 0% and 100%, got {value!r}")
    if percent or number == 0:
        return number / 100.0
    shown = plain(number)
    if number > 1:  # cannot be a fraction
        alternative = f" (or {fraction_key}{plain(number / 100)})" if fraction_key else ""
        raise ValueError(f"{shown} needs a unit: write {shown}%{alternative}")
    as_fraction = f"{plain(number * 100)}%"
    if fraction_key:
        as_fraction += f" ({fraction_key}{shown})"
    raise ValueError(
        f"{shown} needs a unit: write {shown}%, or {as_fraction} if you meant a fraction"
    )


def format_seconds(seconds: float | None) -> str:
    """Humanise a duration for reports: 0.0312 -> '31.2ms', 2.8 -> '2.80s'."""
    if seconds is None or seconds != seconds:
        return "-"
    if seconds == float("inf"):
        return "inf"
    if seconds == float("-inf"):
        return "-inf"
    magnitude = abs(seconds)
    if magnitude < 1e-3:
        return f"{seconds * 1e6:.0f}µs"
    if magnitude < 1.0:
        return f"{seconds * 1e3:.1f}ms"
    return f"{seconds:.2f}s"
