"""Plan-time power: the request floors against scipy's exact binomial and beta truth."""

import math

import pytest
from scipy.stats import beta, binom

from pytest_latency.analysis.compare import per_sample_confidence
from pytest_latency.analysis.planning import (
    error_rate_min_n,
    plan_power,
    planned_samples,
    relative_min_n,
    require_power,
    undecidable_message,
    upper_bound_min_n,
)
from pytest_latency.analysis.verdict import objective_confidence
from pytest_latency.errors import SpecError, UndecidablePlan
from pytest_latency.spec.model import Phase, Workload, objective
from pytest_latency.workload import build_plan


def _truth_upper(q: float, confidence: float) -> int:
    """Smallest n whose largest order statistic bounds the q-quantile: P(Binom <= n-1) >= 1-tail."""
    tail = (1.0 - confidence) / 2.0
    n = 1
    while binom.cdf(n - 1, n, q) < 1.0 - tail:
        n += 1
    return n


def _truth_error_rate(max_rate: float, confidence: float) -> int:
    """Smallest n whose Clopper-Pearson upper bound for 0 failures is within max_rate."""
    tail = (1.0 - confidence) / 2.0
    n = 1
    while beta.ppf(1.0 - tail, 1, n) > max_rate:
        n += 1
    return n


def test_known_floors():
    # One-sided 95% (two-sided 90%): the classic 59 requests for a p95 bound from the max.
    assert upper_bound_min_n(0.95, 0.90) == 59
    # The documented floors at the default 99% (docs/statistics.md).
    assert [upper_bound_min_n(q, 0.99) for q in (0.5, 0.9, 0.95, 0.99, 0.999)] == [
        8, 51, 104, 528, 5296,
    ]  # fmt: skip
    # The README's spec: three objectives share 99%, so each is decided at 99.67%.
    shared = objective_confidence(3)
    assert upper_bound_min_n(0.95, shared) == 125
    assert error_rate_min_n(0.05, shared) == 125  # 0 of 125 failed bounds the rate under 5%
    # A stored comparison puts 99.5% on each side: 117 candidate requests for a p95.
    assert relative_min_n(0.95, 0.99) == 117
    assert relative_min_n(0.5, 0.99) == 9


@pytest.mark.parametrize("q", [0.5, 0.75, 0.9, 0.95, 0.975, 0.99])
@pytest.mark.parametrize("confidence", [0.9, 0.95, 0.99, 0.995, 0.9975, 1 - 0.01 / 7])
def test_upper_bound_floor_is_scipys(q, confidence):
    assert upper_bound_min_n(q, confidence) == _truth_upper(q, confidence)


@pytest.mark.slow
@pytest.mark.parametrize("max_rate", [0.001, 0.01, 0.02, 0.05, 0.1, 0.5])
@pytest.mark.parametrize("confidence", [0.9, 0.99, 1 - 0.01 / 3])
def test_error_rate_floor_is_scipys(max_rate, confidence):
    assert error_rate_min_n(max_rate, confidence) == _truth_error_rate(max_rate, confidence)


def test_relative_floor_is_the_union_bound_at_each_sides_confidence():
    for q in (0.5, 0.9, 0.95, 0.99):
        union = _truth_upper(q, per_sample_confidence(0.99))
        assert relative_min_n(q, 0.99) == min(union, math.ceil(10 / (1 - q) - 1e-9))


def test_an_error_rate_max_of_zero_can_never_pass_and_one_always_can():
    assert error_rate_min_n(0.0, 0.99) is None
    assert error_rate_min_n(1.0, 0.99) == 1


def _constant(rate: float, duration_s: float, name: str = "steady") -> Phase:
    return Phase(name=name, rate=rate, duration_s=duration_s, arrival="constant")


def test_a_short_phase_is_named_with_its_counts_and_the_duration_that_would_decide_it():
    # Constant arrivals: exactly 100 requests; a p95 at 99% needs 104, so 21 s at 5/s (105).
    plan = build_plan(Workload(phases=(_constant(5, 20), _constant(25, 4, "burst"))))
    ttft = objective("ttft", p=95, max="700ms", phase="steady")
    errors = objective("error_rate", max="100%")
    short, fine = plan_power(plan, [ttft, errors], [0.99, 0.99])
    assert (short.planned, short.needed, short.decidable) == (100, 104, False)
    assert short.suggestion == "make steady at least 21s at 5/s"
    assert short.describe() == (
        "ttft p95 <= 700ms [steady]: 100 requests planned, at least 104 needed at 99%"
        " confidence: make steady at least 21s at 5/s"
    )
    assert (fine.planned, fine.decidable, fine.suggestion) == (200, True, "")


@pytest.mark.slow
def test_the_suggested_duration_plans_enough_requests_with_this_seed():
    # Poisson arrivals: the suggestion is checked on the plan the seed gives.
    for seed in range(20):
        workload = Workload(phases=(Phase("steady", rate=5, duration_s=20),), seed=seed)
        ttft = objective("ttft", p=95, max="700ms")
        (power,) = plan_power(build_plan(workload), [ttft], [objective_confidence(3)])
        if power.decidable:
            continue
        seconds = float(power.suggestion.split("at least ")[1].split("s ")[0])
        longer = Workload(phases=(Phase("steady", rate=5, duration_s=seconds),), seed=seed)
        assert planned_samples(build_plan(longer), ttft) >= power.needed, power.suggestion


