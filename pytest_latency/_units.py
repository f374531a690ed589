"""Parsing of the human units used in specs and flags: durations, rates, percentages.

One place so YAML, Python and command-line values agree on what "700ms" means.
"""

from __future__ import annotations

import math
import re

_DURATION = re.compile(r"^\s*([0-9]*\.?[0-9]+(?:[eE][-+]?[0-9]+)?)\s*(us|µs|ms|s|m|min|h)?\s*$")
# Sub-second units divide rather than multiply so "700ms" is exactly 0.7, as written.
_DIVISOR = {"us": 1e6, "µs": 1e6, "ms": 1e3, "s": 1.0}
_MULTIPLIER = {"m": 60.0, "min": 60.0, "h": 3600.0}
_PERCENT = re.compile(r"^\s*([0-9]*\.?[0-9]+)\s*%\s*$")


def parse_duration(value: object) -> float:
    """Seconds from ``30s``, ``700ms``, ``1.5`` (seconds) or a number; ValueError otherwise."""
    if isinstance(value, bool):
        raise ValueError(f"expected a duration such as 700ms or 30s, got {value!r}")
    if isinstance(value, int | float):
        seconds = float(value) if abs(value) < 1e300 else math.inf
    elif isinstance(value, str):
        match = _DURATION.match(value)
        if match is None:
            raise ValueError(f"expected a duration such as 700ms or 30s, got {value!r}")
        unit = match.group(2) or "s"
        number = float(match.group(1))
        seconds = number * _MULTIPLIER[unit] if unit in _MULTIPLIER else number / _DIVISOR[unit]
    else:
        raise ValueError(f"expected a duration such as 700ms or 30s, got {value!r}")
    if not 0 <= seconds < math.inf:
        raise ValueError(f"a duration must be finite and zero or positive, got {value!r}")
    return seconds


def parse_fraction(value: object) -> float:
    """A fraction in [0, 1] from ``1%``, ``0.5%`` or a plain number already in [0, 1]."""
    if isinstance(value, bool):
        raise ValueError(f"expected a percentage such as 1%, got {value!r}")
    if isinstance(value, str):
        match = _PERCENT.match(value)
        if match is None:
            raise ValueError(f"expected a percentage such as 1%, got {value!r}")
        fraction = float(match.group(1)) / 100.0
    elif isinstance(value, int | float):
        fraction = float(value) if abs(value) < 1e300 else math.inf
    else:
        raise ValueError(f"expected a percentage such as 1%, got {value!r}")
    if not 0.0 <= fraction <= 1.0:
        raise ValueError(f"a fraction must lie between 0% and 100%, got {value!r}")
    return fraction


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
