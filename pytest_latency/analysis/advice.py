"""What would decide an inconclusive verdict: how much more evidence, and of what kind.

A bound's distance from the estimate shrinks as ``1 / sqrt(effective n)``, so a verdict
that straddles its limit needs the effective n that shrinks the straddling side to the
estimate's distance from the limit. A bound that does not exist yet needs the count the
bound needs (:func:`.planning.needed_requests`) at the confidence its correlation
estimate leaves: Student's t at that estimate's degrees of freedom (:mod:`.percentiles`).
Over few episodes those degrees of freedom, not the requests, are the limit: each added
episode adds one, and more requests per episode add none.
"""

from __future__ import annotations

import math
from dataclasses import replace

from pytest_latency.analysis.dependence import Dependence, episode_degrees
from pytest_latency.analysis.looks import drain_allowance_s, episode_cost_s
from pytest_latency.analysis.percentiles import adjusted_confidence
from pytest_latency.analysis.planning import burst_phases, needed_requests
from pytest_latency.analysis.sectioning import MIN_BATCH, MIN_UPPER_BATCHES
from pytest_latency.analysis.verdict import ObjectiveResult, Verdict, few_degrees_of_freedom
from pytest_latency.spec.model import Objective, Workload

# Beyond this many times the evidence a run holds, "run longer" is no longer advice.
MAX_EVIDENCE_FACTOR = 1000.0
# A longer run of one episode is searched in steps of this factor.
LONGER_RUN_STEP = 1.05


def evidence_factor(result: ObjectiveResult) -> float | None:
    """How many times its effective n an inconclusive ``result`` needs to be decided.

    A bound's distance from the estimate shrinks as ``1 / sqrt(effective n)``: the side
    that straddles the limit must shrink to the estimate's distance from the limit. A
    bound that does not exist yet needs the fewest requests for it, at the degrees of
    freedom the added evidence gives the correlation estimate. None when no amount of
    data can tell (the estimate sits on the limit, nothing measured).
    """
    objective = result.objective
    effective = result.effective_n
    if effective <= 0 or not math.isfinite(result.estimate_s):
        return None
    if objective.metric == "attainment":  # higher is better: mirror it
        limit, estimate = -(objective.min_value or 0.0), -result.estimate_s
        lower, upper = -result.upper_s, -result.lower_s
    else:
        assert objective.max_s is not None  # absolute objectives only: checked by the caller
        limit, estimate, lower, upper = (
            objective.max_s,
            result.estimate_s,
            result.lower_s,
            result.upper_s,
        )
    if estimate == limit:
        return None
    if objective.metric == "error_rate" and estimate == 0.0:
        # No failure: the upper bound falls as 1 / n (a count of zero), not 1 / sqrt(n).
        return max(upper / limit, 1.0)
    spread = upper - estimate if estimate < limit else estimate - lower
    # A latency's lower bound of 0 s is the floor, not an order statistic: no bound yet.
    floor = objective.metric != "attainment" and estimate > limit and lower <= 0.0
    if math.isfinite(spread) and not floor:
        return max((spread / abs(limit - estimate)) ** 2, 1.0)
    # The bound does not exist yet at this effective n. A missing lower bound on the
    # p-th percentile needs the count an upper bound on the (100 - p)-th needs.
    side = objective
    if estimate > limit and objective.p is not None and objective.metric != "attainment":
        side = replace(objective, p=100.0 - objective.p)
    dependence = result.dependence
    sectioned = _factor_for_sections(result, dependence)
    if dependence is not None and math.isfinite(dependence.degrees_of_freedom):
        counted = _factor_with_degrees(result, dependence, side)
        return sectioned if counted is None else min(counted, sectioned or math.inf)
    needed = needed_requests(side, result.confidence)
    return None if needed is None else max(needed / effective, 1.0)


