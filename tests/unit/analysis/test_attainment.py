"""SLO attainment and goodput: spec forms, the known-truth verdict rates, and no gain by dropping.

The simulation draws replicate runs whose true attainment is known (misses independent,
or in correlated runs as one outage takes many requests in a row) and decides each with
the plugin's own path; at the truth a FAIL is a false fail and a PASS a false pass.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_latency.analysis.attainment import attainment, decide_attainment, phase_goodput
from pytest_latency.analysis.objectives import decide_objectives
from pytest_latency.analysis.verdict import Verdict
from pytest_latency.records import RequestRecord, Status
from pytest_latency.spec.model import SpecError, objective
from pytest_latency.spec.slo_yaml import SpecFileError, load_slo_file

CONFIDENCE = 0.99
REPS = 200  # binomial sd of a 2% rate: 1 point


def _record(index: int, *, ttft: float = 0.2, status: Status = Status.OK) -> RequestRecord:
    """A request sent at ``index * 0.1`` s; 20 tokens at 10 ms apart after its first token."""
    record = RequestRecord(index, "steady", index * 0.1, 100, max_tokens=20)
    record.sent_s = record.intended_s
    record.status = status
    if status is Status.OK:
        record.first_token_s = record.intended_s + ttft
        record.end_s = record.first_token_s + 0.19
        record.output_tokens = 20
        record.itl_s = [0.01] * 19
    return record


def _run(misses: np.ndarray) -> list[RequestRecord]:
    """Hits are fast; misses alternate between slow (2 s TTFT) and timed out."""
    return [
        _record(i, ttft=2.0, status=Status.TIMEOUT if i % 2 else Status.OK) if miss else _record(i)
        for i, miss in enumerate(misses)
    ]


def clustered_misses(rng: np.random.Generator, n: int, rate: float, mean_run: float) -> np.ndarray:
    """0/1 misses in runs of geometric length (mean ``mean_run``), long-run rate ``rate``."""
    start = rate / (mean_run * (1.0 - rate) + rate)
    down = bool(rng.random() < rate)
    series = np.zeros(n, dtype=bool)
    for index, draw in enumerate(rng.random(n)):
        series[index] = down
        down = draw >= 1.0 / mean_run if down else draw < start
    return series


def verdict_rates(
    seed: int, n: int, miss_rate: float, least: float, mean_run: float
) -> tuple[float, float]:
    """(FAIL share, PASS share) over REPS seeded replicates."""
    rng = np.random.default_rng(seed)
    goal = objective("attainment", ttft="700ms", min=f"{least:.2%}")
    verdicts = []
    for _ in range(REPS):
        if mean_run <= 1.0:
            misses = rng.random(n) < miss_rate
        else:
            misses = clustered_misses(rng, n, miss_rate, mean_run)
        verdicts.append(decide_attainment(goal, _run(misses), CONFIDENCE).verdict)
    return verdicts.count(Verdict.FAIL) / REPS, verdicts.count(Verdict.PASS) / REPS


# --- spec forms ---------------------------------------------------------------------------


def test_python_form_takes_units_and_aliases() -> None:
    goal = objective("attainment", ttft="700ms", e2el="10s", inter_token_latency_ms=50, min="95%")
    assert goal.thresholds == (("e2e", 10.0), ("tpot", 0.05), ("ttft", 0.7))
    assert goal.min_value == pytest.approx(0.95)
    assert goal.label == "attainment(e2e<=10000ms, tpot<=50ms, ttft<=700ms) >= 95.0%"


@pytest.mark.parametrize(
    ("keywords", "message"),
    [
        ({"ttft": "700", "min": "95%"}, "needs a unit"),
        ({"ttft": "700ms", "min": "0.95"}, "needs a unit"),
        ({"min": "95%"}, "at least one threshold"),
        ({"ttft": "1s", "time_to_first_token": "2s", "min": "95%"}, "given twice"),
        ({"speed": "1s", "min": "95%"}, "unknown threshold 'speed'"),
        ({"ttft": "1s"}, "attainment min"),
    ],
)
def test_python_form_refuses_bad_input(keywords: dict[str, str], message: str) -> None:
    with pytest.raises(SpecError, match=message):
        objective("attainment", **keywords)


def test_gate_keywords_on_other_metrics_are_refused() -> None:
    with pytest.raises(SpecError, match="unexpected min"):
        objective("ttft", p=95, max="1s", min="95%")


def test_yaml_form(tmp_path: Path) -> None:
    path = tmp_path / "gate.slo.yaml"
    path.write_text(
        "workload:\n  phases:\n    - {name: steady, rate: 5, duration: 10s}\n"
        "objectives:\n"
        "  - {metric: attainment, time_to_first_token: 700ms, request_latency: 10s, min: 95%}\n"
    )
    (goal,) = load_slo_file(path).objectives
    assert goal.thresholds == (("e2e", 10.0), ("ttft", 0.7))
    path.write_text(path.read_text().replace("700ms", "700"))
    with pytest.raises(SpecFileError, match=r":5: objectives\[0\]\.time_to_first_token: .*unit"):
        load_slo_file(path)


# --- verdicts against known truth ----------------------------------------------------------


@pytest.mark.slow
@pytest.mark.parametrize(
    ("n", "mean_run"), [(1000, 1.0), (2000, 5.0)], ids=["independent", "correlated"]
)
def test_no_false_verdicts_at_the_truth(n: int, mean_run: float) -> None:
    """True attainment exactly at the minimum: each false verdict near the 0.5% design.

    Correlated: misses come in outages of 5 requests on average (about 20 outages per
    run). With only a handful of outages per run no bound can know the rate (a run that
    saw none looks perfect); docs/statistics.md says to repeat the episode then.
    """
    fails, passes = verdict_rates(11, n, 0.05, 0.95, mean_run)
    assert fails <= 0.04, f"false fails {fails:.1%}"
    assert passes <= 0.04, f"false passes {passes:.1%}"


def test_correlated_misses_would_false_fail_without_the_design_effect() -> None:
    """Why the correlation-aware bound matters: the naive iid bound false-fails clustered misses."""
    from pytest_latency.analysis.verdict import clopper_pearson

    rng = np.random.default_rng(5)
    naive_fails = 0
    for _ in range(100):
        misses = clustered_misses(rng, 1000, 0.05, 20.0)
        good = int((~misses).sum())
        naive_fails += clopper_pearson(good, 1000, CONFIDENCE)[1] < 0.95
    assert naive_fails / 100 > 0.1  # the test above would catch this if the bound were naive


@pytest.mark.slow
@pytest.mark.parametrize(
    ("n", "miss_rate", "mean_run", "expect", "power"),
    [
        (1000, 0.01, 1.0, Verdict.PASS, 0.9),
        (1000, 0.12, 1.0, Verdict.FAIL, 0.9),
        # Outages cost evidence: 2000 requests in runs of 5 hold far fewer independent ones.
        (2000, 0.12, 5.0, Verdict.FAIL, 0.7),
    ],
)
def test_clear_cases_are_decided(
    n: int, miss_rate: float, mean_run: float, expect: Verdict, power: float
) -> None:
    fails, passes = verdict_rates(3, n, miss_rate, 0.95, mean_run)
    assert (passes if expect is Verdict.PASS else fails) >= power
    assert (fails if expect is Verdict.PASS else passes) == 0.0


# --- a run with no misses still pays for its queue -------------------------------------------


def mm1_ttfts(seed: int, reps: int, n: int, utilisation: float) -> np.ndarray:
    """TTFT-like sojourn times of n consecutive customers of a stationary M/M/1 queue
    (service rate 1, Lindley's recursion in closed form: W = S - running min of S)."""
    rng = np.random.default_rng(seed)
    warm = 2000
    steps = rng.exponential(1.0, (reps, n + warm))
    arrivals = rng.exponential(1.0 / utilisation, (reps, n + warm))
    drift = np.concatenate([np.zeros((reps, 1)), steps[:, :-1] - arrivals[:, 1:]], axis=1)
    walk = np.cumsum(drift, axis=1)
    waits = walk - np.minimum.accumulate(np.minimum(walk, 0.0), axis=1)
    return (waits + steps)[:, warm:]


def queue_rates(
    seed: int, reps: int, n: int, utilisation: float, limit_over_truth: float
) -> tuple[float, float]:
    """(FAIL share, PASS share): TTFT from an M/M/1 queue, ``ttft <= limit``, ``min: 95%``.

    With the limit at the true p95 the true attainment is exactly 95%: every verdict is
    wrong. Misses are rare and clustered, and in many runs there are none at all.
    """
    truth = -math.log(0.05) / (1.0 - utilisation)  # true p95 of the sojourn
    scale = 0.05  # seconds per unit of service
    goal = objective(
        "attainment", ttft=f"{truth * scale * limit_over_truth * 1000:.6f}ms", min="95%"
    )
    verdicts = [
        decide_attainment(goal, [_record(i, ttft=v * scale) for i, v in enumerate(row)], CONFIDENCE)
        for row in mm1_ttfts(seed, reps, n, utilisation)
    ]
    return (
        sum(v.verdict is Verdict.FAIL for v in verdicts) / reps,
        sum(v.verdict is Verdict.PASS for v in verdicts) / reps,
    )


@pytest.mark.slow
@pytest.mark.parametrize(("utilisation", "n"), [(0.9, 1000), (0.7, 300)])
def test_queued_latencies_carry_their_correlation_into_attainment(
    utilisation: float, n: int
) -> None:
    """Issue 22: the 0/1 miss series alone passed 57-67% (0.9) and 32% (0.7) of such runs."""
    fails, passes = queue_rates(21, REPS, n, utilisation, 1.0)
    assert fails <= 0.02, f"wrong fails {fails:.1%}"
    assert passes <= 0.02, f"wrong passes {passes:.1%}"


@pytest.mark.slow
def test_independent_latencies_keep_their_power() -> None:
    """Lognormal TTFT (sigma 0.5), n = 1000, the limit at 1.4x the true p95 (99% good)."""
    from scipy.stats import norm

    truth = math.exp(0.5 * float(norm.ppf(0.95)))
    goal = objective("attainment", ttft=f"{truth * 1.4 * 100:.6f}ms", min="95%")
    rng = np.random.default_rng(22)
    verdicts = [
        decide_attainment(
            goal,
            [_record(i, ttft=v / 10) for i, v in enumerate(rng.lognormal(0, 0.5, 1000))],
            CONFIDENCE,
        ).verdict
        for _ in range(REPS)
    ]
    assert verdicts.count(Verdict.PASS) / REPS >= 0.85
    assert Verdict.FAIL not in verdicts


# --- dropping never helps -------------------------------------------------------------------

_DROPPED = (Status.CANCELLED, Status.CONNECTION_ERROR, Status.PROTOCOL_ERROR, Status.REJECTED)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(
    ttfts=st.lists(st.floats(0.01, 3.0), min_size=1, max_size=60),
    drops=st.lists(st.tuples(st.integers(0, 59), st.sampled_from(_DROPPED)), max_size=30),
)
def test_dropping_requests_never_raises_attainment(
    ttfts: list[float], drops: list[tuple[int, Status]]
) -> None:
    thresholds = (("ttft", 0.7), ("e2e", 1.0))
    complete = [_record(i, ttft=ttft) for i, ttft in enumerate(ttfts)]
    dropped = [_record(i, ttft=ttft) for i, ttft in enumerate(ttfts)]
    for index, status in drops:
        if index < len(dropped):
            dropped[index] = _record(index, status=status)  # dropped midway: nothing came back
    assert attainment(dropped, thresholds) <= attainment(complete, thresholds)
    goal = objective("attainment", ttft="700ms", e2e="1s", min="50%")
    before = decide_objectives([goal], complete, confidence=CONFIDENCE)[0]
    after = decide_objectives([goal], dropped, confidence=CONFIDENCE)[0]
    assert after.estimate_s <= before.estimate_s and after.n == before.n
    assert (
        phase_goodput(dropped, [goal], 10.0)[0].good
        <= phase_goodput(complete, [goal], 10.0)[0].good
    )


def test_goodput_counts_good_requests_and_their_tokens() -> None:
    records = [_record(0), _record(1, ttft=2.0), _record(2, status=Status.TIMEOUT), _record(3)]
    goal = objective("attainment", ttft="700ms", min="50%")
    (row,) = phase_goodput(records, [goal], 2.0)
    assert (row.offered, row.good) == (4, 2)
    assert row.good_rps == pytest.approx(1.0)
    assert row.good_output_tokens_per_s == pytest.approx(20.0)
    result = decide_objectives([goal], records, confidence=0.95)[0]
    assert result.estimate_s == pytest.approx(0.5) and result.n == 4
    assert 0.0 <= result.lower_s <= 0.5 <= result.upper_s <= 1.0
    assert not math.isnan(result.lower_s)


if __name__ == "__main__":
    import sys

    replicates = int(sys.argv[1]) if len(sys.argv) > 1 else 1000
    for utilisation, n in ((0.9, 1000), (0.7, 300), (0.7, 2000)):
        fails, passes = queue_rates(21, replicates, n, utilisation, 1.0)
        print(f"M/M/1 {utilisation} n={n}, ttft <= true p95, min 95%: {fails:.1%} / {passes:.1%}")
    passes = queue_rates(23, replicates, 2000, 0.7, 2.0)[1]
    print(f"same at 0.7, n=2000, limit 2x: pass {passes:.1%}")
    fails = queue_rates(24, replicates, 2000, 0.7, 0.5)[0]
    print(f"same at 0.7, n=2000, limit 0.5x: fail {fails:.1%}")
