"""Looks at accumulating data: alpha spent exactly and late, and the rounds a budget holds."""

import dataclasses
import math

import pytest
from scipy.stats import norm

from pytest_latency.analysis.looks import (
    MAX_LOOKS,
    Look,
    LookSchedule,
    UntilDecided,
    episode_cost_s,
    extended,
    look_confidences,
    plan_looks,
    stored_final_confidence,
)
from pytest_latency.spec.model import Phase, Workload

README = Workload(
    phases=(
        Phase("steady", rate=5, duration_s=30, arrival="constant"),
        Phase("burst", rate=60, duration_s=5),
    ),
    input_tokens=(200, 400),
    output_tokens=32,
)


def test_the_looks_spend_alpha_exactly_and_most_of_it_last():
    alpha = 0.01 / 3
    confidences = look_confidences(alpha, (0.2, 0.4, 0.6, 0.8, 1.0))
    shares = [1.0 - c for c in confidences]
    assert sum(shares) == pytest.approx(alpha, rel=1e-12)
    # O'Brien-Fleming: f(t) = 2 - 2 Phi(z / sqrt(t)); the first look's share is f(0.2).
    z = norm.isf(alpha / 2)
    assert shares[0] == pytest.approx(2 - 2 * norm.cdf(z / math.sqrt(0.2)), rel=1e-9)
    assert shares[0] < 1e-8 < shares[-1]
    assert shares[-1] > alpha / 2  # the last look keeps most of the budget
    assert shares == sorted(shares)


def test_one_look_keeps_the_whole_confidence():
    schedule = LookSchedule((1,), 60.0)
    assert schedule.confidences(0.995) == [0.995]


def test_a_budget_holds_the_workload_then_whole_episodes():
    # First round: 35 s of phases and an 8.75 s drain allowance (25%); each added
    # episode costs a 1 s cooldown, 35 s of phases and its drain allowance (44.75 s).
    assert episode_cost_s(README) == pytest.approx(44.75)
    schedule = plan_looks(dataclasses.replace(README, until_decided_s=230), 230)
    assert schedule.rounds == (1, 1, 1, 1, 1)
    assert schedule.fractions() == [0.2, 0.4, 0.6, 0.8, 1.0]
    assert plan_looks(README, 88.0).rounds == (1,)  # no added round fits


def test_a_long_budget_is_spent_in_at_most_max_looks():
    short = Workload(phases=(Phase("steady", rate=5, duration_s=2),), cooldown_s=1, repeat=3)
    schedule = plan_looks(short, 600.0)
    assert len(schedule.rounds) <= MAX_LOOKS
    assert schedule.rounds[0] == 3  # the workload as written comes first
    assert schedule.episodes * episode_cost_s(short) <= 600.0 + 3 * episode_cost_s(short)


def test_the_timeline_of_added_episodes_is_the_plan_of_that_many_repeats():
    timeline = extended(README, 4)
    assert (timeline.repeat, timeline.cooldown_s) == (4, 1.0)
    assert timeline.phase_windows("burst")[3] == pytest.approx((3 * 36 + 30, 3 * 36 + 35))
    assert extended(README, 1) is README


def test_final_verdicts_are_judged_at_the_last_looks_share():
    schedule = LookSchedule((1, 2, 2), 120.0)
    log = UntilDecided(120.0, schedule)
    planned = schedule.confidences(0.99)
    for number in (1, 2):
        log.looks.append(Look(number, number, 100 * number, 10.0 * number, planned[number - 1], ()))
    # Stopped after the second of three looks: judged at the second's share, not at 99%.
    assert log.final_confidence(0.99) == planned[1]
    assert 0.99 < planned[1] < 1.0


def test_a_saved_run_is_re_judged_at_its_last_looks_share():
    schedule = LookSchedule((1, 1, 1, 1, 1), 230.0)
    stored = {"max_s": 230.0, "used_s": 210.0, "planned_rounds": [1, 1, 1, 1, 1], "stopped": ""}
    looks = [{"round": n} for n in range(1, 6)]
    assert stored_final_confidence(stored, looks, 0.995) == schedule.confidences(0.995)[4]
    assert stored_final_confidence(stored, looks[:2], 0.995) == schedule.confidences(0.995)[1]
    assert stored_final_confidence(None, None, 0.995) == 0.995