def _factor_with_degrees(
    result: ObjectiveResult, dependence: Dependence, side: Objective
) -> float | None:
    """The fewest times its evidence that gives a bound when the correlation estimate's
    degrees of freedom grow with the evidence: an episode adds one (``k`` episodes give
    ``k - 1``), a longer run of one episode adds its share. None: not within
    ``MAX_EVIDENCE_FACTOR``, or no count can."""
    if needed_requests(side, result.confidence) is None:
        return None  # no count decides it at any confidence (a max of 0%)
    episodes = dependence.episodes if dependence.method == "episodes" else None

    def grown(step: int) -> tuple[float, float]:
        """(evidence factor, degrees of freedom) ``step`` episodes or steps later."""
        if episodes is not None:
            return (episodes + step) / episodes, episode_degrees(episodes + step)
        factor = LONGER_RUN_STEP**step
        return factor, dependence.degrees_of_freedom * factor

    def enough(step: int) -> bool:
        factor, degrees = grown(step)
        more = replace(dependence, degrees_of_freedom=degrees)
        adjusted = adjusted_confidence(result.confidence, more)
        needed = None if adjusted >= 1.0 else needed_requests(side, adjusted)
        return needed is not None and math.floor(dependence.n_effective * factor) >= needed

    # More evidence never needs more: bisect for the fewest steps (a few dozen checks).
    if episodes is not None:
        last = math.floor(episodes * (MAX_EVIDENCE_FACTOR - 1.0))
    else:
        last = math.floor(math.log(MAX_EVIDENCE_FACTOR) / math.log(LONGER_RUN_STEP))
    if not enough(last):
        return None
    low, high = 0, last  # enough(high); not known for low (0: no more evidence)
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if enough(middle) else (middle, high)
    return grown(high)[0]


def _factor_for_sections(result: ObjectiveResult, dependence: Dependence | None) -> float | None:
    """The longer run whose sectioning can bound a missing upper side (:mod:`.sectioning`):
    ``MIN_UPPER_BATCHES`` batches, each as long as the send-order window. A run of one
    episode with a stationary window grows its batches with its length; over episodes, or
    on the lower side, None (sectioning does not apply there)."""
    if dependence is None or dependence.method not in ("serial", "short"):
        return None
    if math.isfinite(result.upper_s) or not result.estimate_s < (result.objective.max_s or 0.0):
        return None
    needed = MIN_UPPER_BATCHES * max(MIN_BATCH, dependence.window)
    return max(needed / max(result.n, 1), 1.0)


def _wants_episodes(result: ObjectiveResult) -> Dependence | None:
    """The episodes' dependence when their few degrees of freedom, not the requests,
    keep ``result``'s percentile bound from existing; None otherwise."""
    dependence, p, limit = result.dependence, result.objective.p, result.objective.max_s
    if dependence is None or p is None or limit is None:
        return None
    if math.isfinite(result.upper_s) or not result.estimate_s < limit:
        return None  # a bound exists, or the side to decide it is the lower one
    return dependence if few_degrees_of_freedom(p, result.confidence, dependence) else None


def what_would_decide(result: ObjectiveResult, workload: Workload) -> str:
    """For an inconclusive ``result`` of a run of ``workload`` (the episodes it ran):
    how much longer, or how many episodes, would decide it, from the effective n
    measured; "" when the verdict is decided or no amount of data would tell."""
    objective = result.objective
    if result.verdict is not Verdict.INCONCLUSIVE or objective.relative:
        return ""
    if objective.metric in ("recovery", "capacity"):
        return ""
    factor = evidence_factor(result)
    if factor is None or factor > MAX_EVIDENCE_FACTOR:
        return ""
    head = f"to decide it: about {factor:.1f}x the evidence (effective n {result.effective_n:.0f})"
    ran = workload.repeat
    if (few := _wants_episodes(result)) is not None:
        ran = few.episodes
        head = (
            f"to decide it: more episodes, not more requests (the {ran} episodes' spread"
            f" has {few.degrees_of_freedom:.3g} degrees of freedom)"
        )
    if ran > 1 or objective.phase in burst_phases(workload):
        # factor is a ratio of episode counts here: no rounding up past a whole one
        episodes = max(ran + 1, math.ceil(ran * factor - 1e-9))
        cooldown = workload.cooldown_s or 10.0
        # As analysis/looks.py plans rounds: one pass, then each added episode's cost,
        # and a fifth more for the alpha the early looks spend.
        once = workload.episode_s + drain_allowance_s(workload)
        budget = 1.2 * (once + (episodes - 1) * episode_cost_s(workload))
        return (
            f"{head}: about {episodes} episodes (repeat: {episodes}, cooldown:"
            f" {cooldown:g}s), or until_decided: {{max: {_rounded_up(budget):g}s}}"
        )
    seconds = workload.duration_s * factor
    return (
        f"{head}: a run about {factor:.1f}x as long (about {_rounded_up(seconds):g}s of"
        f" phases), or until_decided: {{max: {_rounded_up(seconds * 1.2):g}s}}"
    )


def _rounded_up(seconds: float) -> float:
    return 10.0 * math.ceil(seconds / 10.0)
