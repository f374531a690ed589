"""Capacity search against the sim's engine in virtual time, with a known flip rate.

Each probe plays a warm-up and a probe phase through ``simulate()`` (the engine the
live server runs), decides the objectives at the pre-planned looks and stops early once
decided. The truth is where TTFT p90 crosses the limit in long virtual runs.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from pytest_latency.analysis.capacity import (
    SATURATION_LABEL,
    ProbeResult,
    as_proportion,
    decide_capacity,
    look_confidences,
    saturated,
    search_capacity,
)
from pytest_latency.analysis.objectives import decide_objectives
from pytest_latency.analysis.verdict import objective_confidence
from pytest_latency.records import RequestRecord, Status
from pytest_latency.sim.config import SimConfig
from pytest_latency.sim.virtual import Arrival, simulate
from pytest_latency.spec.model import Phase, Workload, objective
from pytest_latency.workload import build_plan

# One replica of 8 slots, 20-token answers of ~0.6 s: about 13 req/s at most.
SIM = SimConfig(replicas=1, max_batch=8)
OBJECTIVES = (objective("ttft", p=90, max="300ms"),)
WARM_S, PROBE_S = 5.0, 60.0


def virtual_records(workload: Workload, config: SimConfig = SIM) -> list[RequestRecord]:
    plan = build_plan(workload)
    arrivals = [Arrival(p.intended_s, p.input_tokens, p.output_tokens) for p in plan.requests]
    records = []
    for planned, result in zip(plan.requests, simulate(config, arrivals), strict=True):
        record = RequestRecord(planned.id, planned.phase, planned.intended_s, planned.input_tokens)
        record.sent_s = planned.intended_s
        if result.ttft_s is not None and result.e2e_s is not None:
            record.status = Status.OK
            record.first_token_s = planned.intended_s + result.ttft_s
            record.end_s = planned.intended_s + result.e2e_s
        else:
            record.status = Status.REJECTED
            record.end_s = planned.intended_s
        records.append(record)
    return records


def virtual_probe(seed: int = 5):  # type: ignore[no-untyped-def]
    def probe(rate: float, looks: Sequence[float], confidences: Sequence[float]) -> ProbeResult:
        workload = Workload(
            phases=(Phase("warmup", rate, WARM_S), Phase("probe", rate, PROBE_S)),
            seed=seed,
            input_tokens=(20, 20),
            output_tokens=20,
        )
        records = virtual_records(workload)
        for look, confidence in zip(looks, confidences, strict=True):
            cutoff = WARM_S + look * PROBE_S
            seen = [r for r in records if r.phase == "probe" and r.intended_s < cutoff]
            each = objective_confidence(len(OBJECTIVES), confidence)
            tests = [as_proportion(goal) for goal in OBJECTIVES]  # as live probes decide
            results = decide_objectives(tests, seen, confidence=each)
            pairs = zip(OBJECTIVES, results, strict=True)
            verdicts = {goal.label: result.verdict.value for goal, result in pairs}
            before = [r for r in records if r.intended_s < cutoff]
            if saturated(before, rate, since_s=WARM_S):
                verdicts[SATURATION_LABEL] = "fail"
            if "fail" in verdicts.values() or look == looks[-1]:  # early: fails only
                drain = max((r.end_s or cutoff) for r in seen) - cutoff
                return ProbeResult(rate, len(seen), verdicts, look < 1.0, cutoff + max(drain, 0))
        raise AssertionError("the last look always returns")

    return probe


def p90_ttft(rate: float, seconds: float = 400.0) -> float:
    workload = Workload(phases=(Phase("long", rate, seconds),), seed=11, input_tokens=(20, 20),
                        output_tokens=20)  # fmt: skip
    records = [r for r in virtual_records(workload) if r.intended_s > 20.0]
    ttfts = [r.ttft_s if r.ok and r.ttft_s is not None else math.inf for r in records]
    return float(np.percentile(ttfts, 90, method="higher"))


def flip_rate(low: float = 4.0, high: float = 30.0) -> float:
    """Where TTFT p90 crosses 300 ms in long runs (bisection to 0.1 req/s)."""
    while high - low > 0.1:
        middle = (low + high) / 2.0
        low, high = (middle, high) if p90_ttft(middle) <= 0.3 else (low, middle)
    return (low + high) / 2.0


def test_look_confidences_spend_alpha_exactly_and_late() -> None:
    confidences = look_confidences(0.01, (0.25, 0.5, 1.0))
    shares = [1.0 - c for c in confidences]
    assert sum(shares) == pytest.approx(0.01)
    assert shares[0] < shares[1] < shares[2]  # O'Brien-Fleming: little to the early looks


def _search():  # type: ignore[no-untyped-def]
    return search_capacity(
        virtual_probe(), (1.0, 30.0), probe_cost_s=WARM_S + PROBE_S + 10.0, budget_s=BUDGET_S
    )


BUDGET_S = 600.0


@pytest.mark.slow
def test_the_bracket_contains_the_true_flip_rate_within_budget() -> None:
    truth = flip_rate()  # about 10 req/s
    result = _search()
    assert result.passed_rps is not None and result.failed_rps is not None, result.to_json()
    assert result.passed_rps <= truth <= result.failed_rps, (truth, result.to_json())
    assert result.spent_s <= BUDGET_S and not result.contradictions
    assert any(probe.stopped_early for probe in result.probes)  # decided at the half look
    verdict, estimate, _ = decide_capacity(result, least=2.0)
    assert verdict == "pass" and estimate == result.passed_rps
    assert decide_capacity(result, least=result.failed_rps + 1)[0] == "fail"


@pytest.mark.slow
@pytest.mark.xfail(
    strict=True,
    reason="known limit: with 8 slots the queue near the flip (10.1 req/s) wanders for"
    " longer than a 60 s probe, so probes at 8.4 and 12.8 req/s stay undecided even as"
    " proportions, and the bracket is 6.8..15.9 req/s (2.3x; the band between is"
    " reported). The live e2e on 32 slots is 1.41x (tests/e2e/test_capacity.py)",
)
def test_the_bracket_is_at_most_one_and_a_half_wide() -> None:
    result = _search()
    assert result.failed_rps is not None and result.passed_rps is not None
    assert result.failed_rps / result.passed_rps <= 1.5


def _scripted(outcomes: dict[float, str]):  # type: ignore[no-untyped-def]
    def probe(rate: float, looks: Sequence[float], confidences: Sequence[float]) -> ProbeResult:
        verdict = next(v for limit, v in sorted(outcomes.items()) if rate <= limit)
        return ProbeResult(rate, 100, {"ttft p90 <= 300ms": verdict}, False, 10.0)

    return probe


def test_a_repeat_probe_that_contradicts_the_pass_is_reported() -> None:
    calls: list[float] = []

    def probe(rate: float, looks: Sequence[float], confidences: Sequence[float]) -> ProbeResult:
        calls.append(rate)
        verdict = "pass" if rate <= 4.0 and calls.count(rate) == 1 else "fail"
        return ProbeResult(rate, 100, {"ttft p90 <= 300ms": verdict}, False, 10.0)

    result = search_capacity(probe, (1.0, 30.0), probe_cost_s=10.0, budget_s=200.0)
    assert result.probes[-1].rate == result.passed_rps  # the confirming repeat
    assert result.passed_rps is not None and result.passed_rps <= 4.0
    assert result.contradictions and "monotonicity" in result.stopped
    assert decide_capacity(result, 2.0)[0] == "inconclusive"


def test_the_budget_is_honoured_and_inconclusive_probes_are_the_band() -> None:
    probe = _scripted({3.0: "pass", 6.0: "inconclusive", math.inf: "fail"})
    result = search_capacity(probe, (1.0, 30.0), probe_cost_s=10.0, budget_s=55.0)
    assert len(result.probes) == 5 and result.spent_s <= 55.0
    assert result.stopped.startswith("budget")
    short = search_capacity(probe, (1.0, 30.0), probe_cost_s=10.0, budget_s=500.0)
    assert short.inconclusive_rps and all(3.0 < r <= 6.0 for r in short.inconclusive_rps)
    assert "band" in short.stopped


def test_the_search_starts_mid_range_and_needs_few_probes() -> None:
    probe = _scripted({7.0: "pass", math.inf: "fail"})
    result = search_capacity(probe, (1.0, 64.0), probe_cost_s=10.0, budget_s=1000.0)
    assert result.probes[0].rate == pytest.approx(8.0)  # sqrt(1 x 64), not the bottom
    assert result.passed_rps is not None and result.failed_rps is not None
    assert result.passed_rps <= 7.0 < result.failed_rps <= 1.25 * result.passed_rps
    assert len(result.probes) <= 6  # 5 bisections of a 64x range, and the repeat
    assert min(p.rate for p in result.probes) > 2.0  # no probes spent at the bottom


def test_an_undecided_lowest_probe_is_not_called_a_fail() -> None:
    probe = _scripted({1.0: "inconclusive", math.inf: "fail"})
    result = search_capacity(probe, (1.0, 30.0), probe_cost_s=10.0, budget_s=1000.0)
    assert result.passed_rps is None and result.failed_rps is not None
    assert result.probes[-1].rate == 1.0  # the bottom of the range was probed last
    assert "lowest" not in result.stopped and "band" in result.stopped
    assert decide_capacity(result, 1.0)[0] == "inconclusive"


def test_the_range_ends_are_probed_when_the_bracket_reaches_them() -> None:
    passing = search_capacity(
        _scripted({math.inf: "pass"}), (1.0, 30.0), probe_cost_s=10.0, budget_s=1000.0
    )
    assert passing.passed_rps == 30.0 and passing.failed_rps is None
    assert passing.stopped == "passed at the highest rate 30/s"
    failing = search_capacity(
        _scripted({math.inf: "fail"}), (1.0, 30.0), probe_cost_s=10.0, budget_s=1000.0
    )
    assert failing.failed_rps == 1.0 and failing.stopped == "failed at the lowest rate 1/s"
    assert decide_capacity(failing, 1.0)[0] == "fail"


def test_the_capacity_objective_is_decided_on_the_search() -> None:
    from pytest_latency.analysis.objectives import decide_objectives

    gate = objective("capacity", min=5)
    assert gate.label == "capacity >= 5 req/s"
    result = search_capacity(
        _scripted({7.0: "pass", math.inf: "fail"}),
        (1.0, 64.0),
        probe_cost_s=10.0,
        budget_s=1000.0,
    )
    (decided,) = decide_objectives([gate], [], confidence=0.99, capacity=result)
    assert decided.verdict.value == "pass" and decided.estimate_s == result.passed_rps
    assert decided.lower_s == result.passed_rps and decided.upper_s == result.failed_rps
    (alone,) = decide_objectives([gate], [], confidence=0.99)
    assert alone.verdict.value == "inconclusive" and "no capacity search" in alone.reason


def _iid_records(ttfts: np.ndarray, rate: float = 20.0) -> list[RequestRecord]:
    records = []
    for index, ttft in enumerate(ttfts):
        record = RequestRecord(index, "probe", index / rate, 20)
        record.sent_s = record.intended_s
        record.first_token_s = record.intended_s + float(ttft)
        record.end_s = record.first_token_s + 0.5
        record.status = Status.OK
        records.append(record)
    return records


@pytest.mark.slow
def test_a_probe_with_looks_false_fails_no_more_than_nominal() -> None:
    """At the boundary (true p90 exactly the limit) every fail is false: with the looks'
    O'Brien-Fleming shares the rate stays within alpha (seeded; 3 binomial sigmas)."""
    alpha, looks, trials, size = 0.05, (0.5, 1.0), 600, 300
    confidences = look_confidences(alpha, looks)
    goal = as_proportion(objective("ttft", p=90, max="300ms"))  # as live probes decide it
    assert goal == objective("attainment", ttft="300ms", min="90%")
    scale = 0.3 / math.log(10.0)  # exponential TTFTs with P(ttft <= 300ms) = 90%
    rng = np.random.default_rng(12)
    fails = 0
    for _ in range(trials):
        records = _iid_records(rng.exponential(scale, size))
        for look, confidence in zip(looks, confidences, strict=True):
            seen = records[: round(look * size)]
            (result,) = decide_objectives([goal], seen, confidence=confidence)
            if result.verdict.value in ("pass", "fail"):
                fails += result.verdict.value == "fail"
                break
    assert fails / trials <= alpha + 3.0 * math.sqrt(alpha * (1 - alpha) / trials), fails


def test_an_undecided_rate_is_probed_around_then_sampled_again() -> None:
    calls: list[float] = []

    def probe(rate: float, looks: Sequence[float], confidences: Sequence[float]) -> ProbeResult:
        calls.append(rate)
        if rate < 35.0:
            verdict = "pass"
        elif rate < 45.0:  # undecided the first time, then the fresh sample passes
            verdict = "inconclusive" if calls.count(rate) == 1 else "pass"
        else:
            verdict = "fail" if rate > 50.0 else "inconclusive"
        return ProbeResult(rate, 100, {"ttft p90 <= 300ms": verdict}, False, 10.0)

    result = search_capacity(probe, (10.0, 160.0), probe_cost_s=10.0, budget_s=1000.0)
    assert calls[:4] == pytest.approx([40.0, 40.0 / 1.2, 48.0, 57.6])  # one ratio away
    assert calls[4] == 40.0 and result.passed_rps == 40.0  # the band's end, again
    assert result.failed_rps == pytest.approx(57.6) and result.inconclusive_rps == [48.0]
    assert result.failed_rps / result.passed_rps <= 1.45
