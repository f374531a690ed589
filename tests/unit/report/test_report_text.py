"""Report text at a width: wrapping, the failure's first line, tables that fit."""

from __future__ import annotations

import pytest

from pytest_latency.analysis.summary import PhaseSummary
from pytest_latency.analysis.verdict import ObjectiveResult, Verdict
from pytest_latency.report.evidence import format_estimate, headline
from pytest_latency.report.failure import first_line
from pytest_latency.report.tables import compact_tables, phase_tables, wide_table
from pytest_latency.report.wrapping import wrap, wrap_after
from pytest_latency.spec.model import objective

TRACE_URL = "http://127.0.0.1:16686/trace/0af7651916cd43dd8448eb211c80319c"


def test_wrap_keeps_a_hanging_indent_and_long_tokens_whole() -> None:
    text = "request #12 [steady] 1.20s, " + TRACE_URL + " and some more words after it"
    lines = wrap(text, 40, indent="  ")
    assert lines[0] == "  request #12 [steady] 1.20s,"
    assert lines[1] == "      " + TRACE_URL  # alone on its line, past 40: never broken
    assert all(len(line) <= 40 for line in lines if TRACE_URL not in line)
    assert all(line.startswith("      ") for line in lines[1:])


def test_wrap_keeps_line_breaks_of_the_text() -> None:
    lines = wrap("exited with code 137; last log lines:\n  | out of memory", 80, "  ")
    assert lines == ["  exited with code 137; last log lines:", "        | out of memory"]


def test_wrap_after_leaves_room_for_a_prefix_or_starts_on_the_next_line() -> None:
    text = "ttft p99 <= 2000ms [steady]: inconclusive, and the test passes"
    first, *rest = wrap_after(50, text, 80)
    assert 50 + len(first) <= 80 and first.startswith("ttft p99")
    assert " ".join([first, *rest]) == text
    assert wrap_after(70, text, 80)[0] == ""  # 10 columns left: text starts below


def _result(metric: str, verdict: Verdict, estimate: float, lower: float, upper: float, **kw):  # type: ignore[no-untyped-def]
    return ObjectiveResult(objective(metric, **kw), verdict, estimate, lower, upper, 100, 0.99, "")


@pytest.mark.parametrize(
    ("result", "expected"),
    [
        (
            _result("ttft", Verdict.FAIL, 0.812, 0.76, 0.88, p=95, max="700ms", phase="steady"),
            "ttft p95 [steady] 812.0ms > 700ms (bounds 760.0ms..880.0ms)",
        ),
        (
            _result("e2e", Verdict.INCONCLUSIVE, 9.5, 8.0, float("inf"), p=99, max="10s"),
            "e2e p99 9.50s, inconclusive against 10s (bounds 8.00s..inf)",
        ),
        (
            _result("error_rate", Verdict.FAIL, 0.12, 0.09, 0.15, max="5%"),
            "error_rate 12.00% failed > 5.00% (bounds 9.00%..15.00%)",
        ),
        (
            _result("ttft", Verdict.FAIL, 1.25, 1.15, 1.36, p=95, max_regression="10%"),
            "ttft p95 1.25x baseline > +10% (bounds 1.15..1.36)",
        ),
    ],
)
def test_headline_names_the_objective_first(result: ObjectiveResult, expected: str) -> None:
    assert headline(result) == expected


def _recovery(episodes: int, lower: float, upper: float) -> ObjectiveResult:
    goal = objective("recovery", max="2s", after="burst")
    return ObjectiveResult(goal, Verdict.PASS, 1.2, lower, upper, episodes, 0.99, "")


def test_recovery_evidence_is_the_median_episode_with_its_bounds_over_episodes() -> None:
    assert format_estimate(_recovery(8, 0.4, 1.8)) == (
        "median episode back after 1.20s (bounds 400.0ms..1.80s at 99.000% confidence, 8 episodes)"
    )
    # Under 8 episodes at 99% no bound exists: the time is descriptive, and says so.
    assert format_estimate(_recovery(1, 0.0, float("inf"))) == (
        "median episode back after 1.20s (1 episode, too few for bounds: descriptive)"
    )


def test_first_line_holds_what_fits_and_counts_the_rest() -> None:
    failed = [
        _result("ttft", Verdict.FAIL, 0.812, 0.76, 0.88, p=95, max="700ms", phase="steady"),
        _result("e2e", Verdict.FAIL, 12.0, 11.0, 13.0, p=95, max="10s"),
        _result("error_rate", Verdict.FAIL, 0.12, 0.09, 0.15, max="5%"),
    ]
    assert first_line(failed, 76) == (
        "ttft p95 [steady] 812.0ms > 700ms (bounds 760.0ms..880.0ms); +2 more"
    )
    both = first_line(failed, 120)
    assert both.startswith("ttft p95 [steady]") and both.endswith("; +1 more")
    assert len(both) <= 120 and "e2e p95 12.00s > 10s" in both
    assert first_line(failed, 500).count(";") == 2 and "more" not in first_line(failed, 500)


def _summary(name: str, seconds: float) -> PhaseSummary:
    values = {50.0: seconds, 95.0: seconds * 10, 99.0: seconds * 12}
    return PhaseSummary(
        name=name, offered=195, completed=195, failed=0, target_rate=5.0,
        offered_rate=4.88, schedule_lag_p99_s=0.0126, duration_s=40.0,
        percentiles={"ttft": values, "itl": values, "e2e": values},
    )  # fmt: skip


def test_compact_tables_fit_80_columns_and_the_wide_one_needs_room() -> None:
    summaries = [_summary("steady", 0.0764), _summary("burst", 0.2504)]
    wide = wide_table(summaries)
    assert max(len(line) for line in wide) > 100  # too wide for 80 or 100 columns
    compact = compact_tables(summaries)
    assert max(len(line) for line in compact) <= 80
    assert phase_tables(summaries, 80) == compact == phase_tables(summaries, 100)
    assert phase_tables(summaries, max(len(line) for line in wide)) == wide
    header, steady = compact[0].split(), compact[1].split()
    assert header[4:7] == ["target/s", "planned/s", "sent/s"]
    assert steady[4:7] == ["5.00", "4.88", "4.88"]  # 195 planned in 40 s: 4.88/s


def test_an_invalid_run_says_why_on_its_first_line() -> None:
    from types import SimpleNamespace

    from pytest_latency.report.failure import invalid_message

    run = SimpleNamespace(test="tests/test_checkout.py::test_checkout_under_a_burst_of_traffic")
    reasons = ["schedule lag p99 80.0ms exceeds 50.0ms", "burst: 20% of requests sent late"]
    lines = invalid_message(run, reasons, 80).splitlines()  # type: ignore[arg-type]
    assert lines[0] == "latency run invalid: schedule lag p99 80.0ms exceeds 50.0ms"
    assert lines[1] == "  burst: 20% of requests sent late"
    assert all(len(line) <= 76 for line in lines)  # pytest puts "E   " before each
