"""Verdicts over repeated episodes and over the looks of an ``until_decided`` run, by
simulation with known truth (issue 22).

A stationary M/M/1 queue at utilisation 0.7 (TTFT p95, true design effect about 28 at
the p95): each episode is 2,000 consecutive customers, episodes are independent (an
``until_decided`` round or a ``repeat:`` starts after a cool-down). The looks are the
plugin's own schedule (:func:`plan_looks`) and their O'Brien-Fleming confidences.
"""

from __future__ import annotations

import numpy as np
import pytest

from pytest_latency.analysis.looks import LookSchedule
from pytest_latency.analysis.percentiles import correlated_quantile_bounds
from pytest_latency.analysis.sectioning import margin_quantile_bounds
from tests.helpers.queues import mm1_sojourns, mm1_truth

pytestmark = pytest.mark.slow

CONFIDENCE = 0.99
PER_EPISODE = 2000
UTILISATION = 0.7
REPS = 200  # binomial sd of a 2% rate: 1 point; of a 90% rate: 2 points


def episodes_of_a_queue(seed: int, reps: int, episodes: int) -> np.ndarray:
    """``reps`` runs of ``episodes`` independent stationary episodes each, in send order."""
    rows = mm1_sojourns(seed, reps * episodes, PER_EPISODE, UTILISATION)
    return rows.reshape(reps, episodes * PER_EPISODE)


def episode_labels(episodes: int) -> np.ndarray:
    return np.repeat(np.arange(episodes), PER_EPISODE)


def fixed_rates(samples: np.ndarray, episodes: int, limit: float) -> tuple[float, float]:
    """(fail, pass) rates of one verdict on all ``episodes`` of each run."""
    labels = episode_labels(episodes)
    fails = passes = 0
    for row in samples:
        bounds = correlated_quantile_bounds(row, 0.95, CONFIDENCE, labels)
        fails += bounds.lower > limit
        passes += bounds.upper <= limit
    return fails / len(samples), passes / len(samples)


def sequential_rates(
    samples: np.ndarray, schedule: LookSchedule, limit: float
) -> tuple[float, float]:
    """(fail, pass) rates when each run is judged after every round, at that look's
    confidence, and stops at its first decided look."""
    confidences = schedule.confidences(CONFIDENCE)
    fails = passes = 0
    for row in samples:
        for episodes, confidence in zip(schedule.cumulative(), confidences, strict=True):
            size = episodes * PER_EPISODE
            # The verdict's own bounds: the first look (one episode) may use sectioning.
            bounds = margin_quantile_bounds(row[:size], 0.95, confidence, episode_labels(episodes))
            if bounds.lower > limit:
                fails += 1
                break
            if bounds.upper <= limit:
                passes += 1
                break
    return fails / len(samples), passes / len(samples)


# The schedule a budget of about 8 episodes gives: the workload, then one episode a round.
EIGHT_LOOKS = LookSchedule((1, 1, 1, 1, 1, 1, 1, 1), max_s=0.0)


def test_two_episodes_of_a_queue_are_not_taken_as_independent():
    """Two episodes' counts estimate their spread with one degree of freedom: alone, they
    fell below independence one time in six and passed at the truth 7% of the time."""
    samples = episodes_of_a_queue(31, REPS, 2)
    fails, passes = fixed_rates(samples, 2, mm1_truth(0.95, UTILISATION))
    assert fails <= 0.02 and passes <= 0.02


def test_until_decided_keeps_its_error_at_the_truth():
    samples = episodes_of_a_queue(32, REPS, 8)
    fails, passes = sequential_rates(samples, EIGHT_LOOKS, mm1_truth(0.95, UTILISATION))
    assert fails <= 0.02 and passes <= 0.02


def test_until_decided_decides_the_clear_cases_on_a_queue():
    """The limit at twice and at half the true p95: one run of 2,000 requests passes the
    first in about a third of runs (too few effective requests); looks that add episodes
    until decided pass it in at least 90%, and fail the second at once."""
    samples = episodes_of_a_queue(33, REPS, 8)
    truth = mm1_truth(0.95, UTILISATION)
    _, passes = sequential_rates(samples, EIGHT_LOOKS, 2.0 * truth)
    assert passes >= 0.90
    fails, _ = sequential_rates(samples, EIGHT_LOOKS, 0.5 * truth)
    assert fails >= 0.90


def measured_rates(reps: int) -> dict[str, float]:
    """The until_decided rows of docs/statistics.md (wrong FAIL / wrong PASS at the truth)."""
    truth = mm1_truth(0.95, UTILISATION)
    fails, passes = sequential_rates(episodes_of_a_queue(32, reps, 8), EIGHT_LOOKS, truth)
    samples = episodes_of_a_queue(33, reps, 8)
    return {
        "until_decided at the truth: FAIL": fails,
        "until_decided at the truth: PASS": passes,
        "until_decided, limit 2x: PASS": sequential_rates(samples, EIGHT_LOOKS, 2 * truth)[1],
        "until_decided, limit 0.5x: FAIL": sequential_rates(samples, EIGHT_LOOKS, truth / 2)[0],
    }


if __name__ == "__main__":
    import sys

    for name, rate in measured_rates(int(sys.argv[1]) if len(sys.argv) > 1 else 400).items():
        print(f"{rate:7.1%}  {name}")
