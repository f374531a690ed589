"""Plan-time power: can the requests a plan offers ever decide its objectives?

The plan (every request, its phase and its planned lengths) is known before anything is
sent, so the number of samples each objective will have is known too. A bound needs a
minimum number of requests to exist at all:

* a percentile objective passes when the upper bound of its quantile is within the
  limit, and that bound exists only from ``n`` requests with ``1 - q**n >= 1 - tail``
  (``tail`` = half the error budget): 59 for a p95 at two-sided 90%, 125 at 99.67%;
* an ``error_rate`` objective passes when the Clopper-Pearson upper bound is within the
  max, which for zero failures needs ``(1 - max)**n <= tail``;
* a relative objective passes when the ratio's upper bound is within ``1 + r``: the
  candidate's quantile needs an upper bound at each side's share of the budget (the
  union bounds of :mod:`.stored`; the log-ratio test needs more).

These minimums are for **independent** requests. Correlated requests (a shared queue or
batch) hold less evidence and need more (:mod:`.dependence`), so they are a floor: a plan
under it can never pass the objective (it can only fail or be inconclusive), a plan over
it may still come out inconclusive. Pure: no I/O, nothing sent.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pytest_latency.analysis.cohorts import in_range
from pytest_latency.analysis.compare import per_sample_confidence
from pytest_latency.analysis.percentiles import bound_ranks
from pytest_latency.analysis.stored import MIN_TAIL_FOR_LOG_RATIO
from pytest_latency.analysis.verdict import (
    clopper_pearson,
    samples_needed,
)
from pytest_latency.errors import SpecError, UndecidablePlan
from pytest_latency.spec.model import Objective, Phase, Workload
from pytest_latency.workload import Plan, PlannedRequest, build_plan

# Metrics a request has only with at least two output tokens (a gap between two tokens).
GAP_METRICS = frozenset({"itl", "itl_max", "tpot"})
# The suggested duration plans enough requests for most seeds: the expected count sits
# this many standard deviations of the arrival count above the need.
SUGGESTION_SDS = 2.0
_MAX_SUGGESTION_STEPS = 40  # each step lengthens the suggestion by 5%, checked on the plan
# A phase whose rate is at least this many times the one before it is a burst: its queue
# builds through the phase, so the whole phase is one correlated unit (an episode).
BURST_RATE_RATIO = 1.5


@dataclass(frozen=True, slots=True)
class ObjectivePower:
    """What one objective's scope of the plan holds, and the floor it needs."""

    objective: Objective
    planned: int  # requests of the plan that give the objective a sample
    needed: int | None  # fewest independent requests that can pass it; None: no count can
    confidence: float  # the objective's own (two-sided) confidence
    suggestion: str = ""  # how to plan enough requests, when there are too few

    @property
    def decidable(self) -> bool:
        return self.needed is not None and self.planned >= self.needed

    def describe(self) -> str:
        """One line: the objective, planned and needed counts, and the fix."""
        what = "requests"
        if self.objective.metric in GAP_METRICS:
            what = "requests with 2+ output tokens"
        elif self.objective.metric == "recovery":  # analysis/recovery_plan.py
            what = "episode" if self.planned == 1 else "episodes"
        head = f"{self.objective.label}: {self.planned} {what} planned"
        if self.needed is None:
            return f"{head}; no number of requests can pass it: {self.suggestion}"
        line = f"{head}, at least {self.needed} needed at {_percent(self.confidence)} confidence"
        return f"{line}: {self.suggestion}" if self.suggestion else line


def upper_bound_min_n(q: float, confidence: float) -> int:
    """Fewest samples for which the two-sided upper bound on the q-quantile exists."""
    n = max(1, samples_needed(q, confidence))
    # The closed form is exact up to rounding; bound_ranks (the verdicts' own) decides.
    while n > 1 and bound_ranks(n - 1, q, confidence)[1] is not None:
        n -= 1
    while bound_ranks(n, q, confidence)[1] is None:
        n += 1
    return n


def error_rate_min_n(max_rate: float, confidence: float) -> int | None:
    """Fewest requests for which zero failures bound the error rate within ``max_rate``.

    None when no count can: a max of 0% is never passed (the upper bound is above 0).
    """
    if max_rate >= 1.0:
        return 1
    if max_rate <= 0.0:
        return None
    tail = (1.0 - confidence) / 2.0
    n = max(1, math.ceil(math.log(tail) / math.log1p(-max_rate)))
    while n > 1 and clopper_pearson(0, n - 1, confidence)[1] <= max_rate:
        n -= 1
    while clopper_pearson(0, n, confidence)[1] > max_rate:
        n += 1
    return n


