"""Where a capacity search probes next: a lattice of rates, bisection on it, and the
steps around rates that decided nothing (the band). Pure; reads the search's results.

Every rate probed is the first probe's (the geometric middle of the range) times a
whole power of the target ratio, so a bracket of probed rates is a whole number of
steps and a pass and a fail two steps apart are a bracket of 1.44x. Around the band the
search steps over it first (a runaway queue fails a probe fast), pools a band end that
leans, steps under it, and steps once over a hemmed band where the rate the server
kept up with (:attr:`.capacity_result.ProbeResult.served_rps`) says the step is an overload.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from pytest_latency.analysis.capacity_plan import RETRIES
from pytest_latency.analysis.capacity_result import CapacityResult, ProbeResult

# A band end hemmed in by a fail is probed again when its lean (half-widths of its
# interval on the passing side) projected to its last probe reaches this. Pooled leans
# grew about in proportion to the probes (0.2, 0.9, 1.2, pass at 82% of a slot server's
# capacity); 0.7 bracketed the most seeded searches within 1.5x (docs/capacity.md).
LEAN_TO_REPEAT = 0.7
# Probes the budget must still hold for the step over the band to come first; with
# fewer it steps the way the band leans (a short search finds a pass sooner under).
ROOM_TO_POOL = 4
# A rate this far over what the server kept up with in the probes that failed is an
# overload: its queue grows, and a probe there fails within the probe.
OVERLOAD = 1.1
SLACK = 1e-6  # lattice indices within this of a whole number are on it (float error)


def bisect(low: float, high: float) -> float:
    """The geometric middle of ``low``..``high`` (the first probe: the lattice's anchor)."""
    return math.sqrt(low * high) if low > 0 else high / 2.0


def between(anchor: float, lower: float, upper: float, ratio: float) -> float:
    """The rate to bisect ``lower``..``upper`` at: a point of the lattice (``anchor``
    times a whole power of ``ratio``) strictly inside, the nearest to the geometric
    middle, the lower on a tie; the geometric middle when none lies inside.

    Plain bisection of a 30x range cut it in 2.34x and then 1.53x around a capacity
    near the first probe: a 16-slot server's 6-minute search ended 1.53x wide in 6 of
    20 seeds, on the lattice in none (docs/capacity.md).
    """
    middle = bisect(lower, upper)
    if not (anchor > 0 and ratio > 1.0 and upper > lower > 0):
        return middle
    low, high = _index(anchor, lower, ratio), _index(anchor, upper, ratio)
    centre = (low + high) / 2.0
    inside = [
        index
        for index in sorted({math.floor(centre + SLACK), math.ceil(centre - SLACK)})
        if low + SLACK < index < high - SLACK
    ]
    if not inside:
        return middle
    distance = {index: round(abs(index - centre), 6) for index in inside}  # ties are ties
    return anchor * ratio ** min(inside, key=lambda index: (distance[index], index))


def stepped(anchor: float, rate: float, steps: int, ratio: float) -> float:
    """``rate`` moved ``steps`` whole steps along the lattice (from the lattice point
    nearest to it, computed exactly as :func:`between` computes it)."""
    return anchor * ratio ** (round(_index(anchor, rate, ratio)) + steps)


def _index(anchor: float, rate: float, ratio: float) -> float:
    return math.log(rate / anchor) / math.log(ratio)


def next_rate(
    result: CapacityResult, low: float, high: float, target_ratio: float, fits: int
) -> float | None:
    """The next rate to probe, None when the search is done.

    Between ``lower`` (the highest pass, else ``low``) and ``upper`` (the lowest fail,
    else ``high``): bisect geometrically while no probe in between decided nothing; around
    such probes (the band) see :func:`_around_band`. A range end that stood in for a
    probe is probed last, once the bracket reaches it.
    """
    tried = {probe.rate for probe in result.probes}
    passed, failed = result.passed_rps, result.failed_rps
    if result.contradictions:
        return None  # the bracket is not trusted
    if (failed is not None and failed <= low) or (passed is not None and passed >= high):
        return None  # failed at the bottom or passed at the top of the range
    lower = low if passed is None else passed
    upper = high if failed is None else failed
    band = sorted(
        p.rate for p in result.probes if p.outcome == "inconclusive" and lower < p.rate < upper
    )
    wide = target_ratio * (1.0 + 1e-9)  # float slack: a step of exactly the ratio is done
    anchor = bisect(low, high)  # the first probe: every rate is it times a power of the ratio
    if band:
        return _around_band(result, band, (lower, upper), (anchor, target_ratio), fits)
    candidate: float | None = None
    if upper / lower > wide:
        candidate = between(anchor, lower, upper, target_ratio)
    elif passed is None and low not in tried:
        candidate = low  # the bracket reached the bottom: does the lowest rate pass?
    elif failed is None and high not in tried:
        candidate = high  # the bracket reached the top: does the highest rate pass?
    return None if candidate is None or candidate in tried else candidate


def _around_band(
    result: CapacityResult,
    band: Sequence[float],
    bracket: tuple[float, float],
    lattice: tuple[float, float],
    fits: int,
) -> float | None:
    """The next probe around rates that decided nothing (the band), in this order:

    1. Over the band by two ratios (1.44x) while no fail lies that close above it, if
       the budget holds ``ROOM_TO_POOL`` probes or the band leans to fail: over the
       capacity a runaway queue fails a probe in seconds, and a fail 1.44x over a band
       rate that then passes is a bracket within 1.5x.
    2. Once hemmed in so, a band end again (pooled) when its lean, projected over the
       probes left to it (l * (k + left) / k after k), reaches ``LEAN_TO_REPEAT``.
    3. Under the band by one ratio.
    4. One ratio over the band when a pass lies two under that (a fail there brackets
       1.44x) and it is ``OVERLOAD`` over what the failed probes kept up with
       (:func:`kept_up`): its queue grows, so it fails within a probe.
    5. A band end again, to ``RETRIES`` probes.
    """
    tried = {probe.rate for probe in result.probes}
    lower, upper = bracket
    anchor, ratio = lattice
    top, bottom = band[-1], band[0]
    slack = 1.0 + 1e-9
    hemmed = upper / top <= ratio * ratio * slack  # a fail (or the range's end) close over
    if not hemmed and (fits >= ROOM_TO_POOL or _latest(result, top).lean < 0):
        over = min(between(anchor, top, upper, ratio), stepped(anchor, top, 2, ratio))
        if over not in tried:
            return over
    ends = [r for r in sorted({bottom, top}) if count_at(result, r) < result.retries]
    leaning = max(ends, key=lambda rate: abs(_projected(result, rate, fits)), default=None)
    if hemmed and leaning and abs(_projected(result, leaning, fits)) >= LEAN_TO_REPEAT:
        return leaning
    if bottom / lower > ratio * slack:
        under = max(between(anchor, lower, bottom, ratio), stepped(anchor, bottom, -1, ratio))
        if under not in tried:
            return under
    above = stepped(anchor, top, 1, ratio)  # a fail here brackets the pass within ratio^2
    if (
        result.passed_rps == lower
        and above < upper / slack
        and above <= lower * ratio * ratio * slack
        and above not in tried
        and above >= OVERLOAD * (kept_up(result) or math.inf)
    ):
        return above
    # Nothing else left: a band end again, up to RETRIES probes; more only on its lean
    # (a rate at the flip leans nowhere, and each repeat risks a runaway trip there).
    return leaning if leaning is not None and count_at(result, leaning) < RETRIES else None


def kept_up(result: CapacityResult) -> float | None:
    """What the server kept up with in the probes that failed (the mean of their
    :attr:`~.capacity_result.ProbeResult.served_rps`): about its capacity when they failed
    by a growing queue, their own rate when they failed under it. None before a fail."""
    served = [p.served_rps for p in result.probes if p.outcome == "fail"]
    known = [value for value in served if value is not None]
    return sum(known) / len(known) if known else None


def count_at(result: CapacityResult, rate: float) -> int:
    return sum(p.rate == rate for p in result.probes)


def _projected(result: CapacityResult, rate: float, fits: int) -> float:
    """The lean at ``rate`` projected to its last probe (its retries, and ``fits``: the
    probes the budget still holds)."""
    count = count_at(result, rate)
    return _latest(result, rate).lean * min(result.retries, count + fits) / count


def _latest(result: CapacityResult, rate: float) -> ProbeResult:
    """The last probe at ``rate`` (a repeat's evidence pools the earlier ones)."""
    return next(p for p in reversed(result.probes) if p.rate == rate)
