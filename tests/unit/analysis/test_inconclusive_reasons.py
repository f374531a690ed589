"""An inconclusive verdict without a bound names its real cause, by seeded simulation:
too few (effective) requests, or too few episodes for the correlation estimate (each
episode adds one degree of freedom; more requests per episode add none), and its advice
asks for more of what is short."""

import math

import numpy as np

from pytest_latency.analysis.advice import what_would_decide
from pytest_latency.analysis.bursts import episode_floor
from pytest_latency.analysis.dependence import Dependence
from pytest_latency.analysis.objectives import decide_objectives
from pytest_latency.analysis.verdict import (
    ObjectiveResult,
    Verdict,
    decide,
    objective_confidence,
    samples_needed,
)
from pytest_latency.records import RequestRecord, Status
from pytest_latency.spec.model import Phase, Workload, objective

SHARED = objective_confidence(4)  # 99.75% each: four objectives in the test


def episodes_of(seed: int, episodes: int, per_episode: int, shift_sd: float) -> list:
    """Lognormal TTFTs around 0.5 s; each episode shares a level (its own queue, its own
    batch), so the episodes' counts spread wider than independent requests' would."""
    rng = np.random.default_rng(seed)
    records = []
    for episode in range(episodes):
        level = rng.normal(0.0, shift_sd)
        for index in range(per_episode):
            ttft = 0.5 * math.exp(level + rng.normal(0.0, 0.2))
            record = RequestRecord(
                id=len(records), phase="steady", intended_s=index * 0.1, input_tokens=10,
                episode=episode,
            )  # fmt: skip
            record.status = Status.OK
            record.sent_s, record.first_token_s = record.intended_s, record.intended_s + ttft
            record.end_s = record.first_token_s + 1.0
            records.append(record)
    return records


def workload(episodes: int, per_episode: int) -> Workload:
    phase = Phase("steady", rate=10, duration_s=per_episode / 10)
    return Workload(phases=(phase,), repeat=episodes, cooldown_s=10)


def test_four_correlated_episodes_name_their_degrees_of_freedom_not_the_sample_count():
    median = objective("ttft", p=50, max="600ms")
    records = episodes_of(5, 4, 100, shift_sd=0.3)
    [result] = decide_objectives([median], records, confidence=SHARED, workload=workload(4, 100))
    assert result.verdict is Verdict.INCONCLUSIVE and math.isinf(result.upper_s)
    # The effective n is plenty for a p50 bound were the correlation known...
    assert result.dependence is not None and result.dependence.method == "episodes"
    assert math.floor(result.effective_n) >= samples_needed(0.5, SHARED)
    # ...so the reason is the episodes, and the advice more of them, not more requests.
    assert result.reason.startswith(
        "too few episodes for a p50 bound: 4 episodes give the correlation estimate"
        " 3 degrees of freedom, too few for any bound at 99.75% confidence: more requests"
        " per episode cannot give one"
    )
    assert "too few samples" not in result.reason and "roughly" not in result.reason
    assert "to decide it: more episodes, not more requests" in result.reason
    assert "(repeat: 5, cooldown: 10s), or until_decided: {max: " in result.reason


def test_more_requests_per_episode_leave_four_episodes_without_a_bound():
    median = objective("ttft", p=50, max="600ms")
    ten_times = decide(median, episodes_of(5, 4, 1000, shift_sd=0.3), SHARED)
    assert ten_times.verdict is Verdict.INCONCLUSIVE and math.isinf(ten_times.upper_s)
    assert ten_times.reason.startswith("too few episodes for a p50 bound: 4 episodes")


def test_the_advised_episodes_are_the_floor_of_the_plan_check():
    # Effective n 48 over 4 episodes (12 each): the fewest episodes whose bound exists,
    # paying Student's t at k - 1, as the plan-time check counts them (analysis/bursts.py).
    median = objective("ttft", p=90, max="600ms")
    few = Dependence(
        n=400, design_effect=400 / 48, degrees_of_freedom=3.0, method="episodes", episodes=4
    )
    result = ObjectiveResult(
        median, Verdict.INCONCLUSIVE, 0.5, 0.4, math.inf, 400, SHARED, "", n_effective=48.0,
        dependence=few,
    )  # fmt: skip
    floor = episode_floor(median, 12, SHARED)
    assert floor is not None and floor > 4
    advice = what_would_decide(result, workload(4, 100))
    assert f"about {floor} episodes (repeat: {floor}, cooldown: 10s)" in advice


