"""Value checks shared by the spec dataclasses (Python API) and the YAML loader.

Each check takes the value as given (any type), and returns it converted or raises
:class:`FieldError`, a :class:`~pytest_latency.errors.SpecError` that also names the
field, so the YAML loader can point at the line of that key. Numbers must be real,
finite and inside their bounds; ``bool`` is never a number.
"""

from __future__ import annotations

import difflib
import math
import numbers
import re
from collections.abc import Iterable, Sequence

from pytest_latency._units import parse_duration
from pytest_latency.errors import SpecError


class FieldError(SpecError):
    """An invalid value of one field (``field`` is the Python attribute name)."""

    def __init__(self, field: str, message: str) -> None:
        self.field = field
        super().__init__(message)


def shown(value: object) -> str:
    """``repr(value)`` for a message, cut short (and safe for huge integers)."""
    try:
        text = repr(value)
    except ValueError:  # an int beyond the digit limit of int -> str
        text = f"<a {type(value).__name__} too large to print>"
    return text if len(text) <= 80 else text[:77] + "..."


def _is_real(value: object) -> bool:
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def number(
    field: str,
    value: object,
    *,
    above: float | None = None,
    at_least: float | None = None,
    below: float | None = None,
    at_most: float | None = None,
    what: str = "",
) -> float:
    """A finite real number inside the given (open or closed) bounds, as float."""
    label = what or field
    if not _is_real(value):
        raise FieldError(field, f"{label} must be a number, got {shown(value)}")
    try:
        result = float(value)  # type: ignore[arg-type]  # a numbers.Real
    except OverflowError:
        result = math.inf
    if not math.isfinite(result):
        raise FieldError(field, f"{label} must be a finite number, got {shown(value)}")
    limits = [
        (above is None or result > above, f"> {above:g}" if above is not None else ""),
        (
            at_least is None or result >= at_least,
            f">= {at_least:g}" if at_least is not None else "",
        ),
        (below is None or result < below, f"< {below:g}" if below is not None else ""),
        (at_most is None or result <= at_most, f"<= {at_most:g}" if at_most is not None else ""),
    ]
    if not all(ok for ok, _ in limits):
        wanted = " and ".join(text for _, text in limits if text)
        raise FieldError(field, f"{label} must be {wanted}, got {shown(value)}")
    return result


def percentile(field: str, value: object, *, what: str = "p") -> float:
    """A percentile written as a percentage, 1 < p < 100: 50, 95, 99.9.

    0 < p <= 1 reads as a fraction (0.95 for p95), the commonest slip, so it is refused
    with the fix. p100, the maximum, is refused too: no sample bounds it (the next
    request may be slower than any seen), so an objective on it could never pass.
    """
    result = number(field, value, what=what)
    if 0 < result < 1:
        problem = f"{what} is a percentile: use {result * 100:.15g}, not {result:.15g}"
    elif result == 1:
        problem = f"{what}=1 reads as a fraction (100%): write a percentile such as 50, 95 or 99"
    elif result == 100:
        problem = (
            f"{what} must be below 100: the maximum cannot be bounded from a sample (the next"
            " request may be slower than any seen); use 99.9, or itl_max for a stall"
        )
    elif not 1 < result < 100:
        problem = f"{what} must be a percentile between 1 and 100 (exclusive), got {shown(value)}"
    else:
        return result
    raise FieldError(field, problem)


def whole(field: str, value: object, low: int, high: int, *, what: str = "") -> int:
    """An integer (not bool) in ``low..high`` inclusive."""
    label = what or field
    if not isinstance(value, numbers.Integral) or isinstance(value, bool):
        raise FieldError(field, f"{label} must be a whole number, got {shown(value)}")
    result = int(value)
    if not low <= result <= high:
        raise FieldError(
            field, f"{label} must be a whole number in {low}..{high}, got {shown(value)}"
        )
    return result


def text(field: str, value: object, *, what: str = "", optional: bool = False) -> str | None:
    """A non-empty string (or None when ``optional``)."""
    if value is None and optional:
        return None
    if not isinstance(value, str) or not value:
        raise FieldError(field, f"{what or field} must be a non-empty string, got {shown(value)}")
    return value


