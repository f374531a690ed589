"""Release-gate objectives: their names, limits and checks (docs/specs.md "Release gates").

* ``attainment``: the fraction of offered requests that meet every per-request threshold
  (``ttft``, ``tpot``, ``itl``, ``e2e``; vLLM's and AIPerf's names are aliases) must be at
  least ``min`` (a percentage).
* ``recovery``: after the phase named by ``after``, the time until the service is back
  within its steady behaviour must be at most ``max`` (a duration).
* ``capacity``: the capacity search's bracket (``capacity:`` / ``latency.capacity()``,
  docs/capacity.md) must show every other objective passing at ``min`` req/s or more.

Both build the one :class:`~pytest_latency.spec.model.Objective`; this module holds their
parsing and validation so that spec.py stays about the common objective.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, NamedTuple, Protocol, get_args

from pytest_latency._units import parse_duration, parse_fraction
from pytest_latency.errors import SpecError
from pytest_latency.spec import checks as check

GateMetric = Literal["attainment", "recovery", "capacity"]
GATE_METRICS: tuple[str, ...] = get_args(GateMetric)
#: Per-request thresholds an attainment objective may set, by every accepted name.
THRESHOLD_ALIASES: dict[str, str] = {
    "ttft": "ttft",
    "time_to_first_token": "ttft",  # AIPerf, vLLM's metrics
    "tpot": "tpot",
    "time_per_output_token": "tpot",
    "inter_token_latency": "tpot",  # AIPerf's per-request (e2e - ttft) / (tokens - 1)
    "itl": "itl",  # this project's per-request median inter-token gap
    "e2e": "e2e",
    "e2el": "e2e",  # vLLM bench serve --goodput
    "request_latency": "e2e",  # AIPerf
    "e2e_latency": "e2e",
}
MAX_THRESHOLD_S = 24 * 3600.0
MAX_CAPACITY_RPS = 100_000.0  # as a phase's rate (spec_phase.MAX_RATE)


class GateLimits(NamedTuple):
    """What a gate objective holds besides its metric."""

    max_s: float | None
    min_value: float | None
    thresholds: tuple[tuple[str, float], ...]
    after: str | None


class _GateFields(Protocol):
    @property
    def metric(self) -> str: ...
    @property
    def max_s(self) -> float | None: ...
    @property
    def p(self) -> float | None: ...
    @property
    def phase(self) -> str | None: ...
    @property
    def max_regression(self) -> float | None: ...
    @property
    def min_change_s(self) -> float: ...
    @property
    def thresholds(self) -> tuple[tuple[str, float], ...]: ...
    @property
    def min_value(self) -> float | None: ...
    @property
    def after(self) -> str | None: ...
    @property
    def scope(self) -> str: ...


def canonical_threshold(name: str, metric: str = "attainment") -> str:
    """The metric a threshold name stands for (``e2el`` -> ``e2e``); SpecError if unknown."""
    try:
        return THRESHOLD_ALIASES[name]
    except KeyError:
        known = ", ".join(sorted(set(THRESHOLD_ALIASES.values())))
        raise SpecError(
            f"objective {metric}: unknown threshold {name!r}; thresholds are {known}"
            " (aliases: e2el, time_to_first_token, inter_token_latency, request_latency, ...)"
        ) from None


def threshold_items(values: Mapping[str, float], metric: str) -> tuple[tuple[str, float], ...]:
    """Thresholds under their canonical names, sorted; SpecError on a metric given twice."""
    named: dict[str, float] = {}
    for name, seconds in values.items():
        canonical = canonical_threshold(name, metric)
        if canonical in named:
            raise SpecError(f"objective {metric}: threshold {canonical} given twice ({name})")
        named[canonical] = seconds
    return tuple(sorted(named.items()))


def check_gate(objective: _GateFields) -> None:
    """Validate a gate objective's fields; SpecError (a FieldError) naming the bad one."""
    metric = objective.metric
    if objective.p is not None:
        raise check.FieldError("p", f"objective {metric} takes no percentile p")
    if objective.max_regression is not None or objective.min_change_s:
        raise check.FieldError(
            "max_regression", f"objective {metric} is absolute: no max_regression or min_change"
        )
    if metric == "attainment":
        _check_attainment(objective)
    elif metric == "capacity":
        _check_capacity(objective)
    else:
        _check_recovery(objective)


def _check_capacity(objective: _GateFields) -> None:
    if objective.thresholds or objective.max_s is not None or objective.after is not None:
        raise check.FieldError("min_value", "objective capacity takes min (req/s) only")
    if objective.phase is not None:
        raise check.FieldError("phase", "objective capacity takes no phase: probes make them")
    check.number(
        "min_value",
        objective.min_value,
        above=0,
        at_most=MAX_CAPACITY_RPS,
        what="capacity min (requests/s)",
    )


def _check_attainment(objective: _GateFields) -> None:
    if objective.max_s is not None or objective.after is not None:
        raise check.FieldError("max_s", "objective attainment takes min (e.g. 95%), not max/after")
    if not objective.thresholds:
        raise check.FieldError(
            "thresholds",
            "objective attainment needs at least one threshold, e.g. ttft: 700ms, e2e: 10s",
        )
    for name, seconds in objective.thresholds:
        canonical_threshold(name)
        check.number(
            name, seconds, above=0, at_most=MAX_THRESHOLD_S, what=f"attainment threshold {name}"
        )
    check.number("min_value", objective.min_value, above=0, at_most=1, what="attainment min")


