"""Runs extended until decided, on a synthetic server in virtual time, with known truth.

Each episode is a steady stretch then a burst whose queue builds through the phase, and
how bad a burst gets varies from one episode to the next (a shared severity): the
requests of one burst are strongly correlated, episodes are independent. The truth (the
request-weighted p95 of the burst's TTFT) is computed by a large Monte Carlo. With the
limit at the truth every PASS or FAIL is wrong: over seeded replicates of the whole
looping run (rounds, looks, alpha spending, final verdict) each side stays within 2%.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pytest_latency.analysis.objectives import decide_objectives
from pytest_latency.analysis.verdict import Verdict, objective_confidence
from pytest_latency.plugin.rounds import Measured, Rounds, placed, round_plan, with_budget
from pytest_latency.records import RequestRecord, Status
from pytest_latency.spec.model import Phase, SpecError, Workload, objective
from pytest_latency.workload import Plan

WORKLOAD = Workload(
    phases=(
        Phase("steady", rate=20, duration_s=2, arrival="constant"),
        Phase("burst", rate=100, duration_s=1),
    ),
    input_tokens=(10, 10),
    output_tokens=4,
    until_decided_s=80.0,  # room for 18 episodes in 8 looks
)
SEVERITY_SD = 0.3  # log-sd of a burst's severity, shared by its requests
NOISE_SD = 0.2  # each request's own log-noise


def _ttft(rng: np.random.Generator, severity: np.ndarray, position: np.ndarray) -> np.ndarray:
    """A burst request's TTFT: the queue grows through the burst, scaled by its severity."""
    noise = np.exp(rng.normal(0.0, NOISE_SD, position.size))
    return severity * (0.05 + 0.3 * position) * noise


def _true_p95() -> float:
    rng = np.random.default_rng(12345)
    count = 2_000_000
    severity = np.exp(rng.normal(0.0, SEVERITY_SD, count))
    return float(np.quantile(_ttft(rng, severity, rng.uniform(0.0, 1.0, count)), 0.95))


TRUE_P95 = _true_p95()


class SyntheticServer:
    """drive(plan) -> records in no time: steady requests fast, bursts as above."""

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.rounds = 0

    def drive(self, plan: Plan) -> Measured:
        self.rounds += 1
        records = []
        windows = {e: plan.workload.phase_windows("burst")[i] for i, e in enumerate(
            sorted({r.episode for r in plan.requests}))}  # fmt: skip
        severity = {e: float(np.exp(self.rng.normal(0.0, SEVERITY_SD))) for e in windows}
        for request in plan.requests:
            if request.phase == "burst":
                start, end = windows[request.episode]
                position = np.array([(request.intended_s - start) / (end - start)])
                wait = float(_ttft(self.rng, np.array([severity[request.episode]]), position)[0])
            else:
                wait = 0.01
            records.append(
                RequestRecord(
                    id=request.id, phase=request.phase, intended_s=request.intended_s,
                    input_tokens=request.input_tokens, sent_s=request.intended_s,
                    first_token_s=request.intended_s + wait, end_s=request.intended_s + wait + 0.01,
                    status=Status.OK, output_tokens=4, episode=request.episode,
                )
            )  # fmt: skip
        return Measured(plan.workload, records, 0.0, 0.0)


def _until_decided(limit_s: float, seed: int, max_s: float = 80.0) -> tuple[Verdict, Measured]:
    goal = objective("ttft", p=95, max_s=limit_s, phase="burst")
    workload = dataclasses.replace(WORKLOAD, seed=seed, until_decided_s=max_s)
    server = SyntheticServer(seed)
    confidence = objective_confidence(1)
    rounds = Rounds(
        server.drive, workload, [goal], confidence=confidence, max_lag_s=1.0, pause=lambda s: None
    )
    measured = rounds.run()
    assert measured.until_decided is not None
    final = measured.until_decided.final_confidence(confidence)
    [result] = decide_objectives(
        [goal], measured.records, confidence=final, workload=measured.workload
    )
    return result.verdict, measured


