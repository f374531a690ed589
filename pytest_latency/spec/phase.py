"""Phases of a workload: a stretch of traffic at a rate, with an arrival shape.

Shapes: ``constant`` (evenly spaced), ``poisson``, ``gamma`` (vLLM's ``--burstiness``)
and ``ramp``: an inhomogeneous Poisson process whose rate moves linearly from ``rate``
to ``rate_to`` over the phase (YAML ``{arrival: ramp, from: 5, to: 25, duration: 30s}``).
A step schedule is a list of phases, one per step (docs/specs.md "Arrival shapes").
``trace`` replays a trace file at its instants (:func:`pytest_latency.spec.trace.trace_phase`).
``concurrent`` is closed loop: ``users`` simulated users, each sending its next request
when its previous one ended (plus ``think_time_s``), so never more than ``users`` are in
flight (YAML ``{arrival: concurrent, users: 4, duration: 10s}``; docs/workloads.md
"Fixed concurrency").
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal, get_args

from pytest_latency._units import parse_fraction
from pytest_latency.spec import checks as check
from pytest_latency.spec.trace_lines import Trace

Arrival = Literal["constant", "poisson", "gamma", "ramp", "trace", "concurrent"]
# The Literal type is the single source of the allowed values.
ARRIVALS: tuple[str, ...] = get_args(Arrival)
# Limits (docs/specs.md "Limits"): every number in a spec is finite and inside these.
MAX_RATE = 100_000.0  # requests/s in one phase
MAX_DURATION_S = 24 * 3600.0  # one phase, a cooldown, a latency limit, a min_change
MAX_BURSTINESS = 1000.0  # gamma shape; 1 is Poisson
MAX_USERS = 100_000  # users of one closed-loop phase
# A closed-loop phase plans this many requests per user and second up front (its
# prompts are built with the plan); a user that sends them all stops early and the
# summary says so. 20/s is a request of 50 ms on average, shorter than LLM answers.
POOL_REQUESTS_PER_USER_S = 20.0


@dataclass(frozen=True, slots=True)
class StopRule:
    """When a phase stops early; the rest of it is recorded as cancelled with the reason.

    ``error_rate``: once ``after`` of the phase's requests have ended, stop when more than
    this fraction of them failed. ``saturation``: over the phase's last ``after`` sends,
    stop when the requests in flight grow (least-squares slope) by at least this fraction
    of the offered rate and by at least ``MIN_SATURATION_GROWTH`` requests: the queue
    grows without bound (docs/specs.md "Stop rules").
    """

    error_rate: float | None = None
    saturation: float | None = None
    after: int = 50

    def __post_init__(self) -> None:
        if self.error_rate is None and self.saturation is None:
            raise check.FieldError("stop", "stop needs error_rate: and/or saturation:")
        for name in ("error_rate", "saturation"):
            value = getattr(self, name)
            if value is not None:
                check.number(name, value, above=0, at_most=1, what=f"stop {name}")
        check.whole("after", self.after, 1, 1_000_000, what="stop after")

    def to_json(self) -> dict[str, object]:
        return {"error_rate": self.error_rate, "saturation": self.saturation, "after": self.after}


MIN_SATURATION_GROWTH = 10  # requests: less growth than this is noise, not saturation


def parse_stop(value: object) -> StopRule:
    """``{error_rate: 20%, saturation: 50%, after: 50}`` (percentages with %); ValueError."""
    if not isinstance(value, Mapping):
        raise ValueError(
            f"stop must be a mapping such as {{error_rate: 20%, after: 50}}, got {value!r}"
        )
    unknown = sorted(set(value) - {"error_rate", "saturation", "after"})
    if unknown:
        raise ValueError(f"unknown stop key {unknown[0]!r}; allowed: error_rate, saturation, after")
    fractions = {
        name: parse_fraction(value[name], what=f"stop {name}")
        for name in ("error_rate", "saturation")
        if name in value
    }
    return StopRule(**fractions, after=check.as_int(value.get("after", 50)))


@dataclass(frozen=True, slots=True)
class Phase:
    """One stretch of traffic: requests arrive at ``rate`` per second for ``duration_s``.

    A ramp starts at ``rate`` and ends at ``rate_to``.

    ``burstiness`` shapes gamma arrivals as in vLLM's ``--burstiness``: 1 is Poisson,
    below 1 is burstier, above 1 is more regular.
    """

    name: str
    rate: float
    duration_s: float
    arrival: Arrival = "poisson"
    burstiness: float = 1.0
    rate_to: float | None = None  # ramp: the rate at the phase's end (``rate`` at its start)
    stop: StopRule | None = None  # stop the phase early (None: never)
    trace: Trace | None = None  # arrival "trace": the requests, rate and duration its own
    users: int | None = None  # arrival "concurrent": requests in flight, one per user
    think_time_s: float = 0.0  # arrival "concurrent": a user's pause between requests

    def __post_init__(self) -> None:
        check.text("name", self.name, what="phase name")
        where = f"phase {self.name!r}: "
        if self._check_concurrent(where):
            return
        if (self.arrival == "trace") != (self.trace is not None):
            raise check.FieldError(
                "trace", where + "arrival: trace needs a trace file: use trace_phase(file)"
            )
        ramp = self.arrival == "ramp"  # a ramp may start (or end) at 0 requests/s
        check.number(
            "rate",
            self.rate,
            above=None if ramp else 0,
            at_least=0 if ramp else None,
            at_most=MAX_RATE,
            what=where + ("from (requests/s)" if ramp else "rate (requests/s)"),
        )
        check.number(
            "duration_s", self.duration_s, above=0, at_most=MAX_DURATION_S, what=where + "duration"
        )
        check.choice("arrival", self.arrival, ARRIVALS, what=where + "arrival")
        check.number(
            "burstiness",
            self.burstiness,
            above=0,
            at_most=MAX_BURSTINESS,
            what=where + "burstiness",
        )
        self._check_ramp(where)

    def _check_concurrent(self, where: str) -> bool:
        """Validate a closed-loop phase (True) or refuse its fields elsewhere (False)."""
        if self.arrival != "concurrent":
            if self.users is not None or self.think_time_s:
                raise check.FieldError(
                    "users", where + "users: and think_time: need arrival: concurrent"
                )
            return False
        if self.users is None:
            raise check.FieldError("users", where + "arrival: concurrent needs users: (e.g. 4)")
        check.whole("users", self.users, 1, MAX_USERS, what=where + "users")
        check.number("rate", self.rate, at_least=0, at_most=0, what=where + "rate (closed loop)")
        check.number(
            "duration_s", self.duration_s, above=0, at_most=MAX_DURATION_S, what=where + "duration"
        )
        check.number(
            "think_time_s",
            self.think_time_s,
            at_least=0,
            at_most=MAX_DURATION_S,
            what=where + "think_time",
        )
        if self.rate_to is not None or self.trace is not None or self.burstiness != 1.0:
            raise check.FieldError("arrival", where + "a closed loop takes users:, not rates")
        if self.stop is not None and self.stop.saturation is not None:
            raise check.FieldError(
                "stop", where + "a closed loop cannot saturate its queue: use stop: error_rate"
            )
        return True

    def to_json(self) -> dict[str, object]:
        """The phase as given (optional keys only when set: baseline fingerprints keep)."""
        return {
            "name": self.name,
            "arrival": self.arrival,
            "rate": self.rate,
            "duration_s": self.duration_s,
            "burstiness": self.burstiness,
            **({"rate_to": self.rate_to} if self.rate_to is not None else {}),
            **({"stop": self.stop.to_json()} if self.stop is not None else {}),
            **({"trace": self.trace.to_json()} if self.trace is not None else {}),
            **(
                {"users": self.users, "think_time_s": self.think_time_s} if self.closed_loop else {}
            ),
        }

    @property
    def closed_loop(self) -> bool:
        """Users send when their previous request ended (no planned send times)."""
        return self.arrival == "concurrent"

    @property
    def requests_per_user(self) -> int:
        """Requests a closed-loop user may send at most (the plan's pool per user)."""
        return max(1, math.ceil(self.duration_s * POOL_REQUESTS_PER_USER_S))

    @property
    def planned_requests(self) -> float:
        """Requests the plan holds for one occurrence (a closed loop: its whole pool)."""
        if self.closed_loop and self.users is not None:
            return float(self.users * self.requests_per_user)
        return self.mean_rate * self.duration_s

    def _check_ramp(self, where: str) -> None:
        if self.arrival != "ramp":
            if self.rate_to is not None:
                raise check.FieldError("rate_to", where + "to: (rate_to) needs arrival: ramp")
            return
        if self.rate_to is None:
            raise check.FieldError("rate_to", where + "a ramp needs from: and to: rates")
        check.number("rate_to", self.rate_to, at_least=0, at_most=MAX_RATE, what=where + "to")
        if self.rate + self.rate_to <= 0:
            raise check.FieldError("rate_to", where + "a ramp from 0 to 0 sends nothing")

    @property
    def mean_rate(self) -> float:
        """Requests/s averaged over the phase (a ramp's mid-point rate)."""
        return self.rate if self.rate_to is None else (self.rate + self.rate_to) / 2.0


def steady(rate: float, duration_s: float, name: str = "steady") -> Phase:
    """A steady Poisson phase (the seed's 'normal load')."""
    return Phase(name=name, rate=rate, duration_s=duration_s, arrival="poisson")


def concurrent(
    users: int, duration_s: float, name: str = "users", think_time_s: float = 0.0
) -> Phase:
    """A closed-loop phase: ``users`` users, each sending its next request when its last
    one ended (after ``think_time_s``); never more than ``users`` in flight."""
    return Phase(
        name=name,
        rate=0.0,
        duration_s=duration_s,
        arrival="concurrent",
        users=users,
        think_time_s=think_time_s,
    )


def burst(rate: float, duration_s: float, name: str = "burst") -> Phase:
    """A short high-rate Poisson phase (the seed's 'short burst')."""
    return Phase(name=name, rate=rate, duration_s=duration_s, arrival="poisson")
