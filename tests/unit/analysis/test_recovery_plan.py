"""Recovery objectives are refused before sending when the plan holds too few episodes
for a bound on the median episode, with a fix that the check then accepts."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_latency.analysis.bursts import check_power
from pytest_latency.analysis.recovery import Recovery, median_recovery_bounds
from pytest_latency.analysis.recovery_plan import median_episodes_floor, recovery_budget
from pytest_latency.spec.model import Phase, Workload, objective

SPIKE = Workload(
    phases=(Phase("steady", 5, 20.0), Phase("burst", 25, 5.0), Phase("recover", 5, 30.0)),
    seed=5,
    input_tokens=(20, 20),
    output_tokens=40,
)
RECOVERY = objective("recovery", max="10s", after="burst")
TTFT = objective("ttft", p=50, max="2s", phase="steady")


@pytest.mark.parametrize(("confidence", "episodes"), [(0.99, 8), (0.995, 9), (0.9999, 15)])
def test_the_floor_is_where_the_medians_interval_exists(confidence: float, episodes: int) -> None:
    # Two-sided: both extreme ranks together miss the median with 2 * 0.5**k <= 1 - c.
    assert median_episodes_floor(confidence) == episodes
    assert 2 * 0.5**episodes <= 1 - confidence < 2 * 0.5 ** (episodes - 1)
    # The verdict's own bounds (analysis/recovery.py) exist from that many, not one fewer.
    times = [Recovery(e, 0.0, 1.0 + e, 30.0) for e in range(episodes)]
    assert None not in dataclasses.astuple(median_recovery_bounds(times, confidence))
    short = median_recovery_bounds(times[:-1], confidence)
    assert short.lower is None and short.upper is None


def test_one_burst_is_refused_with_repeat_8_and_an_until_decided_budget() -> None:
    powers = check_power(SPIKE, [TTFT, RECOVERY], 0.99)
    assert [power.decidable for power in powers] == [True, False]
    text = powers[1].describe()
    assert text.startswith("recovery after burst <= 10s: 1 episode planned, at least 8 needed")
    assert "give repeat: 8, cooldown: 10s" in text
    episodes, budget = recovery_budget(SPIKE, 0.99) or (0, 0.0)
    assert f"until_decided: {{max: {budget:g}s}} (room for {episodes} episodes" in text


def test_the_fixes_it_names_are_accepted_and_one_episode_fewer_is_not() -> None:
    repeated = dataclasses.replace(SPIKE, repeat=8, cooldown_s=10.0)
    assert all(power.decidable for power in check_power(repeated, [RECOVERY], 0.99))
    fewer = dataclasses.replace(SPIKE, repeat=7, cooldown_s=10.0)
    [power] = check_power(fewer, [RECOVERY], 0.99)
    assert not power.decidable and (power.planned, power.needed) == (7, 8)
    assert "cooldown: 10s" in power.suggestion  # the workload's own cool-down
    _, budget = recovery_budget(SPIKE, 0.99) or (0, 0.0)
    extended = dataclasses.replace(SPIKE, until_decided_s=budget)
    assert all(power.decidable for power in check_power(extended, [RECOVERY], 0.99))


def test_a_budget_too_short_is_refused_at_its_last_looks_share() -> None:
    # 300 s holds four episodes of this 55 s workload: too few even before the looks.
    short = dataclasses.replace(SPIKE, until_decided_s=300.0)
    [power] = check_power(short, [RECOVERY], 0.99)
    assert not power.decidable and power.planned < 8
    assert 0.99 < power.confidence < 1.0  # the last look's share of 99%
    assert power.needed == median_episodes_floor(power.confidence)


def test_a_stricter_confidence_asks_for_more_episodes() -> None:
    [power] = check_power(dataclasses.replace(SPIKE, repeat=8, cooldown_s=5.0), [RECOVERY], 0.995)
    assert not power.decidable and "give repeat: 9, cooldown: 5s" in power.suggestion
