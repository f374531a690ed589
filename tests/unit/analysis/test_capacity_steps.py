"""Where a capacity search probes next: rates on a lattice of whole steps from the first
probe, and the step over a band that the rate the server kept up with calls an overload."""

from __future__ import annotations

import math
from collections.abc import Sequence

import pytest

from pytest_latency.analysis.capacity import search_capacity
from pytest_latency.analysis.capacity_result import CapacityResult, ProbeEvidence, ProbeResult
from pytest_latency.analysis.capacity_steps import between, kept_up, next_rate, stepped

LABEL = "ttft p90 <= 3s"


def _steps(anchor: float, rate: float) -> float:
    return math.log(rate / anchor) / math.log(1.2)


def test_bisection_lands_on_whole_steps_from_the_first_probe() -> None:
    anchor = math.sqrt(0.15 * 4.5)  # 0.82: the slot tests' range, in capacities
    upper = between(anchor, anchor, 4.5, 1.2)
    assert _steps(anchor, upper) == pytest.approx(5)  # 9.3 steps to the top: the nearer 5
    assert _steps(anchor, between(anchor, anchor, upper, 1.2)) == pytest.approx(2)  # a tie: lower
    assert _steps(anchor, between(anchor, anchor, 1.92, 1.2)) == pytest.approx(2)  # off the lattice
    assert _steps(anchor, between(anchor, 0.15, anchor, 1.2)) == pytest.approx(-5)


def test_a_bracket_without_a_lattice_point_inside_is_bisected_plainly() -> None:
    assert between(1.0, 1.0, 1.2, 1.2) == pytest.approx(math.sqrt(1.2))
    assert between(1.0, 0.0, 3.0, 1.2) == 1.5  # from zero: the middle


def test_a_step_along_the_lattice_is_the_rate_bisection_computes() -> None:
    anchor = 7.3
    two_over = between(anchor, anchor, anchor * 1.2**4, 1.2)
    assert stepped(anchor, anchor, 2, 1.2) == two_over  # equal, not approximately
    assert stepped(anchor, two_over, -2, 1.2) == anchor * 1.2**0


def test_the_search_passes_and_fails_two_steps_apart_around_its_first_probe() -> None:
    """Plain bisection of a 30x range from a pass at its middle probed 1.92x it and then
    1.26x it: a 1.53x bracket. On the lattice the fail two steps over closes at 1.44x."""

    def probe(rate: float, looks: Sequence[float], confidences: Sequence[float]) -> ProbeResult:
        verdict = "pass" if rate <= 0.83 else "inconclusive" if rate < 1.1 else "fail"
        return ProbeResult(rate, 100, {LABEL: verdict}, False, 72.0)

    result = search_capacity(probe, (0.15, 4.5), probe_cost_s=72.0, budget_s=360.0)
    assert result.passed_rps == pytest.approx(math.sqrt(0.15 * 4.5))
    assert result.failed_rps is not None
    assert result.failed_rps / result.passed_rps == pytest.approx(1.44)


def _probe(rate: float, outcome: str, growth: float | None = None) -> ProbeResult:
    queue = ProbeEvidence(
        "queue kept up", "in flight grows under 1/s", outcome, growth or 0.0,
        -math.inf, math.inf, 100, None, "rps", limit=1.0, at_least=False,
    )  # fmt: skip
    evidence = () if growth is None else (queue,)
    return ProbeResult(rate, 100, {LABEL: outcome}, False, 72.0, None, evidence)


def test_what_the_server_kept_up_with_is_the_offered_rate_less_the_queue_growth() -> None:
    assert _probe(20.0, "fail", growth=6.0).served_rps == 14.0
    assert _probe(20.0, "fail").served_rps is None  # no queue check, no estimate
    failed = [_probe(20.0, "fail", 6.0), _probe(30.0, "fail", 14.0)]
    assert kept_up(CapacityResult(None, 20.0, failed, 360.0, 144.0, "")) == 15.0  # their mean
    assert kept_up(CapacityResult(None, None, [_probe(9.0, "pass", 0.0)], 360.0, 72.0, "")) is None


def _searched(served_by_fail: float) -> float | None:
    """The next rate after: a pass at 0.79, a band at 0.95, a fail at 1.37 (one step
    under, the first probe, two steps over), the fail keeping up with ``served_by_fail``."""
    anchor = math.sqrt(0.3 * 3.0)  # the first probe of the range below: 0.95
    over = stepped(anchor, anchor, 2, 1.2)
    probes = [
        _probe(anchor, "inconclusive", 0.0),
        _probe(over, "fail", over - served_by_fail),
        _probe(anchor, "inconclusive", 0.0),
        _probe(stepped(anchor, anchor, -1, 1.2), "pass", 0.0),
    ]
    result = CapacityResult(probes[3].rate, probes[1].rate, probes, 360.0, 288.0, "")
    return next_rate(result, 0.3, 3.0, 1.2, fits=1)


def test_a_hemmed_band_is_stepped_over_when_the_step_overloads_the_server() -> None:
    """A fail one step over the band brackets the pass two steps under it (1.44x): taken
    when the failed probe kept up with 1.0 (the step, 1.14, is an overload); else the
    band end is probed again."""
    anchor = math.sqrt(0.3 * 3.0)
    assert _searched(served_by_fail=1.0) == stepped(anchor, anchor, 1, 1.2)
    assert _searched(served_by_fail=1.1) == anchor
