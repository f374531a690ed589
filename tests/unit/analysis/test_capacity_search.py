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

from pytest_latency.analysis.capacity import DEFAULT_LOOKS, search_capacity
from pytest_latency.analysis.capacity_gate import decide_capacity
from pytest_latency.analysis.capacity_plan import MAX_RETRIES, RETRIES, repeat_shares, search_plan
from pytest_latency.analysis.capacity_probe import SATURATION_LABEL, as_proportion
from pytest_latency.analysis.capacity_result import CapacityResult, ProbeResult
from pytest_latency.analysis.looks import look_confidences
from pytest_latency.analysis.objectives import decide_objectives
from pytest_latency.records import RequestRecord, Status
from pytest_latency.sim.config import SimConfig
from pytest_latency.spec.model import Phase, Workload, objective
from tests.helpers.slot_server import SlotServer
from tests.helpers.virtual_capacity import VirtualProbes, virtual_records

# One replica of 8 slots, 20-token answers of ~0.6 s: about 13 req/s at most.
SIM = SimConfig(replicas=1, max_batch=8)
OBJECTIVES = (objective("ttft", p=90, max="300ms"),)
WARM_S, PROBE_S = 5.0, 60.0


def sim_serve(phases: list[tuple[str, float, float]], seed: int) -> list[RequestRecord]:
    """The sim's engine in virtual time as a server for :class:`VirtualProbes`."""
    named = tuple(Phase(name, rate, seconds) for name, rate, seconds in phases)
    workload = Workload(phases=named, seed=seed, input_tokens=(20, 20), output_tokens=20)
    return virtual_records(workload, SIM)


def virtual_probe(seed: int = 5) -> VirtualProbes:
    return VirtualProbes(sim_serve, OBJECTIVES, warmup_s=WARM_S, probe_s=PROBE_S, seed=seed)


def p90_ttft(rate: float, seconds: float = 400.0) -> float:
    workload = Workload(phases=(Phase("long", rate, seconds),), seed=11, input_tokens=(20, 20),
                        output_tokens=20)  # fmt: skip
    records = [r for r in virtual_records(workload, SIM) if r.intended_s > 20.0]
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


def _search() -> CapacityResult:
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
    # 7.9..13.6/s on the lattice (1.73x; 7.0..12.8/s, 1.84x, before). Its fail now comes
    # at the last look, so no probe here stops at the half look: tests/unit/plugin/
    # test_capacity_run.py and test_runaway_probe.py cover early stops.
    assert result.failed_rps / result.passed_rps <= 1.75, result.to_json()
    verdict, estimate, _ = decide_capacity(result, least=2.0)
    assert verdict == "pass" and estimate == result.passed_rps
    assert decide_capacity(result, least=result.failed_rps + 1)[0] == "fail"


# A server of known capacity: 4 slots, 0.1 s prefill, 20 tokens at 25 ms, so 0.6 s a
# request and 6.67 req/s at most (the 6-minute searches: test_capacity_slots.py).
SLOTS = SlotServer(slots=4, prefill_s=0.1, decode_s=0.025, output_tokens=20)
SLOT_WARM_S, SLOT_PROBE_S = 6.0, 60.0


def test_a_repeat_at_one_rate_pools_the_earlier_probe() -> None:
    goals = [objective("ttft", p=90, max="3s")]
    probes = VirtualProbes(SLOTS.records, goals, warmup_s=SLOT_WARM_S, probe_s=SLOT_PROBE_S, seed=3)
    confidences = look_confidences(0.002, DEFAULT_LOOKS)
    first = probes(4.0, DEFAULT_LOOKS, confidences)
    again = probes(4.0, DEFAULT_LOOKS, confidences)
    ((goal, queue), (pooled, _)) = (first.evidence, again.evidence)
    assert goal.pooled == 1 and pooled.pooled == 2 and pooled.n == first.offered + again.offered
    assert goal.decided_as == "attainment(ttft<=3000ms) >= 90.0%" and goal.unit == "fraction"
    assert goal.lower <= goal.estimate <= goal.upper and goal.n_effective is not None
    assert goal.limit == 0.9 and goal.at_least and goal.lean > 0  # 4/s: well under the flip
    assert queue.objective == SATURATION_LABEL == "queue kept up" and queue.verdict == "pass"
    assert queue.unit == "rps" and queue.estimate < (
        queue.limit or 0
    )  # grew under the runaway line
    other = probes(5.0, DEFAULT_LOOKS, confidences)  # another rate: its own requests only
    assert other.evidence[0].pooled == 1


