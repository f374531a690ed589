"""``--latency-percentiles``: the summary, JSON and HTML show the chosen percentiles, and
every objective's own percentile in its phase's row."""

from __future__ import annotations

import dataclasses

import pytest

from pytest_latency.plugin.option_values import percentile_list
from pytest_latency.report.html import render_html, report_runs
from pytest_latency.report.json_report import run_dict
from pytest_latency.report.terminal import format_run
from pytest_latency.spec.model import Phase, objective
from tests.helpers.html_runs import make_result
from tests.helpers.known_runs import scaled_records

PHASES = (Phase("steady", rate=10, duration_s=10), Phase("burst", rate=10, duration_s=2))


def _run(chosen: tuple[float, ...]):
    result = make_result(scaled_records(1.0), PHASES)
    return dataclasses.replace(result, summary_percentiles=chosen)


def test_the_flag_reads_a_rising_list_and_refuses_fractions():
    assert percentile_list("99.9, 50,90,99") == (50.0, 90.0, 99.0, 99.9)
    for bad in ("0.5,0.9", "50,100", "", "p50"):
        with pytest.raises(ValueError, match="between 1 and 100"):
            percentile_list(bad)


def test_chosen_percentiles_are_in_the_summary_json_and_html():
    run = _run((50.0, 90.0, 99.0, 99.9))
    lines = format_run(run, width=300)
    assert any("ttft p50/p90/p99/p99.9" in line for line in lines)
    steady = run.summaries()[0]
    # TTFTs 10..1000 ms in steps of 10 ms: p90 is 901 ms (linear interpolation).
    assert steady.percentiles["ttft"][90.0] == pytest.approx(0.901)
    phases = run_dict(run)["phases"]
    assert set(phases[0]["percentiles_s"]["ttft"]) == {"p50", "p90", "p99", "p99.9"}
    assert "TTFT p50/p90/p99/p99.9" in render_html(report_runs([run]))


def test_an_objectives_own_percentile_is_shown_beside_the_chosen_ones():
    run = _run((50.0, 95.0, 99.0))
    run.evaluate([objective("ttft", p=97.5, max="2s", phase="steady")])
    assert run.shown_percentiles == (50.0, 95.0, 97.5, 99.0)
    lines = format_run(run, width=80)  # the compact layout: a column per percentile
    header = next(line for line in lines if line.split()[:2] == ["phase", "metric"])
    assert header.split()[2:] == ["p50", "p95", "p97.5", "p99"]
    assert run.summaries()[0].percentiles["ttft"][97.5] == pytest.approx(0.97525)
