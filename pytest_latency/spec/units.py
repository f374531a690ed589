"""An objective's limits as people write them, to the numbers an ``Objective`` holds.

Every limit states its unit: in the value (``max="700ms"``, ``max="1%"``) or in the
keyword (``max_s=0.7``, ``max_ms=700``, ``max_fraction=0.01``). A number without one is
refused with the fix (see :mod:`pytest_latency._units`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import NamedTuple, cast

from pytest_latency._units import parse_duration, parse_fraction
from pytest_latency.errors import SpecError
from pytest_latency.spec import checks as check

#: The absolute limits, one of which (or ``max_regression``) an objective takes.
LIMIT_KEYWORDS = ("max", "max_s", "max_ms", "max_fraction")


class Limits(NamedTuple):
    """An objective's limits in its own terms: seconds, or a fraction for error_rate."""

    max_s: float | None
    max_regression: float | None
    min_change_s: float


def objective_limits(metric: str, keywords: Mapping[str, object]) -> Limits:
    """The limits from ``objective()``'s keywords (None where not given); SpecError otherwise."""
    given = [name for name, value in keywords.items() if value is not None]
    limits = [name for name in given if name in (*LIMIT_KEYWORDS, "max_regression")]
    if len(limits) != 1:
        got = f", got {' and '.join(limits)}" if limits else ""
        choices = ", ".join(LIMIT_KEYWORDS)
        raise SpecError(f"objective {metric}: give exactly one of {choices} or max_regression{got}")
    rate = metric == "error_rate"
    if limits[0] in ({"max_s", "max_ms"} if rate else {"max_fraction"}):
        fix = 'max="1%" or max_fraction=0.01' if rate else 'max="700ms", max_s= or max_ms='
        raise SpecError(f"objective {metric}: {limits[0]} does not apply; use {fix}")
    if "min_change" in given and "min_change_s" in given:
        raise SpecError(f"objective {metric}: give min_change or min_change_s, not both")
    try:
        return _convert(metric, rate, keywords)
    except ValueError as error:  # FieldError (a SpecError) passes through unchanged
        if isinstance(error, SpecError):
            raise
        raise SpecError(f"objective {error}") from None


def _convert(metric: str, rate: bool, keywords: Mapping[str, object]) -> Limits:
    limit: object = keywords.get("max_fraction") if rate else keywords.get("max_s")
    text = keywords.get("max")
    if text is not None:
        limit = (
            parse_fraction(text, what=f"{metric} max", fraction_key="max_fraction=")
            if rate
            else parse_duration(text, what=f"{metric} max", guess="latency")
        )
    elif keywords.get("max_ms") is not None:
        where = f"objective {metric}: max_ms"
        limit = check.number("max_ms", keywords["max_ms"], above=0, what=where) / 1e3
    regression = keywords.get("max_regression")
    if regression is not None:
        regression = parse_fraction(regression, what=f"{metric} max_regression")
    floor = keywords.get("min_change_s")
    if keywords.get("min_change") is not None:
        floor = parse_duration(keywords["min_change"], what=f"{metric} min_change", guess="latency")
    # Numbers given with their unit in the keyword pass as given: Objective checks them.
    return Limits(
        cast("float | None", limit),
        regression if isinstance(regression, float) else None,
        0.0 if floor is None else cast(float, floor),
    )


def outage_duration(metric: str, outage: object, outage_s: object) -> float | None:
    """``objective()``'s ``outage`` (``"2s"``) or ``outage_s`` in seconds; None if neither.
    Objective checks the number (error_rate only, above 0)."""
    if outage is not None and outage_s is not None:
        raise SpecError(f"objective {metric}: give outage or outage_s, not both")
    if metric != "error_rate" and (outage, outage_s) != (None, None):
        raise SpecError(f"objective {metric}: outage is for error_rate")
    if outage is None:
        return cast("float | None", outage_s)
    try:
        return parse_duration(outage, what=f"objective {metric}: outage", guess="span")
    except ValueError as error:
        raise SpecError(str(error)) from None
