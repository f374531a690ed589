"""Failed requests and invalid runs in the reports: listed once, named by the diagnosis,
and an invalid run never read as green (Markdown, HTML, failure text)."""

from __future__ import annotations

import re

from pytest_latency.analysis.verdict import Verdict
from pytest_latency.records import RequestRecord, Status
from pytest_latency.report.failure import failure_message
from pytest_latency.report.html import report_runs
from pytest_latency.report.html.page import render_page
from pytest_latency.report.markdown import render_markdown
from pytest_latency.spec.model import Phase, objective
from tests.helpers.html_runs import make_result
from tests.helpers.infrastructure_runs import answered, failed, server_dies_at

STEADY = (Phase("steady", rate=10, duration_s=40),)
LATENCY = (
    objective("ttft", p=95, max="2s"),
    objective("e2e", p=95, max="5s"),
    objective("itl", p=95, max="1s"),
    objective("error_rate", max="100%"),  # any error rate: this test is about the reports
)


def five_500s() -> list[RequestRecord]:
    """400 requests, five of them (#3, #83, ...) failed with HTTP 500, all in the top 5%."""
    return [
        failed(i, Status.HTTP_ERROR, "HTTP 500: boom") if i % 80 == 3 else answered(i)
        for i in range(400)
    ]


def test_failed_requests_are_listed_once_not_once_per_objective():
    result = make_result(five_500s(), STEADY, LATENCY)
    failing = [r for r in result.objective_results if r.verdict is not Verdict.PASS]
    text = failure_message(result, failing or result.objective_results, "not met", 200)
    for index in (3, 83, 163, 243, 323):
        assert len(re.findall(rf"#{index}\b", text)) == 1, text
    assert "5 of 400 requests failed (each counts as unbounded in every objective):" in text
    assert "http_error 5: HTTP 500: boom — #3, #83, #163, #243, #323; first:" in text


def test_the_diagnosis_names_the_errors_when_they_drive_the_verdicts():
    records = [
        failed(i, Status.HTTP_ERROR, "HTTP 500: boom") if i % 7 == 3 else answered(i)
        for i in range(400)
    ]
    (first, *_others) = make_result(records, STEADY).diagnosis()
    assert first.rule == "errors"
    assert first.hypothesis.startswith("Requests fail, not slow down: the server answered HTTP 500")
    assert first.evidence.startswith("57 of 400 requests failed (14.2%): http_error 57: HTTP 500")
    assert "by phase: steady 57/400" in first.evidence


def test_the_diagnosis_reads_429s_in_a_burst_as_admission_not_as_a_failing_server():
    steady = [answered(i) for i in range(100)]
    burst = [
        failed(i, Status.REJECTED, "HTTP 429", "burst") if i % 2 else answered(i, "burst")
        for i in range(100, 160)
    ]
    phases = (Phase("steady", rate=10, duration_s=10), Phase("burst", rate=10, duration_s=6))
    (first, *_others) = make_result(steady + burst, phases).diagnosis()
    assert first.rule == "errors" and first.hypothesis.startswith("Admission control turned")
    assert "(HTTP 429)" in first.hypothesis
    assert "by phase: steady 0/100, burst 30/60" in first.evidence


def test_markdown_shows_an_invalid_run_as_invalid_with_the_reason_first():
    dead = make_result(server_dies_at(60), (Phase("steady", rate=10, duration_s=15),), LATENCY)
    fine = make_result([answered(i) for i in range(400)], STEADY, LATENCY, test="t::ok")
    text = render_markdown(report_runs([dead, fine]))
    assert "2 run(s): 1 INVALID, 1 PASS; objectives: 4 invalid, 4 pass" in text
    section = text[text.index("### INVALID: tests/test\\_serving.py::test\\_chat") :]
    reason = section.index("**Invalid run: nothing was decided.** infrastructure: 90 of 150")
    assert reason < section.index("| verdict |")
    assert "No rule found a bottleneck" not in section[: section.index("### PASS")]


def test_an_invalid_run_with_passing_stored_verdicts_still_reads_invalid():
    # A stored run whose generator fell behind, with verdicts that claim a pass.
    result = make_result([answered(i) for i in range(400)], STEADY, LATENCY)
    (run,) = report_runs([result])
    document = {**run.document, "generator": {"valid": False, "reasons": ["lag p99 80ms"]}}
    invalid = type(run).build(document, run.records)
    text = render_markdown([invalid])
    assert "### INVALID:" in text and "1 run(s): 1 INVALID; objectives: 4 pass" in text
    assert "**Invalid run: nothing was decided.** lag p99 80ms" in text
    page = render_page([invalid])
    overview = page[page.index('<ul class="overview">') : page.index("</ul>")]
    assert '<span class="verdict v-invalid">INVALID</span>' in overview
    assert "lag p99 80ms" in overview and "4 pass" not in overview


def test_the_html_headline_names_the_infrastructure_reason():
    dead = make_result(server_dies_at(60), (Phase("steady", rate=10, duration_s=15),), LATENCY)
    page = render_page(report_runs([dead]))
    overview = page[page.index('<ul class="overview">') : page.index("</ul>")]
    assert '<span class="verdict v-invalid">INVALID</span>' in overview
    assert "infrastructure: 90 of 150 requests failed with connection refused" in overview
    assert "<strong>INVALID:</strong> this run decides nothing" in page


def test_a_percentile_on_failed_requests_reads_inf_not_unbounded():
    records = [
        failed(i, Status.HTTP_ERROR, "HTTP 500: boom") if i % 7 == 3 else answered(i)
        for i in range(400)
    ]
    result = make_result(records, STEADY, (objective("ttft", p=95, max="2s"),))
    (ttft,) = result.objective_results
    assert ttft.verdict is Verdict.FAIL  # 14% failed: the p95 is a failed request's
    text = failure_message(result, [ttft], "not met", 200)
    assert text.startswith("ttft p95 inf (failed requests) > 2s (bounds inf..inf)")
    markdown = render_markdown(report_runs([result]))
    assert "| **FAIL** | ttft p95 &lt;= 2s | inf | inf .. inf |" in markdown
