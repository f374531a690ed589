"""Error-rate verdicts against known truth (docs/statistics.md, "Error rates").

Failures count as independent unless the run shows them clustered; an outage the run
did not see is allowed for only when the objective states one (``outage:``). Each row
of the docs' table is a test here: CI-size power against the exact binomial test,
wrong verdicts at the truth (the limit equals the true rate), clustered failures the run
sees, and stated outages at high rates. Seeded; ``benchmarks/sim_error_rates.py`` prints
every row with more replicates.
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import binom

from pytest_latency.analysis.outages import clopper_pearson, outage_bounds
from pytest_latency.analysis.verdict import Verdict, decide
from pytest_latency.records import RequestRecord, Status
from pytest_latency.spec.model import objective
from tests.helpers.failure_series import (
    independent_failures,
    long_outages,
    outage_series,
    verdict_shares,
)

CONFIDENCE = 0.99
N = 240  # a CI-size run: 4/s for a minute


def exact_binomial_shares(n: int, rate: float, limit: float) -> tuple[float, float]:
    """(FAIL, PASS) shares of the exact binomial (Clopper-Pearson) rule, by enumeration."""
    fail = passes = 0.0
    for failed in range(n + 1):
        lower, upper = clopper_pearson(failed, n, CONFIDENCE)
        chance = float(binom.pmf(failed, n, rate))
        fail += chance * (lower > limit)
        passes += chance * (upper <= limit)
    return fail, passes


def test_no_failure_in_240_passes_a_5_percent_limit():
    bounds = outage_bounds(np.zeros(N, dtype=bool), CONFIDENCE)
    assert bounds.method == "binomial" and bounds.upper < 0.022 < 0.05


def test_independent_failures_at_1_percent_pass_5_percent_as_often_as_the_exact_test():
    _, exact = exact_binomial_shares(N, 0.01, 0.05)
    assert exact == pytest.approx(0.78, abs=0.01)
    _, passes = verdict_shares(independent_failures(1, 400, N, 0.01), 0.05, CONFIDENCE)
    assert passes >= 0.70 and passes >= exact - 0.05


@pytest.mark.slow
@pytest.mark.parametrize(("rate", "goal"), [(0.10, 0.60), (0.15, 0.95)])
def test_independent_failures_over_5_percent_fail_as_often_as_the_exact_test(rate, goal):
    exact, _ = exact_binomial_shares(N, rate, 0.05)
    fails, passes = verdict_shares(independent_failures(2, 1000, N, rate), 0.05, CONFIDENCE)
    assert fails >= goal and fails >= exact - 0.05 and passes == 0.0


@pytest.mark.slow
@pytest.mark.parametrize(("rate", "n", "seed"), [(0.05, N, 4), (0.01, 2000, 5)])
def test_independent_failures_at_the_limit_err_rarely(rate, n, seed):
    fails, passes = verdict_shares(independent_failures(seed, 1000, n, rate), rate, CONFIDENCE)
    assert fails <= 0.02 and passes <= 0.02


@pytest.mark.slow
def test_outages_of_20_the_run_sees_are_counted_as_outages_at_the_limit():
    # 5% in memoryless outages of ~20 over 2,000 requests: five outages expected; the
    # runs test sees the clustering and each outage counts as one event.
    series = outage_series(6, 1000, 2000, 0.05, 20.0)
    fails, passes = verdict_shares(series, 0.05, CONFIDENCE)
    assert fails <= 0.02 and passes <= 0.02
    # Read as independent, the same runs would pass wrongly far more often.
    naive = np.mean([clopper_pearson(row.sum(), row.size, CONFIDENCE)[1] <= 0.05 for row in series])
    assert naive >= 0.15


@pytest.mark.slow
def test_many_short_outages_at_the_limit_err_rarely():
    fails, passes = verdict_shares(outage_series(8, 500, 10_000, 0.01, 5.0), 0.01, CONFIDENCE)
    assert fails <= 0.02 and passes <= 0.02


@pytest.mark.slow
def test_stated_outages_cover_outages_of_100_to_300_requests_at_the_limit():
    # A 1-3 s blip at 100 req/s: 100-300 requests, about 1.5 outages per 30,000-request
    # run. With outage: 3s (300 requests) stated, wrong verdicts stay rare; the old
    # request-counted assumption (20 requests) passed wrongly about a quarter of the time.
    series = long_outages(11, 300, 30_000, 0.01, 100, 300)
    fails, passes = verdict_shares(series, 0.01, CONFIDENCE, outage=300.0)
    assert fails <= 0.02 and passes <= 0.02
    _, old_passes = verdict_shares(series, 0.01, CONFIDENCE, outage=20.0)
    assert old_passes >= 0.15


@pytest.mark.slow
def test_a_stated_outage_twice_the_mean_covers_memoryless_outages_a_run_may_not_see():
    # 1% in outages of ~20 over 2,000 requests: one outage expected, none seen a third
    # of the time. Stated as 40 requests (2 s at 20 req/s), no wrong PASS.
    series = outage_series(10, 1000, 2000, 0.01, 20.0)
    fails, passes = verdict_shares(series, 0.01, CONFIDENCE, outage=40.0)
    assert fails <= 0.02 and passes <= 0.02


@pytest.mark.slow
def test_short_outages_a_ci_run_barely_sees_are_covered_once_stated():
    # 5% in outages of ~5 over 240 requests: 2.4 outages expected, none in 9% of runs,
    # and a run that saw two lone failures cannot tell. Nothing stated, those runs pass
    # (the price of counting failures as independent unless shown otherwise); with the
    # outage stated (10 requests, twice the mean), they do not.
    series = outage_series(31, 1000, N, 0.05, 5.0)
    _, unstated = verdict_shares(series, 0.05, CONFIDENCE)
    fails, passes = verdict_shares(series, 0.05, CONFIDENCE, outage=10.0)
    assert unstated >= 0.05 and fails <= 0.02 and passes <= 0.02


def test_clustered_failures_far_over_the_limit_fail():
    # 40% of requests fail in runs of ~3 (an overloaded server timing out in streaks).
    fails, _ = verdict_shares(outage_series(12, 200, N, 0.40, 3.0), 0.05, CONFIDENCE)
    assert fails >= 0.95


def _records_at(rate_per_s: float, failed: np.ndarray) -> list[RequestRecord]:
    records = []
    for index, down in enumerate(failed):
        record = RequestRecord(
            id=index, phase="steady", intended_s=index / rate_per_s, input_tokens=10
        )
        record.status = Status.CONNECTION_ERROR if down else Status.OK
        if not down:
            record.sent_s = record.intended_s
            record.first_token_s, record.end_s = record.intended_s + 0.01, record.intended_s + 0.1
        records.append(record)
    return records


def test_a_stated_outage_is_time_scaled_by_the_scopes_rate():
    # The same 2 s outage is 8 requests at 4/s and 400 at 200/s, and the reason says so.
    slow = decide(
        objective("error_rate", max="5%", outage="2s"), _records_at(4, np.zeros(240)), 0.99
    )
    fast = decide(
        objective("error_rate", max="5%", outage="2s"), _records_at(200, np.zeros(12_000)), 0.99
    )
    assert "2s (8 requests" in slow.reason and "2s (400 requests" in fast.reason
    assert slow.verdict is Verdict.INCONCLUSIVE and "pass needs 848+ requests" in slow.reason
    assert fast.verdict is Verdict.INCONCLUSIVE and "pass needs 42387+ requests" in fast.reason


def test_a_stated_outage_counts_a_longer_run_of_failures_as_several():
    flags = np.zeros(2000, dtype=bool)
    flags[1000:1100] = True  # 100 in a row at 20/s: 5 s
    result = decide(objective("error_rate", max="1%", outage="1s"), _records_at(20, flags), 0.99)
    assert result.verdict is Verdict.FAIL
    assert "1 outage(s)" in result.reason and "counted as 5 of at most 20 requests" in result.reason


def test_a_server_that_went_away_fails_with_its_own_rate_whatever_the_outage():
    flags = np.r_[np.zeros(100, dtype=bool), np.ones(140, dtype=bool)]
    for stated in (None, "2s", "1h"):
        result = decide(
            objective("error_rate", max="5%", outage=stated), _records_at(4, flags), 0.99
        )
        assert result.verdict is Verdict.FAIL and result.lower_s > 0.05
        assert "the last 140 requests all failed" in result.reason


def test_the_json_objective_carries_a_stated_outage_and_matches_the_schema():
    from jsonschema import Draft202012Validator

    from pytest_latency.report.html.model import objective_of
    from pytest_latency.report.json_report import objective_dict
    from tests.helpers.json_schema import validator

    schema = validator().schema
    check = Draft202012Validator({**schema["$defs"]["objective"], "$defs": schema["$defs"]})
    stated = objective("error_rate", max="5%", outage="2s")
    plain = objective("error_rate", max="5%")
    for goal, expected in ((stated, 2.0), (plain, None)):
        row = objective_dict(decide(goal, _records_at(4, np.zeros(240)), 0.99))
        assert row.get("outage_s") == expected and not list(check.iter_errors(row))
        assert objective_of(row) == goal


def test_the_runs_test_is_the_exact_chance_of_so_few_runs_of_failures():
    import itertools

    from pytest_latency.analysis.outages import clustering_p_value, failure_runs

    n, k = 12, 5
    counts: dict[int, int] = {}
    for places in itertools.combinations(range(n), k):
        flags = np.zeros(n, dtype=bool)
        flags[list(places)] = True
        runs = len(failure_runs(flags))
        counts[runs] = counts.get(runs, 0) + 1
    total, seen = sum(counts.values()), 0
    for runs in sorted(counts):
        seen += counts[runs]
        assert clustering_p_value(n, k, runs) == pytest.approx(seen / total)
    assert clustering_p_value(240, 1, 1) == 1.0 and clustering_p_value(20, 20, 1) == 1.0


def test_the_advice_for_a_run_without_failure_is_the_count_the_reason_names():
    # A count of zero bounds the rate at about c / n: 848 requests is 3.5x 240, not the
    # 250x a 1 / sqrt(n) scaling of the bound's width would ask for.
    from pytest_latency.analysis.advice import what_would_decide
    from pytest_latency.spec.model import Workload, steady

    workload = Workload(phases=(steady(rate=4, duration_s=60),))
    stated = decide(
        objective("error_rate", max="5%", outage="2s"), _records_at(4, np.zeros(N)), 0.99
    )
    assert "a pass needs 848+ requests" in stated.reason
    assert "about 3.5x the evidence" in what_would_decide(stated, workload)
    plain = decide(objective("error_rate", max="1%"), _records_at(4, np.zeros(N)), 0.99)
    assert "a pass needs 528+ requests" in plain.reason
    assert "about 2.2x the evidence" in what_would_decide(plain, workload)