def test_with_the_episodes_enough_but_not_the_requests_the_count_is_named():
    # Six episodes (5 degrees of freedom) would give a p95 bound from 104 effective
    # requests at 99%; these hold 29: the requests are the limit, as the reason says.
    p95 = objective("ttft", p=95, max="1s")
    records = episodes_of(2, 6, 100, shift_sd=0.3)
    [result] = decide_objectives([p95], records, confidence=0.99, workload=workload(6, 100))
    assert result.verdict is Verdict.INCONCLUSIVE and math.isinf(result.upper_s)
    assert result.dependence is not None and result.dependence.degrees_of_freedom == 5.0
    assert result.reason.startswith(
        f"too few samples for a p95 bound: effective n={result.effective_n:.0f},"
        " roughly 104+ independent requests needed"
    )
    assert "to decide it: about" in result.reason and "episodes (repeat: " in result.reason


def test_few_independent_samples_still_name_the_count():
    p99 = objective("ttft", p=99, max="1s")
    result = decide(p99, episodes_of(1, 1, 50, shift_sd=0.0), 0.99)
    assert result.reason.startswith(
        "too few samples for a p99 bound: effective n=50, roughly 528+ independent requests"
    )


def test_between_no_count_and_a_short_count_the_degrees_of_freedom_say_how_many():
    # At 99% the t at 3 degrees of freedom leaves room for a bound, but asks more of the
    # effective n (188) than a known correlation would (51): these 120 are not enough.
    p90 = objective("ttft", p=90, max="600ms")
    result = decide(p90, episodes_of(5, 4, 100, shift_sd=0.3), 0.99)
    assert result.reason.startswith(
        "too few episodes for a p90 bound: 4 episodes give the correlation estimate 3"
        " degrees of freedom, at which a bound needs effective n 188+ (effective n 120;"
        " 51+ with the correlation known)"
    )


def ar1_ttfts(seed: int, n: int, rho: float) -> np.ndarray:
    """TTFTs around 0.2 s whose log level is an AR(1) in send order (a shared queue)."""
    rng = np.random.default_rng(seed)
    levels = np.empty(n)
    level = rng.normal()
    for index in range(n):
        level = rho * level + math.sqrt(1.0 - rho**2) * rng.normal()
        levels[index] = level
    return 0.2 * np.exp(0.3 * levels)


def ar1_records(seed: int, n: int) -> list[RequestRecord]:
    records = []
    for index, ttft in enumerate(ar1_ttfts(seed, n, 0.7)):
        record = RequestRecord(index, "burst", index * 0.05, 100, max_tokens=20)
        record.status, record.sent_s = Status.OK, index * 0.05
        record.first_token_s = index * 0.05 + float(ttft)
        record.end_s = record.first_token_s + 0.2
        records.append(record)
    return records


FLAT = Workload(phases=(Phase("burst", rate=20, duration_s=4),))


def test_few_send_order_degrees_of_freedom_are_named_with_what_would_decide():
    """80 correlated requests under a p50 limit: effective n 11 would give a p50 bound
    (8 needed) were the correlation known, but its send-order estimate has 4 degrees of
    freedom. The reason says so, not "too few samples", and the advice is a longer run."""
    goal = objective("ttft", p=50, max="300ms")
    [result] = decide_objectives([goal], ar1_records(0, 80), confidence=0.99, workload=FLAT)
    assert result.verdict is Verdict.INCONCLUSIVE and math.isinf(result.upper_s)
    assert result.dependence is not None and result.dependence.method == "serial"
    assert math.floor(result.effective_n) >= samples_needed(0.5, 0.99)
    assert result.reason.startswith(
        "too few degrees of freedom for a p50 bound: the correlation in send order"
        " (over 10 of 80 requests) is estimated with 4 degrees of freedom, at which a bound"
        " needs effective n 21+ (effective n 11; 8+ with the correlation known)"
    )
    assert "too few samples" not in result.reason and "roughly" not in result.reason
    assert "to decide it: about 1.3x the evidence" in result.reason
    assert "a run about 1.3x as long" in result.reason and "until_decided: {max: " in result.reason


def test_a_p50_far_over_its_limit_without_a_lower_bound_is_advised_from_its_df():
    """79 of the same requests 40x over a 5 ms p50: the lower bound is the 0 s floor (no
    order statistic at 4 degrees of freedom), which is no bound to shrink; the advice
    comes from the degrees of freedom a longer run adds (it said "about 1.0x" before).
    Sectioning needs 80 requests (8 batches of 10): from 80 on, its lower side at the
    window's cap (10 lags, an eighth of the run) FAILs the same run."""
    goal = objective("ttft", p=50, max="5ms")
    [result] = decide_objectives([goal], ar1_records(0, 79), confidence=0.99, workload=FLAT)
    assert result.verdict is Verdict.INCONCLUSIVE and result.lower_s == 0.0
    assert result.estimate_s > 30 * 0.005
    assert result.reason.startswith("too few degrees of freedom for a p50 bound")
    assert "to decide it: about 1.3x the evidence" in result.reason
    [result] = decide_objectives([goal], ar1_records(0, 80), confidence=0.99, workload=FLAT)
    assert result.verdict is Verdict.FAIL and result.lower_s > 0.005
    assert result.reason.endswith("sectioning: 8 batches in send order")