def flag(field: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise FieldError(field, f"{field} must be true or false, got {shown(value)}")
    return value


def token_range(
    field: str, value: object, low: int, high: int, *, what: str = ""
) -> tuple[int, int]:
    """``(low, high)`` token counts within ``low..high``, first <= second."""
    label = what or field
    if isinstance(value, str) or not isinstance(value, Sequence) or len(value) != 2:
        raise FieldError(field, f"{label} must be [low, high] token counts, got {shown(value)}")
    first = whole(field, value[0], low, high, what=label)
    second = whole(field, value[1], low, high, what=label)
    if first > second:
        raise FieldError(field, f"{label} must be [low, high] with low <= high, got {shown(value)}")
    return first, second


def choice(field: str, value: object, allowed: tuple[str, ...], *, what: str = "") -> str:
    if not isinstance(value, str) or value not in allowed:
        raise FieldError(
            field,
            f"{what or field} must be one of {', '.join(allowed)}, got {shown(value)}"
            + did_you_mean(value, allowed),
        )
    return value


def did_you_mean(name: object, choices: Iterable[str]) -> str:
    """``"; did you mean 'phase'?"`` for the closest choice (difflib), or "" if none is close."""
    if not isinstance(name, str):
        return ""
    close = difflib.get_close_matches(name, list(choices), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def unknown_phase(name: object, phases: Iterable[str]) -> str:
    """The problem of a phase name the plan does not have, with the closest one."""
    names = sorted(phases)
    return f"unknown phase {name!r}; the workload has: {', '.join(names)}" + did_you_mean(
        name, names
    )


# YAML scalars: conversions that raise ValueError, which the loader reports at the key.


def as_int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"expected a whole number, got {shown(value)}")
    return value


def as_number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise ValueError(f"expected a number, got {shown(value)}")
    if isinstance(value, int) and abs(value) >= 1e300:
        return math.inf  # float() would raise OverflowError
    return float(value)


def as_positive(value: object) -> float:
    number = as_number(value)
    if not number > 0:
        raise ValueError(f"must be > 0, got {shown(value)}")
    return number


def as_positive_duration(value: object) -> float:
    seconds = parse_duration(value)
    if not seconds > 0:
        raise ValueError(f"must be > 0, got {shown(value)}")
    return seconds


def as_text(value: object) -> str:
    if not isinstance(value, str) or not value:
        raise ValueError(f"expected a non-empty string, got {shown(value)}")
    return value


def as_token_range(value: object) -> tuple[int, int]:
    if isinstance(value, list) and len(value) == 2:
        return as_int(value[0]), as_int(value[1])
    if isinstance(value, int) and not isinstance(value, bool):
        return value, value
    raise ValueError(f"expected a token count or [low, high], got {shown(value)}")


def as_flag(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError(f"expected true or false, got {shown(value)}")
    return value


_GPU_ID = re.compile(r"\d+|(GPU|MIG)-[0-9A-Za-z/-]+")


def parse_gpus(value: object) -> str:
    """GPUs as Docker's ``--gpus`` takes them; ValueError otherwise.

    ``all``; a count (``2``: any two GPUs); or device ids: ``device=1`` for one device,
    ``0,1`` or ``device=0,1`` for several, ``GPU-<uuid>`` as well. A bare single number
    is a count, as in Docker; ``0`` is refused (leave gpus out for none).
    """
    problem = f"gpus must be all, a count, or device ids (device=1, 0,1); got {value!r}"
    if isinstance(value, bool) or not isinstance(value, str | int):
        raise ValueError(problem)
    text = str(value).strip()
    if text == "all" or (text.isdigit() and int(text) > 0):
        return text
    names_devices = "," in text or text.startswith("device=") or not text.isdigit()
    if names_devices and all(_GPU_ID.fullmatch(part) for part in gpu_ids(text)):
        return text
    raise ValueError(problem)


def gpu_ids(gpus: str) -> list[str]:
    """The device ids a ``gpus`` value names (``device=1``, ``0,1``, ``GPU-<uuid>``)."""
    return [part.strip() for part in gpus.removeprefix("device=").split(",")]


MAX_UNTIL_DECIDED_S = 7 * 24 * 3600.0  # an until_decided budget: at most a week


def until_decided(value: object, episode_s: float) -> float:
    """``until_decided`` max in seconds: positive, finite, and room for one episode."""
    what = "until_decided max (seconds)"
    seconds = number("until_decided_s", value, above=0, at_most=MAX_UNTIL_DECIDED_S, what=what)
    if seconds < episode_s:
        raise FieldError(
            "until_decided_s",
            f"until_decided max {seconds:g}s is shorter than one pass of the phases"
            f" ({episode_s:g}s), so no round fits: give it several, e.g."
            f" max: {math.ceil(4 * episode_s)}s",
        )
    return seconds