def relative_min_n(q: float, confidence: float) -> int:
    """Fewest candidate requests for which a relative objective can pass (any baseline).

    The ratio's upper bound needs the candidate's upper bound: at each side's share of
    the confidence by the exact union bounds, or ``MIN_TAIL_FOR_LOG_RATIO`` effective
    requests in the quantile's smaller tail for the log-ratio test. Whichever is fewer.
    """
    union = upper_bound_min_n(q, per_sample_confidence(confidence))
    log_ratio = math.ceil(MIN_TAIL_FOR_LOG_RATIO / min(q, 1.0 - q) - 1e-9)
    return min(union, log_ratio)


def needed_requests(objective: Objective, confidence: float) -> int | None:
    """The floor of independent requests below which ``objective`` can never pass."""
    if objective.metric == "error_rate":
        assert objective.max_s is not None  # validated: error_rate always has a max
        # The floor for independent failures: the verdict's own bound unless the run
        # shows outages or the objective states one (analysis/outages.py; its reason
        # then says how many requests would decide it).
        return error_rate_min_n(objective.max_s, confidence)
    if objective.metric == "attainment":  # all good must lift the lower bound to min
        assert objective.min_value is not None  # validated: attainment always has a min
        return error_rate_min_n(1.0 - objective.min_value, confidence)
    if objective.metric in ("recovery", "capacity"):
        return 0  # a measured time, not a bound: no count is needed to decide it
    assert objective.p is not None  # validated: latency objectives have a percentile
    if objective.relative:
        return relative_min_n(objective.p / 100.0, confidence)
    return upper_bound_min_n(objective.p / 100.0, confidence)


def gives_sample(request: PlannedRequest, objective: Objective) -> bool:
    """Whether ``request`` is in the objective's scope and can have its metric."""
    if objective.phase is not None and request.phase != objective.phase:
        return False
    if objective.service_class is not None and request.service_class != objective.service_class:
        return False  # a class objective gets its class's share of the plan only
    if objective.metric in GAP_METRICS and request.output_tokens < 2:
        return False
    return in_range(request.input_tokens, objective.input_tokens) and in_range(
        request.output_tokens, objective.output_tokens
    )


def planned_samples(plan: Plan, objective: Objective) -> int:
    """Samples the plan gives the objective (at most: a server may report no value)."""
    return sum(1 for request in plan.requests if gives_sample(request, objective))


def plan_power(
    plan: Plan, objectives: Sequence[Objective], confidences: Sequence[float]
) -> list[ObjectivePower]:
    """Each objective's planned samples against its floor, ``confidences`` per objective.

    An objective scoped to a phase the workload lacks is a SpecError, as when judged.
    """
    known = [phase.name for phase in plan.workload.phases]
    for objective in objectives:
        if objective.phase is not None and objective.phase not in known:
            raise SpecError(f"unknown phase {objective.phase!r}; this run has: {', '.join(known)}")
    powers = []
    for objective, confidence in zip(objectives, confidences, strict=True):
        planned = planned_samples(plan, objective)
        needed = needed_requests(objective, confidence)
        power = ObjectivePower(objective, planned, needed, confidence)
        if needed is None:
            power = replace(power, suggestion="give the error rate a max above 0%")
        elif planned < needed:
            power = replace(power, suggestion=suggest_duration(plan, objective, needed))
        powers.append(power)
    return powers


