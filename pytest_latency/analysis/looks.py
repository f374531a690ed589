"""Looks at accumulating data: alpha spending, and the rounds of an ``until_decided`` run.

A run that extends until its objectives are decided judges them after every round, on
every record so far. Judging repeatedly at the full confidence would make a false
verdict more likely with each look, so each look gets its own share of the error
budget ``alpha = 1 - confidence``, spent by the Lan-DeMets O'Brien-Fleming function:
look k at information fraction ``t_k`` decides at ``1 - (f(t_k) - f(t_{k-1}))`` with
``f(t) = 2 - 2 * Phi(z_{alpha/2} / sqrt(t))``. The shares add up to alpha, and a false
verdict at any look is a false verdict at that look's share, so the chance of any false
verdict over all looks stays under alpha (a union bound; it holds whatever the
dependence between looks). Early looks get very little alpha (they stop only on clear
evidence); the last look gets most of it.

The schedule is planned before anything is sent, from the budget alone: the first
round is the workload as written, every later round adds whole episodes (the phases
in order, as ``repeat:`` does, a cool-down apart), and the information fraction of a
look is its episodes over the most the budget can hold. Nothing in the schedule
depends on the data, so stopping early only leaves later shares unspent. Pure.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from scipy.stats import norm

from pytest_latency.spec.model import Workload

# Silence between rounds when the workload has no cooldown of its own: each round's
# drive already waits for its last response, so this only lets a server's late work end.
DEFAULT_ROUND_COOLDOWN_S = 1.0
# Planned per episode for the drain after the last request is sent, the join of the
# server's spans and the look itself. Measured on the README workload against the
# embedded server: a 35 s episode took 41-43 s a round (its burst's last answers end
# ~5 s late). A round that does not fit is not run, and the last look holds most of
# the alpha, so the plan errs long.
DRAIN_ALLOWANCE = 0.25
MIN_DRAIN_S = 2.0
# At most this many looks: more would spend the budget in slivers.
MAX_LOOKS = 8
# A look's share of alpha is at least this: 1 - share must stay below 1.0 in floating
# point for a bound to exist at all. It adds at most MAX_LOOKS * 1e-12 to alpha.
MIN_LOOK_SHARE = 1e-12


def look_confidences(alpha: float, looks: Sequence[float]) -> list[float]:
    """Per-look confidence spending ``alpha`` by O'Brien-Fleming (Lan-DeMets) over ``looks``
    (information fractions, increasing, the last 1.0)."""
    z = float(norm.isf(alpha / 2.0))
    spent = [2.0 - 2.0 * float(norm.cdf(z / math.sqrt(t))) for t in looks]
    spent[-1] = alpha  # the last look spends what is left
    shares = [later - earlier for earlier, later in zip([0.0, *spent[:-1]], spent, strict=True)]
    return [1.0 - max(share, 1e-300) for share in shares]


def round_cooldown_s(workload: Workload) -> float:
    """The silence before each added episode: the workload's cooldown, else a default."""
    return workload.cooldown_s if workload.cooldown_s > 0 else DEFAULT_ROUND_COOLDOWN_S


def drain_allowance_s(workload: Workload) -> float:
    """Time planned after a round's last planned send for its responses to end."""
    return max(MIN_DRAIN_S, DRAIN_ALLOWANCE * workload.episode_s)


def episode_cost_s(workload: Workload) -> float:
    """What one added episode costs the budget as planned: cooldown, phases, drain share."""
    return round_cooldown_s(workload) + workload.episode_s * (1.0 + DRAIN_ALLOWANCE)


@dataclass(frozen=True, slots=True)
class LookSchedule:
    """Episodes added per round (the first round: the workload as written)."""

    rounds: tuple[int, ...]  # episodes in each round, in order
    max_s: float

    @property
    def episodes(self) -> int:
        """The most episodes the budget holds."""
        return sum(self.rounds)

    def cumulative(self) -> list[int]:
        """Episodes run after each round."""
        total, out = 0, []
        for size in self.rounds:
            total += size
            out.append(total)
        return out

    def fractions(self) -> list[float]:
        """Each look's information fraction: its episodes over the most planned."""
        return [done / self.episodes for done in self.cumulative()]

    def confidences(self, confidence: float) -> list[float]:
        """Each look's confidence for an objective whose whole budget is ``confidence``."""
        if len(self.rounds) == 1:
            return [confidence]
        looks = look_confidences(1.0 - confidence, self.fractions())
        return [min(look, 1.0 - MIN_LOOK_SHARE) for look in looks]


