"""Workload plans: deterministic from a seed, arrival processes with the right statistics."""

import numpy as np
import pytest

from pytest_latency.spec.model import Phase, SpecError, Workload
from pytest_latency.workload import arrival_times, build_plan


def _workload(**overrides):
    options = dict(
        phases=(Phase("steady", rate=5, duration_s=20), Phase("burst", rate=25, duration_s=5)),
        seed=7,
    )
    options.update(overrides)
    return Workload(**options)


def test_same_seed_same_plan_and_different_seed_different_plan():
    first, again = build_plan(_workload()), build_plan(_workload())
    assert first == again
    other = build_plan(_workload(seed=8))
    assert [r.intended_s for r in other.requests] != [r.intended_s for r in first.requests]


def test_requests_are_in_their_phase_window_and_ordered():
    plan = build_plan(_workload())
    times = [request.intended_s for request in plan.requests]
    assert times == sorted(times)
    for request in plan.requests:
        if request.phase == "steady":
            assert 0.0 <= request.intended_s < 20.0
        else:
            assert 20.0 <= request.intended_s < 25.0
    assert [request.id for request in plan.requests] == list(range(len(plan.requests)))


def test_shapes_do_not_move_arrivals():
    """Changing request shapes must not change when requests arrive (independent streams)."""
    a = build_plan(_workload(input_tokens=(10, 20)))
    b = build_plan(_workload(input_tokens=(300, 900)))
    assert [r.intended_s for r in a.requests] == [r.intended_s for r in b.requests]


def test_prompt_lengths_match_the_target_and_stay_in_range():
    plan = build_plan(_workload(input_tokens=(200, 400)))
    for request in plan.requests:
        assert 200 <= request.input_tokens <= 400
        assert len(request.prompt.split()) == request.input_tokens
        assert request.output_tokens == 200
    prompts = [request.prompt for request in plan.requests]
    assert len(set(prompts)) == len(prompts), "every prompt is distinct"


@pytest.mark.parametrize("arrival", ["poisson", "gamma"])
def test_random_arrivals_have_the_target_rate(arrival):
    # 50 req/s for 200 s is 10,000 arrivals: the count's sd is 100 for Poisson, so a
    # 4% band is > 4 sd and cannot flake; a wrong rate (e.g. per-ms units) fails it.
    phase = Phase("p", rate=50, duration_s=200, arrival=arrival, burstiness=0.5)
    times = arrival_times(phase, np.random.default_rng(1))
    assert abs(times.size - 10_000) < 400
    gaps = np.diff(times)
    assert abs(gaps.mean() - 0.02) < 0.002
    # Poisson gaps have CV 1; gamma with burstiness 0.5 has CV sqrt(2).
    expected_cv = 1.0 if arrival == "poisson" else 2**0.5
    assert abs(gaps.std() / gaps.mean() - expected_cv) < 0.1


def test_constant_arrivals_are_evenly_spaced():
    times = arrival_times(Phase("c", rate=4, duration_s=2.5, arrival="constant"), None)
    assert times.tolist() == [0.0, 0.25, 0.5, 0.75, 1.0, 1.25, 1.5, 1.75, 2.0, 2.25]


def test_warmup_requests_are_separate_and_negative_ids():
    plan = build_plan(_workload(warmup_requests=3))
    assert len(plan.warmup) == 3
    assert all(request.id < 0 and request.phase == "warmup" for request in plan.warmup)
    assert all(request.id >= 0 for request in plan.requests)


@pytest.mark.parametrize(
    ("overrides", "message"),
    [
        ({"phases": ()}, "at least one phase"),
        ({"input_tokens": (400, 200)}, "input_tokens"),
        ({"output_tokens": 0}, "output_tokens"),
        ({"timeout_s": 0}, "timeout"),
        ({"phases": (Phase("a", 1, 1), Phase("a", 1, 1))}, "repeated: a"),
    ],
)
def test_invalid_workloads_are_refused(overrides, message):
    with pytest.raises(SpecError, match=message):
        _workload(**overrides)


def test_invalid_phases_are_refused():
    with pytest.raises(SpecError, match="rate"):
        Phase("x", rate=0, duration_s=1)
    with pytest.raises(SpecError, match="arrival"):
        Phase("x", rate=1, duration_s=1, arrival="uniform")