def suggest_duration(plan: Plan, objective: Objective, needed: int) -> str:
    """The phase to lengthen, and how long it must be, to plan ``needed`` samples."""
    workload = plan.workload
    phase = _phase_to_lengthen(plan, objective)
    in_phase = [r for r in plan.requests if r.phase == phase.name]
    share = sum(gives_sample(r, objective) for r in in_phase) / max(len(in_phase), 1)
    if share == 0.0 and objective.metric in GAP_METRICS and workload.output_tokens < 2:
        return f"{objective.metric} needs requests of 2+ output tokens: raise output_tokens"
    if share == 0.0:
        return (
            "no planned request falls in its input/output token range: widen the range or"
            " the workload's input_tokens/output_tokens"
        )
    others = planned_samples(plan, objective) - sum(gives_sample(r, objective) for r in in_phase)
    missing = needed - others
    if phase.trace is not None:  # a trace's requests are its own: only more trace helps
        return _longer_trace(phase, share, missing - round(share * len(in_phase)))
    if phase.closed_loop:  # its count is the server's doing: only more time or users help
        return (
            f"{phase.name} is a closed loop: its requests depend on the server's speed;"
            f" give it more users or a longer duration (about {missing} more requests)"
        )
    # Variance of the sample count: the arrivals' (none for constant arrivals, 1/shape of
    # the mean for gamma gaps) thinned by the share in scope, plus the thinning's own.
    scatter = 0.0 if phase.arrival == "constant" else share / phase.burstiness
    margin = SUGGESTION_SDS * math.sqrt(missing * (scatter + 1.0 - share))
    per_second = phase.rate * workload.repeat * share
    duration = max(phase.duration_s, math.ceil((missing + margin) / per_second))
    for _ in range(_MAX_SUGGESTION_STEPS):  # check the suggestion on this seed's plan
        longer = _with_duration(workload, phase.name, duration)
        if planned_samples(build_plan(longer), objective) >= needed:
            break
        duration = math.ceil(duration * 1.05)
    episodes = f" in each of {workload.repeat} episodes" if workload.repeat > 1 else ""
    return f"make {phase.name} at least {duration:g}s at {phase.rate:g}/s{episodes}"


def _longer_trace(phase: Phase, share: float, missing: int) -> str:
    lines = math.ceil(missing / share)  # share > 0: checked by the caller
    return (
        f"replay more of the trace in {phase.name}: about {lines} more requests"
        f" (a longer window or trace file), or add a rate phase"
    )


def _phase_to_lengthen(plan: Plan, objective: Objective) -> Phase:
    phases = plan.workload.phases
    if objective.phase is not None:
        return next(phase for phase in phases if phase.name == objective.phase)
    counts = {
        phase.name: sum(
            1 for r in plan.requests if r.phase == phase.name and gives_sample(r, objective)
        )
        for phase in phases
    }
    # The phase that already gives the most samples (ties: the longest, then the first).
    return max(phases, key=lambda phase: (counts[phase.name], phase.duration_s))


def _with_duration(workload: Workload, name: str, duration_s: float) -> Workload:
    phases = tuple(
        replace(phase, duration_s=duration_s) if phase.name == name else phase
        for phase in workload.phases
    )
    return replace(workload, phases=phases)


def undecidable_message(
    powers: Sequence[ObjectivePower], test: str, *, allowed: bool, sent: bool = False
) -> str:
    """The text for a plan that cannot decide some objectives (``sent``: after its run)."""
    short = [power for power in powers if not power.decidable]
    lines = [f"the plan cannot decide {len(short)} of {len(powers)} objectives ({test}):"]
    lines.extend(f"  {power.describe()}" for power in short)
    lines.append(
        "  The counts needed are a floor, for independent requests (over a burst: for"
        "\n  episodes that agree): requests that share a queue or a batch need more. Below"
        "\n  it an objective can only fail or be inconclusive."
    )
    if allowed:
        lines.append("  Running anyway (--latency-allow-undecidable).")
    elif sent:
        lines.append(
            "  The run could not have decided them: plan more requests (latency.plan(...)"
            "\n  checks before sending), or pass --latency-allow-undecidable to judge anyway."
        )
    else:
        lines.append(
            "  Nothing was sent: plan more requests, or pass --latency-allow-undecidable to"
            " run anyway."
        )
    return "\n".join(lines)


def require_power(
    powers: Sequence[ObjectivePower], test: str, *, allowed: bool, sent: bool = False
) -> str | None:
    """Raise UndecidablePlan when an objective cannot be decided; if ``allowed``, return
    the message instead (the pytest side warns with it, at the user's line), else None.

    ``sent``: the plan has run already (``assert_slo`` checks after ``latency.run``).
    """
    __tracebackhide__ = True
    if all(power.decidable for power in powers):
        return None
    message = undecidable_message(powers, test, allowed=allowed, sent=sent)
    if not allowed:
        raise UndecidablePlan(message)
    return message


def _percent(confidence: float) -> str:
    text = f"{confidence * 100:.2f}".rstrip("0").rstrip(".")
    return f"{text}%"


def burst_phases(workload: Workload) -> set[str]:
    """Phases that are transients of an episode: a rate well above the phase before, or
    a ramp. Serial estimates assume load that holds still; these need episodes."""
    found: set[str] = set()
    for before, phase in zip(workload.phases, workload.phases[1:], strict=False):
        if phase.rate_to is not None or phase.mean_rate >= BURST_RATE_RATIO * before.mean_rate:
            found.add(phase.name)
    return found