def plan_looks(workload: Workload, max_s: float) -> LookSchedule:
    """The rounds ``max_s`` can hold: the workload whole, then episodes while they fit.

    Later rounds are equal (the last may be smaller), at most ``MAX_LOOKS`` looks in all.
    """
    first = workload.duration_s + drain_allowance_s(workload)
    extra = max(0, math.floor((max_s - first) / episode_cost_s(workload) + 1e-9))
    if extra == 0:
        return LookSchedule((workload.repeat,), max_s)
    size = math.ceil(extra / (MAX_LOOKS - 1))
    later = [size] * (extra // size) + ([extra % size] if extra % size else [])
    return LookSchedule((workload.repeat, *later), max_s)


def round_cost_s(workload: Workload, episodes: int) -> float:
    """Planned cost of a later round of ``episodes`` episodes."""
    return episodes * episode_cost_s(workload)


def extended(workload: Workload, episodes: int) -> Workload:
    """``workload`` run for ``episodes`` episodes, a round cooldown apart: the timeline
    every round's records are placed on (drains between rounds are not on it)."""
    from dataclasses import replace

    if episodes == workload.repeat:
        return workload
    return replace(workload, repeat=episodes, cooldown_s=round_cooldown_s(workload))


@dataclass(frozen=True, slots=True)
class Look:
    """One look: after which round, on how much data, and what was still undecided."""

    round: int  # 1-based
    episodes: int
    requests: int
    elapsed_s: float  # wall clock since the run started
    confidence: float  # per objective at this look (already the look's share)
    undecided: tuple[str, ...]  # labels of the objectives still inconclusive

    def to_json(self) -> dict[str, object]:
        return {
            "round": self.round,
            "episodes": self.episodes,
            "requests": self.requests,
            "elapsed_s": self.elapsed_s,
            "confidence": self.confidence,
            "undecided": list(self.undecided),
        }


@dataclass(slots=True)
class UntilDecided:
    """An ``until_decided`` run's looks and budget: what the JSON and summary show."""

    max_s: float
    schedule: LookSchedule
    looks: list[Look] = field(default_factory=list)
    used_s: float = 0.0
    stopped: str = ""  # why no further round ran

    def final_confidence(self, confidence: float) -> float:
        """The confidence of the last look taken, for an objective whose budget is
        ``confidence``: the final verdicts are judged at it, as the look was."""
        index = max(len(self.looks), 1) - 1
        return self.schedule.confidences(confidence)[index]

    def summary(self) -> str:
        """One line: looks, budget used, and why it stopped."""
        counts = ", ".join(
            f"{look.requests} requests/{len(look.undecided)} undecided" for look in self.looks
        )
        return (
            f"until_decided: {len(self.looks)} look(s) ({counts}); {self.used_s:.0f}s of"
            f" {self.max_s:.0f}s budget used; {self.stopped}"
        )

    def to_json(self) -> dict[str, object]:
        return {
            "max_s": self.max_s,
            "used_s": self.used_s,
            "planned_rounds": list(self.schedule.rounds),
            "stopped": self.stopped,
        }


def stored_final_confidence(
    until_decided: Mapping[str, Any] | None, looks: Sequence[object] | None, confidence: float
) -> float:
    """The confidence a saved run's objectives were judged at: its last look's share of
    ``confidence`` (the JSON's ``until_decided`` and ``looks``), or ``confidence`` for a
    run that did not extend. For ``judge``, to re-decide such a run as it was decided."""
    if not until_decided or not looks:
        return confidence
    rounds = tuple(int(size) for size in until_decided["planned_rounds"])
    schedule = LookSchedule(rounds, float(until_decided["max_s"]))
    return schedule.confidences(confidence)[min(len(looks), len(rounds)) - 1]
