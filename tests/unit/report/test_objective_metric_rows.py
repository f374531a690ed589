"""An objective on a metric beyond TTFT, ITL and e2e (``tpot``) gets that metric's row in
the summary, with the objective's own percentile, as verdicts count it."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_latency._units import format_seconds
from pytest_latency.report.json_report import run_dict
from pytest_latency.report.terminal import format_run
from pytest_latency.spec.model import Phase, objective
from tests.helpers.html_runs import make_result
from tests.helpers.known_runs import scaled_records

PHASES = (Phase("steady", rate=10, duration_s=10), Phase("burst", rate=10, duration_s=2))


def _run():
    result = make_result(scaled_records(1.0), PHASES)
    run = dataclasses.replace(result, summary_percentiles=(50.0, 95.0, 99.0))
    run.evaluate(
        [objective("tpot", p=90, max="2s", phase="steady"), objective("ttft", p=95, max="5s")]
    )
    return run


def test_a_tpot_objective_gets_a_tpot_row_with_its_own_percentile() -> None:
    run = _run()
    steady = run.summaries()[0]
    assert list(steady.percentiles) == ["ttft", "itl", "e2e", "tpot"]
    estimate = run.percentile("tpot", 90, phase="steady")
    assert estimate > 0
    assert steady.percentiles["tpot"][90.0] == pytest.approx(estimate)
    lines = format_run(run, width=80)  # compact: one row per phase and metric
    header = next(line for line in lines if line.split()[:2] == ["phase", "metric"])
    assert header.split()[2:] == ["p50", "p90", "p95", "p99"]
    row = next(line for line in lines if line.split()[:1] == ["tpot"])
    assert row.split()[2] == format_seconds(estimate)
    wide = format_run(run, width=400)
    assert any("tpot p50/p90/p95/p99" in line for line in wide)
    phases = run_dict(run)["phases"]
    assert phases[0]["percentiles_s"]["tpot"]["p90"] == pytest.approx(estimate)


def test_without_such_an_objective_the_rows_are_ttft_itl_e2e() -> None:
    run = dataclasses.replace(make_result(scaled_records(1.0), PHASES))
    run.evaluate([objective("ttft", p=95, max="5s")])
    assert list(run.summaries()[0].percentiles) == ["ttft", "itl", "e2e"]