def test_the_readme_spec_of_old_is_refused_with_the_issues_numbers():
    # Seed 7 plans 98 steady requests; a p95 shared three ways needs 125.
    workload = Workload(
        phases=(Phase("steady", 5, 20), Phase("burst", 25, 5)), seed=7, input_tokens=(200, 400)
    )
    objectives = [
        objective("ttft", p=95, max="700ms", phase="steady"),
        objective("itl", p=50, max="40ms"),
        objective("error_rate", max="5%"),
    ]
    powers = plan_power(build_plan(workload), objectives, [objective_confidence(3)] * 3)
    assert [(p.planned, p.needed, p.decidable) for p in powers] == [
        (98, 125, False),
        (215, 10, True),
        (215, 125, True),
    ]
    with pytest.raises(UndecidablePlan) as raised:
        require_power(powers, "checkout.slo.yaml::checkout", allowed=False)
    text = str(raised.value)
    assert isinstance(raised.value, SpecError)
    assert text.startswith("the plan cannot decide 1 of 3 objectives (checkout.slo.yaml::checkout)")
    assert "ttft p95 <= 700ms [steady]: 98 requests planned, at least 125 needed at 99.67%" in text
    assert "make steady at least" in text and "Nothing was sent" in text
    assert "itl" not in text and "error_rate" not in text  # decidable ones are not named
    message = require_power(powers, "checkout", allowed=True)  # the pytest side warns
    assert message is not None and "Running anyway" in message


def test_scope_counts_phase_cohort_and_requests_that_can_have_a_gap():
    workload = Workload(
        phases=(_constant(10, 10), _constant(10, 10, "burst")), input_tokens=(100, 300)
    )
    plan = build_plan(workload)
    cohort = objective("ttft", p=50, max="1s", phase="burst", input_tokens=(100, 199))
    expected = sum(1 for r in plan.requests if r.phase == "burst" and 100 <= r.input_tokens <= 199)
    assert 20 < expected < 80 and planned_samples(plan, cohort) == expected
    one_token = build_plan(Workload(phases=(_constant(10, 10),), output_tokens=1))
    (itl, e2e) = plan_power(
        one_token,
        [objective("itl", p=50, max="40ms"), objective("e2e", p=50, max="1s")],
        [0.99, 0.99],
    )
    assert (itl.planned, itl.decidable) == (0, False) and "2+ output tokens" in itl.suggestion
    assert (e2e.planned, e2e.decidable) == (100, True)


def test_an_empty_cohort_says_so_instead_of_a_duration():
    plan = build_plan(Workload(phases=(_constant(10, 10),), input_tokens=(100, 200)))
    (power,) = plan_power(
        plan, [objective("ttft", p=50, max="1s", input_tokens=(500, 900))], [0.99]
    )
    assert power.planned == 0 and "token range" in power.suggestion


def test_repeat_counts_every_episode_and_the_suggestion_says_per_episode():
    workload = Workload(phases=(_constant(5, 4),), repeat=3, cooldown_s=1.0)
    (power,) = plan_power(build_plan(workload), [objective("ttft", p=95, max="1s")], [0.99])
    assert power.planned == 60 and power.needed == 104
    assert power.suggestion == "make steady at least 7s at 5/s in each of 3 episodes"


def test_a_zero_error_rate_max_is_named_as_never_passable():
    plan = build_plan(Workload(phases=(_constant(10, 10),)))
    (power,) = plan_power(plan, [objective("error_rate", max="0%")], [0.99])
    assert power.needed is None and not power.decidable
    assert "no number of requests can pass it" in power.describe()
    message = undecidable_message([power], "t", allowed=False, sent=True)
    assert "latency.plan(...)" in message and "Nothing was sent" not in message


def test_an_objective_on_a_phase_the_plan_lacks_is_a_spec_error_naming_the_phases():
    plan = build_plan(Workload(phases=(_constant(10, 10),)))
    with pytest.raises(SpecError, match=r"unknown phase 'burst'; this run has: steady"):
        plan_power(plan, [objective("ttft", p=50, max="1s", phase="burst")], [0.99])


def test_attainment_needs_as_many_requests_as_its_miss_rate_and_recovery_none() -> None:
    from pytest_latency import objective
    from pytest_latency.analysis.planning import error_rate_min_n, needed_requests

    gate = objective("attainment", ttft="700ms", min="95%")
    needed = needed_requests(gate, 0.99)
    assert needed == error_rate_min_n(0.05, 0.99)
    # All of them good: the exact lower bound reaches 95% at `needed`, not one request before.
    tail = 0.005
    assert tail ** (1 / needed) >= 0.95 > tail ** (1 / (needed - 1))
    assert needed_requests(objective("recovery", max="10s", after="burst"), 0.99) == 0