def test_a_round_continues_the_episodes_and_ids_with_arrivals_of_its_own():
    from pytest_latency.analysis.looks import extended
    from pytest_latency.workload import build_plan

    first = build_plan(WORKLOAD)
    plan, offset = round_plan(WORKLOAD, 1, 2, first_id=len(first.requests))
    assert offset == pytest.approx(extended(WORKLOAD, 3).episode_start_s(1))
    ids = [r.id for r in plan.requests]
    assert ids == list(range(len(first.requests), len(first.requests) + len(ids)))
    assert sorted({r.episode for r in plan.requests}) == [1, 2]
    # Placed on the run's timeline, episode 2's burst falls in its window there.
    bursts = [r.intended_s + offset for r in plan.requests if r.episode == 2 and r.phase == "burst"]
    start, end = extended(WORKLOAD, 3).phase_windows("burst")[2]
    assert bursts and all(start <= t < end for t in bursts)
    own = [r.intended_s for r in first.requests if r.phase == "burst"]
    again = [r.intended_s - plan.workload.episode_start_s(0) for r in plan.requests
             if r.episode == 1 and r.phase == "burst"]  # fmt: skip
    assert own != again  # a fresh draw of the arrivals, not the first episode's again
    record = RequestRecord(id=0, phase="burst", intended_s=1.0, input_tokens=1, end_s=2.0)
    assert placed([record], 10.0)[0].end_s == 12.0


def test_a_run_stops_at_the_first_look_that_decides_and_records_every_look():
    verdict, measured = _until_decided(limit_s=3.0 * TRUE_P95, seed=1)
    log = measured.until_decided
    assert verdict is Verdict.PASS
    assert log is not None and log.stopped == "every objective decided"
    assert 1 < len(log.looks) < len(log.schedule.rounds)  # one burst is never enough
    assert log.looks[-1].undecided == () and log.looks[0].undecided
    ids = [record.id for record in measured.records]
    assert sorted(ids) == list(range(len(ids)))  # one record per offered request
    assert log.looks[-1].requests == len(measured.records)
    assert measured.workload.repeat == log.looks[-1].episodes


def test_until_decided_needs_objectives_and_takes_the_flag_as_default():
    with pytest.raises(SpecError, match="until_decided runs until its objectives"):
        with_budget(WORKLOAD, [], None)
    plain = dataclasses.replace(WORKLOAD, until_decided_s=None)
    goal = objective("ttft", p=95, max="1s")
    assert with_budget(plain, [goal], 90.0).until_decided_s == 90.0
    assert with_budget(plain, [], 90.0).until_decided_s is None  # nothing to wait for
    assert with_budget(WORKLOAD, [goal], 90.0).until_decided_s == 80.0  # its own wins


@pytest.mark.slow
def test_at_the_truth_wrong_verdicts_stay_within_two_percent_and_clear_cases_decide():
    replicates = 200
    at_truth = [_until_decided(TRUE_P95, seed)[0] for seed in range(replicates)]
    wrong_pass = at_truth.count(Verdict.PASS) / replicates
    wrong_fail = at_truth.count(Verdict.FAIL) / replicates
    assert wrong_pass <= 0.02 and wrong_fail <= 0.02, (wrong_pass, wrong_fail)
    # Far from the limit the looks decide, correctly, within a budget that holds enough
    # of these (very unlike) bursts: 45 episodes at most.
    far = 30
    passes = [_until_decided(2.0 * TRUE_P95, 1000 + seed, max_s=200)[0] for seed in range(far)]
    fails = [_until_decided(0.5 * TRUE_P95, 2000 + seed, max_s=200)[0] for seed in range(far)]
    assert passes.count(Verdict.PASS) >= 0.9 * far and Verdict.FAIL not in passes
    assert fails.count(Verdict.FAIL) >= 0.9 * far and Verdict.PASS not in fails