def _check_recovery(objective: _GateFields) -> None:
    if objective.thresholds or objective.min_value is not None:
        raise check.FieldError("thresholds", "objective recovery takes max and after only")
    if objective.phase is not None:
        raise check.FieldError("phase", "objective recovery takes after: <phase>, not phase:")
    check.text("after", objective.after, what="objective recovery: after (the burst phase)")
    check.number("max_s", objective.max_s, above=0, at_most=MAX_THRESHOLD_S, what="recovery max")


def gate_label(objective: _GateFields) -> str:
    """How reports print a gate objective."""
    if objective.metric == "recovery":
        return f"recovery after {objective.after} <= {(objective.max_s or 0.0):g}s"
    if objective.metric == "capacity":
        return f"capacity >= {(objective.min_value or 0.0):g} req/s"
    limits = ", ".join(f"{name}<={seconds * 1e3:g}ms" for name, seconds in objective.thresholds)
    where = f" [{objective.scope}]" if objective.scope else ""  # its phase, class, cohort
    return f"attainment({limits}) >= {(objective.min_value or 0.0):.1%}{where}"


def gate_objective_fields(
    metric: str,
    max: object,
    max_s: object,
    max_ms: object,
    gate: Mapping[str, object],
) -> dict[str, Any] | None:
    """``objective()``'s gate fields for a gate metric; None for others (which take none).

    Release gates: ``objective("attainment", ttft="700ms", e2e="10s", min="95%")``,
    ``objective("recovery", max="10s", after="burst")`` and ``objective("capacity", min=20)``.
    """
    if metric not in GATE_METRICS:
        if gate:
            raise SpecError(f"objective {metric}: unexpected {', '.join(sorted(gate))}")
        return None
    return gate_limits(metric, {"max": max, "max_s": max_s, "max_ms": max_ms, **gate})._asdict()


def gate_limits(metric: str, keywords: Mapping[str, object]) -> GateLimits:
    """``objective()``'s keywords for a gate metric; SpecError naming the bad one."""
    try:
        return _gate_limits(metric, keywords)
    except ValueError as error:  # a unit error from _units; SpecErrors pass unchanged
        if isinstance(error, SpecError):
            raise
        raise SpecError(f"objective {error}") from None


def _gate_limits(metric: str, keywords: Mapping[str, object]) -> GateLimits:
    """``objective()``'s keywords for a gate metric, with units, to a :class:`GateLimits`.

    Attainment: thresholds as ``ttft="700ms"`` (or ``ttft_s=0.7``, ``ttft_ms=700``), and
    ``min="95%"`` (or ``min_fraction=0.95``). Recovery: ``max="10s"`` (or ``max_s=``,
    ``max_ms=``) and ``after="burst"``.
    """
    given = {name: value for name, value in keywords.items() if value is not None}
    if metric == "capacity":
        least = given.pop("min", None)
        if given:
            raise SpecError(f"objective capacity: unexpected {', '.join(sorted(given))}")
        return GateLimits(None, parse_rate(least), (), None)
    after = given.pop("after", None)
    if metric == "recovery":
        max_s = _duration(metric, "max", given)
        if given:
            raise SpecError(f"objective recovery: unexpected {', '.join(sorted(given))}")
        return GateLimits(max_s, None, (), after if isinstance(after, str) else None)
    if "min" in given and "min_fraction" in given:
        raise SpecError("objective attainment: give min or min_fraction, not both")
    min_value: object = given.pop("min_fraction", None)
    if "min" in given:
        min_value = parse_fraction(given.pop("min"), what="attainment min")
    thresholds: dict[str, float] = {}
    for name in sorted({_base(key) for key in given}):
        thresholds[name] = _duration(metric, name, given)
    if given:
        raise SpecError(f"objective attainment: unexpected {', '.join(sorted(given))}")
    if after is not None:
        raise SpecError("objective attainment takes no after")
    return GateLimits(None, min_value, threshold_items(thresholds, metric), None)  # type: ignore[arg-type]


def parse_rate(value: object) -> float:
    """A rate in requests/s: a number (``20``) or a string with its unit (``"20/s"``,
    ``"20 req/s"``, ``"20rps"``); a SpecError (a ValueError) saying how to write it."""
    number: object = value
    if isinstance(value, str):
        text = value.strip().lower()
        unit = next((unit for unit in ("req/s", "/s", "rps") if text.endswith(unit)), None)
        try:
            number = float(text[: -len(unit)]) if unit else None
        except ValueError:
            number = None
    if isinstance(number, bool) or not isinstance(number, int | float):
        raise SpecError(f'a rate is a number of requests per second (20, or "20/s"), got {value!r}')
    if not 0 < float(number) <= MAX_CAPACITY_RPS:  # NaN fails this too
        raise SpecError(f"a rate must be above 0 and at most {MAX_CAPACITY_RPS:g}/s, got {value!r}")
    return float(number)


def _base(key: str) -> str:
    for suffix in ("_s", "_ms"):
        if key.endswith(suffix) and key[: -len(suffix)] in THRESHOLD_ALIASES:
            return key[: -len(suffix)]
    return key


def _duration(metric: str, name: str, given: dict[str, object]) -> float:
    """``name`` as "700ms", ``name_s`` or ``name_ms`` (exactly one), popped from ``given``."""
    forms = [key for key in (name, f"{name}_s", f"{name}_ms") if key in given]
    if len(forms) != 1:
        raise SpecError(
            f'objective {metric}: give {name} once, as {name}="700ms", {name}_s= or {name}_ms='
        )
    value = given.pop(forms[0])
    if forms[0] == name:
        return parse_duration(value, what=f"{metric} {name}", guess="latency")
    number = check.number(forms[0], value, above=0, what=f"objective {metric}: {forms[0]}")
    return number / 1e3 if forms[0].endswith("_ms") else number
