"""Plans sized for correlated data: a burst is decided over episodes, and an inconclusive
verdict says how much more data would decide it."""

import dataclasses

import pytest

from pytest_latency.analysis.advice import evidence_factor, what_would_decide
from pytest_latency.analysis.bursts import check_power, episode_floor
from pytest_latency.analysis.planning import burst_phases, require_power
from pytest_latency.analysis.verdict import ObjectiveResult, Verdict, objective_confidence
from pytest_latency.errors import UndecidablePlan
from pytest_latency.spec.model import Phase, Workload, objective

# The README's workload, with a burst p95 objective beside its own three.
README = Workload(
    seed=7,
    phases=(
        Phase("steady", rate=5, duration_s=30, arrival="constant"),
        Phase("burst", rate=60, duration_s=5),
    ),
    input_tokens=(200, 400),
    output_tokens=32,
)
BURST_P95 = objective("ttft", p=95, max="700ms", phase="burst")
STEADY_P95 = objective("ttft", p=95, max="700ms", phase="steady")
ERRORS = objective("error_rate", max="100%")  # any error rate: planning latency here
OBJECTIVES = [STEADY_P95, BURST_P95, ERRORS]
SHARED = objective_confidence(3)  # 99.67% each


def test_a_burst_is_a_phase_well_over_the_one_before_it_or_a_ramp():
    assert burst_phases(README) == {"burst"}
    ramp = Phase("ramp", rate=5, rate_to=50, duration_s=10, arrival="ramp")
    calm = Phase("calm", rate=6, duration_s=10)
    assert burst_phases(dataclasses.replace(README, phases=(README.phases[0], calm))) == set()
    assert burst_phases(dataclasses.replace(README, phases=(README.phases[0], ramp))) == {"ramp"}


def test_a_p95_over_one_burst_is_refused_before_sending_with_repeat_and_until_decided():
    powers = check_power(README, OBJECTIVES, SHARED)
    short = [power for power in powers if not power.decidable]
    assert [power.objective for power in short] == [BURST_P95]
    with pytest.raises(UndecidablePlan) as refused:
        require_power(powers, "checkout.slo.yaml::checkout", allowed=False)
    text = str(refused.value)
    assert "ttft p95 <= 700ms [burst]: 290 requests planned" in text
    assert "a burst is one correlated unit" in text
    assert "give repeat: 5, cooldown: 10s" in text
    # Room for three times the floor's 5 episodes: a burst's requests share a queue.
    assert "until_decided: {max: 680s} (room for 15 episodes" in text
    assert "Nothing was sent" in text


def test_the_fixes_it_names_are_accepted():
    repeated = dataclasses.replace(README, repeat=5, cooldown_s=10)
    assert all(power.decidable for power in check_power(repeated, OBJECTIVES, SHARED))
    for seconds in (230, 680):  # the floor's budget, and the room the refusal suggests
        budget = dataclasses.replace(README, until_decided_s=seconds)
        assert all(power.decidable for power in check_power(budget, OBJECTIVES, SHARED))


def test_a_budget_too_short_for_the_episodes_is_refused_with_the_budget_that_is_not():
    # 200 s holds four episodes as planned (44.75 s each after the first), not five.
    short = dataclasses.replace(README, until_decided_s=200)
    [power] = [p for p in check_power(short, OBJECTIVES, SHARED) if not p.decidable]
    assert power.objective == BURST_P95
    assert "until_decided: {max: 680s}" in power.describe()


def test_the_episode_floor_pays_students_t_for_few_episodes():
    # 290 samples an episode: independent, 2 episodes (580 >= 125) would do; correlated,
    # the bound pays t at k - 1 degrees of freedom and 5 episodes are the fewest.
    assert episode_floor(BURST_P95, 290, SHARED) == 5
    assert episode_floor(BURST_P95, 290, 0.99) == 4
    assert episode_floor(BURST_P95, 10_000, SHARED) > 2  # many requests never make k = 2


def _inconclusive(goal, estimate, lower, upper, n, effective):
    return ObjectiveResult(
        goal, Verdict.INCONCLUSIVE, estimate, lower, upper, n, SHARED, "straddles",
        n_effective=effective,
    )  # fmt: skip


def test_an_inconclusive_verdict_says_how_much_longer_from_its_effective_n():
    goal = objective("e2e", p=95, max="1s")
    workload = Workload(phases=(Phase("steady", rate=10, duration_s=15),))
    # The upper bound sits 0.4 s over the estimate, the limit 0.2 s: the bound must
    # halve, which takes four times the effective n.
    result = _inconclusive(goal, 0.8, 0.6, 1.2, 150, 31.0)
    assert evidence_factor(result) == pytest.approx(4.0)
    text = what_would_decide(result, workload)
    assert text.startswith("to decide it: about 4.0x the evidence (effective n 31)")
    assert "a run about 4.0x as long (about 60s of phases)" in text
    assert "until_decided: {max: 80s}" in text


def test_an_inconclusive_burst_verdict_says_how_many_episodes():
    result = _inconclusive(BURST_P95, 2.4, 0.5, 3.0, 580, 2.0)
    # Far over the limit: the lower bound must rise past it, (2.4 - 0.5) / (2.4 - 0.7).
    factor = ((2.4 - 0.5) / (2.4 - 0.7)) ** 2
    assert evidence_factor(result) == pytest.approx(factor)
    episodes = dataclasses.replace(README, repeat=2, cooldown_s=10)
    assert "about 3 episodes (repeat: 3, cooldown: 10s)" in what_would_decide(result, episodes)


def test_a_missing_bound_asks_for_the_floor_and_decided_verdicts_ask_nothing():
    result = _inconclusive(BURST_P95, 0.5, 0.3, float("inf"), 290, 5.0)  # no upper bound yet
    assert evidence_factor(result) == pytest.approx(125 / 5.0)
    decided = dataclasses.replace(result, verdict=Verdict.FAIL)
    assert what_would_decide(decided, README) == ""