def test_a_runaway_queue_fails_with_its_growth_as_evidence() -> None:
    goals = [objective("ttft", p=90, max="3s")]
    probes = VirtualProbes(SLOTS.records, goals, warmup_s=SLOT_WARM_S, probe_s=SLOT_PROBE_S, seed=4)
    result = probes(20.0, DEFAULT_LOOKS, look_confidences(0.002, DEFAULT_LOOKS))
    assert result.outcome == "fail" and result.verdicts[SATURATION_LABEL] == "fail"
    assert result.stopped_early and result.cost_s < SLOT_WARM_S + 0.5 * SLOT_PROBE_S
    (queue,) = result.evidence
    assert (
        queue.verdict == "fail" and queue.estimate >= (queue.limit or math.inf) > 0
    )  # 20/s in, 6.67 out
    assert result.to_json()["objectives"] == [queue.to_json()]


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
    # Two ratios over first (a fail over the capacity is cheap), then, as the scripted
    # probes carry no evidence that leans, one ratio under; then the band's end again.
    assert calls[:3] == pytest.approx([40.0, 57.6, 40.0 / 1.2])
    assert calls[3] == 40.0 and result.passed_rps == 40.0  # pooled with the first probe
    assert result.failed_rps == pytest.approx(57.6) and result.inconclusive_rps == [48.0]
    assert result.failed_rps is not None and result.failed_rps / 40.0 <= 1.45
    # The hemmed-in band's end, probed again until RETRIES: the budget holds 100 probes,
    # so a rate may pool up to MAX_RETRIES, but only while its lean projects to a
    # decision; these scripted probes lean nowhere (a rate at the flip).
    assert result.retries == MAX_RETRIES and calls.count(48.0) == RETRIES


@pytest.mark.parametrize(
    ("budget_s", "plan"),
    [(60.0, (6, RETRIES)), (1000.0, (7, MAX_RETRIES))],
    ids=["six-probes", "a-hundred-probes"],
)
def test_each_rate_reserves_its_alpha_and_the_reservations_add_up_to_alpha(
    budget_s: float, plan: tuple[int, int]
) -> None:
    """Every rate holds alpha / max_rates, shared by its (pooled) probes 1:4:9:16...;
    the search probes at most max_rates rates, so the union bound is alpha. A budget of
    six probes reserves for six rates (bisecting 16x to 1.2x takes 4, and 3 around a
    band), four probes each; one of a hundred probes for seven rates, sixteen probes
    each: a longer budget buys repeats, not rates it never probes."""
    seen: dict[float, list[list[float]]] = {}

    def probe(rate: float, looks: Sequence[float], confidences: Sequence[float]) -> ProbeResult:
        seen.setdefault(rate, []).append(list(confidences))
        verdict = "pass" if rate < 20.0 else "inconclusive" if rate < 40.0 else "fail"
        return ProbeResult(rate, 100, {"ttft p90 <= 300ms": verdict}, False, 10.0)

    assert search_plan((10.0, 160.0), int(budget_s // 10), 1.2) == plan
    max_rates, retries = plan
    result = search_capacity(probe, (10.0, 160.0), probe_cost_s=10.0, budget_s=budget_s)
    assert len(seen) <= max_rates and sum(map(len, seen.values())) == len(result.probes)
    per_rate = 0.01 / max_rates
    squares = sum((k + 1) ** 2 for k in range(retries))
    for calls in seen.values():
        assert len(calls) <= retries
        for place, confidences in enumerate(calls):
            share = per_rate * (place + 1) ** 2 / squares
            assert confidences == pytest.approx(look_confidences(share, DEFAULT_LOOKS))
    assert sum(repeat_shares(retries)) == pytest.approx(1.0)
    assert repeat_shares() == pytest.approx([1 / 30, 4 / 30, 9 / 30, 16 / 30])
    assert max(map(len, seen.values())) > 1  # a repeat, at its own (larger) share
