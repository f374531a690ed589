"""How a capacity search spends its budget and its alpha: rates, and probes a rate.

Every rate probed reserves ``alpha / max_rates`` when first probed, for all its pooled
probes (:func:`repeat_shares`), and at most ``max_rates`` rates are probed
(:mod:`.capacity`). :func:`search_plan` sets both from the budget: a longer budget buys
repeats at one rate (a small server needs minutes of pooled probes near its capacity),
not thinner alpha over rates the search never probes. Pure.
"""

from __future__ import annotations

import math

# Probes at one rate at least, pooled (one sequential experiment per rate, its alpha in
# that many parts, repeat_shares); a budget that holds more probes allows up to its
# probes less two (MAX_RETRIES at most), see search_plan. Near the capacity a 60 s probe
# holds 10 to 30 effective requests, a pass ~80: a 4-slot server's needs 5 to 10 probes.
RETRIES, MAX_RETRIES = 4, 16
# Rates the alpha is reserved for, beyond those bisecting the range to the target: the
# step over a band, the step under it and a range end (search_plan).
AROUND_BAND_RATES = 3


def repeat_shares(retries: int = RETRIES) -> list[float]:
    """Each probe's share of its rate's alpha, by how many came before it at that rate:
    in proportion to the square of its place (1, 4, 9, 16 of 30), as later pooled probes
    rest on more requests and are the likelier to decide. Squares bracketed more seeded
    searches within 1.5x than equal shares or shares in proportion (docs/capacity.md)."""
    weights = [(k + 1.0) ** 2 for k in range(retries)]
    return [w / sum(weights) for w in weights]


def search_plan(rates: tuple[float, float], probes: int, target_ratio: float) -> tuple[int, int]:
    """(rates the alpha is reserved for, probes at one rate at most) for a budget that
    holds ``probes`` probes.

    Rates: as many as bisecting the range to ``target_ratio`` takes, plus
    ``AROUND_BAND_RATES``, and no more than the probes. Probes a rate: ``RETRIES``, or
    the budget's probes less two (a fail over the rate, and one more rate), at most
    ``MAX_RETRIES``. A longer budget buys repeats at one rate, not thinner alpha over
    rates it never probes: near a small server's capacity a pass takes minutes of
    pooled probes (docs/capacity.md, "How narrow a bracket").
    """
    low, high = rates
    wide = high > low > 0 and target_ratio > 1.0
    halvings = math.log(high / low) / math.log(target_ratio) if wide else 1.0
    needed = math.ceil(math.log2(max(halvings, 1.0))) + AROUND_BAND_RATES
    retries = min(MAX_RETRIES, max(RETRIES, probes - 2))
    return max(1, min(probes, needed)), retries
