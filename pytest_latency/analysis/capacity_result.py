"""A capacity search's results: each probe's verdicts and evidence, and the bracket.

:mod:`.capacity` runs the search and :mod:`.capacity_steps` chooses its rates; both
read these. Pure data with their JSON.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from pytest_latency.analysis.capacity_plan import RETRIES

MONOTONICITY = (
    "every objective that passes at an offered rate passes at every lower rate"
    " (latency and errors do not improve with more load)"
)


@dataclass(frozen=True, slots=True)
class ProbeEvidence:
    """What one probe verdict rests on: the estimate, its bounds, n and effective n.

    ``decided_as`` is the hypothesis tested (a percentile as a proportion); ``pooled``
    how many probes at this rate the verdict's requests came from (this one included).
    For the queue check the estimate is the growth of in flight (req/s), without
    bounds, and the limit the least growth that counts as runaway.
    """

    objective: str
    decided_as: str
    verdict: str
    estimate: float
    lower: float
    upper: float
    n: int
    n_effective: float | None  # None for the queue check
    unit: str  # fraction, seconds, or rps (the queue's growth)
    pooled: int = 1
    limit: float | None = None  # the hypothesis' limit, in unit
    at_least: bool = True  # the estimate passes at or over the limit (else at or under)

    @property
    def lean(self) -> float:
        """How far the estimate lies on the passing side of the limit, in half-widths of
        its interval (negative on the failing side; 0 without a finite interval or limit)."""
        half = (self.upper - self.lower) / 2.0
        if self.limit is None or not math.isfinite(half) or half <= 0:
            return 0.0
        distance = self.estimate - self.limit if self.at_least else self.limit - self.estimate
        return distance / half if math.isfinite(distance) else 0.0

    def to_json(self) -> dict[str, object]:
        def finite(value: float) -> float | None:
            return value if math.isfinite(value) else None

        return {
            "objective": self.objective,
            "decided_as": self.decided_as,
            "verdict": self.verdict,
            "estimate": finite(self.estimate),
            "lower": finite(self.lower),
            "upper": finite(self.upper),
            "n": self.n,
            "n_effective": None if self.n_effective is None else finite(self.n_effective),
            "unit": self.unit,
            "pooled": self.pooled,
            "limit": None if self.limit is None else finite(self.limit),
        }


@dataclass(frozen=True, slots=True)
class ProbeResult:
    """One probe: the offered rate, what was offered, each objective's verdict."""

    rate: float
    offered: int
    verdicts: dict[str, str]  # objective label -> pass / fail / inconclusive / invalid
    stopped_early: bool
    cost_s: float  # time spent, warm-up and drain included
    drain: str | None = None  # how a live probe's drain ended
    evidence: tuple[ProbeEvidence, ...] = ()  # what each verdict rests on

    @property
    def lean(self) -> float:
        """The weakest objective's :attr:`ProbeEvidence.lean` (the queue check aside):
        how far this probe is from deciding, and which way it tends."""
        leans = [item.lean for item in self.evidence if item.unit != "rps"]
        return min(leans) if leans else 0.0

    @property
    def served_rps(self) -> float | None:
        """The rate the server kept up with: the offered rate less the growth of requests
        in flight (the queue check's estimate); None without the check. Over a slot
        server's capacity it is about the capacity (a 4-slot server at 1.2x: 0.9x-1.1x
        in 60 s probes), under it the offered rate."""
        growth = [item.estimate for item in self.evidence if item.unit == "rps"]
        return self.rate - growth[0] if growth and math.isfinite(growth[0]) else None

    @property
    def outcome(self) -> str:
        """fail if any objective failed, pass if all passed, else inconclusive."""
        values = set(self.verdicts.values())
        if "fail" in values:
            return "fail"
        return "pass" if values == {"pass"} else "inconclusive"

    def to_json(self) -> dict[str, object]:
        return {
            "rate": self.rate,
            "offered": self.offered,
            "verdicts": dict(self.verdicts),
            "stopped_early": self.stopped_early,
            "outcome": self.outcome,
            "cost_s": self.cost_s,
            "drain": self.drain,
            "objectives": [item.to_json() for item in self.evidence],
        }


@dataclass(slots=True)
class CapacityResult:
    """The bracket and every probe, in the order run."""

    passed_rps: float | None
    failed_rps: float | None
    probes: list[ProbeResult]
    budget_s: float
    spent_s: float
    stopped: str  # why the search ended
    contradictions: list[str] = field(default_factory=list)
    retries: int = RETRIES  # probes at one rate at most (search_plan)

    @property
    def band(self) -> tuple[float, float] | None:
        """Where the capacity lies: (passed_rps, failed_rps); None while either is unknown."""
        if self.passed_rps is None or self.failed_rps is None or self.contradictions:
            return None
        return self.passed_rps, self.failed_rps

    @property
    def inconclusive_rps(self) -> list[float]:
        """Rates inside the bracket at which a probe decided nothing (the band between)."""
        low = self.passed_rps or 0.0
        high = math.inf if self.failed_rps is None else self.failed_rps
        return sorted(
            {p.rate for p in self.probes if p.outcome == "inconclusive" and low < p.rate < high}
        )

    def to_json(self) -> dict[str, object]:
        return {
            "passed_rps": self.passed_rps,
            "failed_rps": self.failed_rps,
            "probes": [probe.to_json() for probe in self.probes],
            "inconclusive_rps": self.inconclusive_rps,
            "band": None if self.band is None else list(self.band),
            "width": None if self.band is None else self.band[1] / self.band[0],
            "budget_s": self.budget_s,
            "spent_s": self.spent_s,
            "stopped": self.stopped,
            "assumption": MONOTONICITY,
            "contradictions": list(self.contradictions),
        }
