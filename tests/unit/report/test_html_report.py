"""The HTML report's renderer, without a browser: content, escaping, self-containment."""

from __future__ import annotations

import base64
import hashlib
import json
import re
from pathlib import Path

import pytest

from pytest_latency.cli.main import main
from pytest_latency.records import Status, read_runs
from pytest_latency.report.html import render_html, report_runs, write_html
from pytest_latency.report.html.model import ReportRun, thin, trace_link, waterfall_rows
from pytest_latency.report.html.page import json_for_script
from pytest_latency.report.html.waterfall import Segments, waterfall
from pytest_latency.report.json_report import write_json
from pytest_latency.spec.model import Phase, objective
from tests.helpers.html_runs import HOSTILE, lesson_record, make_result, simulated_records

PHASES = (Phase("steady", rate=5, duration_s=20), Phase("burst", rate=25, duration_s=5))
OBJECTIVES = (
    objective("ttft", p=95, max="700ms", phase="steady"),
    objective("e2e", p=50, max="10s"),
    objective("error_rate", max="5%"),
)


@pytest.fixture(scope="module")
def spike_html() -> str:
    result = make_result(simulated_records(PHASES), PHASES, OBJECTIVES)
    return render_html(report_runs([result]))


def _data(page: str) -> dict:
    found = re.search(r'<script type="application/json" id="latency-data">(.*?)</script>', page)
    assert found is not None
    return json.loads(found.group(1))


def _card(page: str, request_id: int) -> dict:
    data = _data(page)
    rows = [dict(zip(data["fields"], row, strict=True)) for row in data["rows"]]
    return next(row for row in rows if row["id"] == request_id)


def test_lesson_exercise_waterfall_shows_queue_and_unattributed_never_prefill():
    record = lesson_record()
    lanes = Segments.of(record)
    assert (lanes.sent, lanes.first, lanes.end, lanes.queue) == (0.0, 0.5, 2.0, 0.2)
    assert lanes.prefill is None
    assert lanes.unattributed == pytest.approx(0.3)  # 500 - 200 ms, not called prefill
    run = ReportRun.build({"test": "lesson"}, [record])
    from pytest_latency.report.html.model import Cards

    chart = waterfall(run, 0, Cards())
    widths = {
        cls: float(width)
        for width, cls in re.findall(r'width="([\d.]+)" height="8" class="(seg-\w+)"', chart)
    }
    assert set(widths) == {"seg-queue", "seg-unattr"}  # the server lane: no prefill bar
    # Drawn to scale: 300 ms unattributed is 1.5 times the 200 ms queue wait.
    assert widths["seg-unattr"] / widths["seg-queue"] == pytest.approx(1.5, rel=0.02)


def test_hover_card_carries_the_request_numbers_and_trace_link():
    result = make_result([lesson_record()], (Phase("steady", rate=1, duration_s=3),))
    page = render_html(report_runs([result]))
    card = _card(page, 0)
    assert card["ttft_s"] == 0.5 and card["queue_s"] == 0.2 and card["e2e_s"] == 2.0
    assert card["unattributed_s"] == pytest.approx(0.3) and card["prefill_s"] is None
    assert card["trace_id"] == "4bf92f3577b34da6a3ce929d0e0e4736"
    assert card["url"] == "https://traces.example/trace/4bf92f3577b34da6a3ce929d0e0e4736"
    assert 'href="https://traces.example/trace/4bf92f3577b34da6a3ce929d0e0e4736"' in page


def test_trace_links_are_http_only_and_quote_the_id():
    assert trace_link("javascript:alert('{trace_id}')", "ab") is None
    assert trace_link("https://t/{trace_id}", 'a"b<') == "https://t/a%22b%3C"
    assert trace_link(None, "ab") is None and trace_link("https://t/{trace_id}", "") is None


def test_every_hostile_string_renders_as_text():
    records = simulated_records(PHASES[:1], failures_every=5)
    for record in records:
        record.phase = HOSTILE
        record.trace_id = HOSTILE
    phases = (Phase(HOSTILE, rate=5, duration_s=20),)
    result = make_result(
        records, phases, [objective("ttft", p=50, max="1s")], test=f"t.py::test[{HOSTILE}]",
        model=HOSTILE, trace_url="https://t/{trace_id}",
    )  # fmt: skip
    result.server.details["version"] = HOSTILE
    page = render_html(report_runs([result]))
    assert HOSTILE not in page
    assert page.count("<script") == 2  # the data block and the page's own script
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "upstream &lt;b&gt;failed&lt;/b&gt;" in page  # a server's error text
    data_block = page.split('id="latency-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in data_block and "\\u003cscript\\u003e" in data_block
    assert _data(page)["tests"] == [f"t.py::test[{HOSTILE}]"]


def test_json_for_script_cannot_close_its_element():
    text = json_for_script({"a": "</script><!-- & -->"})
    assert "<" not in text and ">" not in text and "&" not in text
    assert json.loads(text) == {"a": "</script><!-- & -->"}


def test_the_page_fetches_nothing_and_runs_only_its_own_script(spike_html):
    page = spike_html
    for fetching in ("<link", " src=", "@import", "<img", "<iframe", "url(http"):
        assert fetching not in page, fetching
    assert re.findall(r"url\((?!#)", page) == []
    policy = re.search(r'http-equiv="Content-Security-Policy" content="([^"]+)"', page)
    assert policy is not None and "default-src &#x27;none&#x27;" in policy.group(1)
    script = page.rsplit("<script>", 1)[1].split("</script>", 1)[0]
    digest = base64.b64encode(hashlib.sha256(script.encode()).digest()).decode()
    assert f"sha256-{digest}" in policy.group(1)


def test_objective_table_reads_without_script(spike_html):
    table = spike_html.split('<table class="objectives">', 1)[1].split("</table>", 1)[0]
    for header in ("verdict", "objective", "estimate", "bounds", "n", "effective n"):
        assert f"<th>{header}</th>" in table
    assert "ttft p95 &lt;= 700ms [steady]" in table and "error_rate &lt;= 5%" in table
    assert re.search(r'class="verdict v-(pass|fail|inconclusive)"', table)


def test_every_chart_has_its_boundary_said_once(spike_html):
    figures = re.findall(r'<figure class="fig">(.*?)</figure>', spike_html, re.S)
    assert len(figures) >= 8  # attribution, waterfall, over time, CDFs by phase and cohort
    for figure in figures:
        assert "<svg" in figure
    before, distributions = spike_html.split("<h3>Distributions</h3>")
    # Attribution, waterfall, over time: each its own boundary.
    assert before.count("<figcaption><strong>Boundary:</strong>") == 3
    # The CDFs share one boundary and one reading, said once above them.
    cdfs = distributions.split("<h3>Phases and cohorts</h3>")[0]
    assert cdfs.count("Boundary of every distribution below:") == 1
    assert cdfs.count("Failed requests count as unbounded") == 1
    assert "<figcaption>" not in cdfs
    assert cdfs.count('<figure class="fig">') >= 5


def test_charts_draw_limits_attribution_queue_depth_and_rates(spike_html):
    assert 'class="limit"' in spike_html and 'class="bound"' in spike_html
    assert "limit ttft p95 &lt;= 700ms [steady]" in spike_html
    assert 'class="seg-queue"' in spike_html and 'class="seg-prefill"' in spike_html
    assert 'class="rate-planned"' in spike_html and 'class="rate-sent"' in spike_html
    assert "no /metrics samples in this run" in spike_html  # none stored: said, not drawn
    assert 'class="band band0"' in spike_html and 'class="band band1"' in spike_html


def test_queue_depth_is_drawn_from_stored_metrics():
    result = make_result([lesson_record()], (Phase("steady", rate=1, duration_s=3),))
    run = report_runs([result])[0]
    document = {**run.document, "server_metrics": {
        "t_s": [0.0, 1.0, 2.0], "waiting": [0, 7, 3], "running": [1, 2, 2],
        "boundary": "server /metrics gauges",
    }}  # fmt: skip
    page = render_html([ReportRun.build(document, run.records)])
    assert 'class="depth-waiting"' in page and "queue depth: server /metrics gauges" in page


def test_thinning_keeps_failed_and_slow_requests_and_says_so():
    phases = (Phase("steady", rate=16, duration_s=400),)  # near capacity: a slow tail
    records = simulated_records(phases, failures_every=101)
    thinned = thin(records, limit=2000)
    kept = {record.id for record in thinned.records}
    failed = {record.id for record in records if record.status is not Status.OK}
    assert failed and failed <= kept
    # Slowest by TTFT as verdicts count it: a failed request is unbounded.
    slowest = sorted(records, key=lambda r: -(r.ttft_s if r.ok and r.ttft_s else float("inf")))
    assert {r.id for r in slowest[: len(records) // 10]} <= kept
    assert len(kept) < len(records) and len(kept) <= 2000 + len(records) // 10 + len(failed)
    assert f"of {len(records)} requests" in thinned.note and "every failed one" in thinned.note


def test_waterfall_rows_keep_failures_apart_from_the_slowest_completed():
    records = simulated_records(PHASES, failures_every=50)
    rows = waterfall_rows(records, slowest=5, ordinary=4, failed=3)
    failed = [r for r in records if not r.ok]
    assert len(failed) > 3 and rows.failed == failed[:3]  # the first ones sent
    completed = sorted((r for r in records if r.ok), key=lambda r: -(r.ttft_s or 0))
    assert rows.slowest == completed[:5]
    assert len(rows.ordinary) == 4 and all(r.ok and r not in rows.slowest for r in rows.ordinary)
    ordinary_ttfts = [r.ttft_s for r in rows.ordinary]
    assert ordinary_ttfts == sorted(ordinary_ttfts, reverse=True)  # p90 down to p10


def test_relative_objective_overlays_baseline_and_candidate():
    steady = (Phase("steady", rate=20, duration_s=20),)
    baseline = simulated_records(steady, seed=1, failures_every=0)
    candidate = simulated_records(steady, seed=2, failures_every=0)
    relative = objective("ttft", p=90, max_regression="10%")
    result = make_result(candidate, steady, [relative], baseline=[baseline])
    page = render_html(report_runs([result]))
    assert "ttft p90 &lt;= baseline +10%: baseline and candidate" in page
    assert 'class="cdf cbase"' in page and "Baseline requests were not given" not in page


def test_cli_report_renders_what_the_session_wrote(tmp_path: Path, capsys):
    result = make_result(simulated_records(PHASES), PHASES, OBJECTIVES)
    write_json(tmp_path / "run.json", [result])
    write_html(tmp_path / "session.html", [result])
    code = main(["report", str(tmp_path / "run.json"), "--html", str(tmp_path / "out.html")])
    assert code == 0 and "out.html (1 run(s))" in capsys.readouterr().out
    assert (tmp_path / "out.html").read_text() == (tmp_path / "session.html").read_text()
    assert read_runs(tmp_path / "run.json")[0].document["trace_url_template"] is not None


def test_cli_report_usage_errors(tmp_path: Path, capsys):
    assert main(["report", str(tmp_path / "missing.json"), "--html", "x.html"]) == 2
    assert "missing.json: no such file" in capsys.readouterr().err
    (tmp_path / "run.json").write_text('{"schema": "pytest-latency/1", "runs": []}')
    bad = ["report", str(tmp_path / "run.json"), "--html", "x.html", "--trace-url", "https://t"]
    assert main(bad) == 2 and "must contain {trace_id}" in capsys.readouterr().err


def test_a_session_without_latency_runs_says_so():
    assert "This session ran no latency test." in render_html([])


FAST_SPEC = """\
server: {kind: sim, options: {decode_base_s: 0.003, decode_per_seq_s: 0.0001}}
workload:
  seed: 3
  input_tokens: [20, 40]
  output_tokens: 12
  phases:
    - {name: steady, arrival: poisson, rate: 20, duration: 1s}
objectives:
  - {metric: ttft, p: 50, max: 2s}
"""


@pytest.mark.slow
def test_plugin_writes_the_report_the_cli_renders_from_its_json(pytester):
    pytester.makefile(".slo.yaml", assistant=FAST_SPEC)
    result = pytester.runpytest(
        "--latency-html", "out/latency.html", "--latency-json", "out/latency.json",
        "--latency-trace-url", "http://127.0.0.1:16686/trace/{trace_id}", "-p", "no:randomly",
        # A second of requests cannot bound its p50 (inconclusive); this test is about
        # the report written, so an inconclusive verdict passes with a warning here.
        "--latency-inconclusive", "warn",
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    assert "latency HTML: out/latency.html" in result.stdout.str()
    assert "--latency-html" not in result.stdout.str()  # no "not implemented" warning
    written = (pytester.path / "out" / "latency.html").read_text()
    assert "<h2>assistant.slo.yaml::assistant</h2>" in written
    assert "http://127.0.0.1:16686/trace/" in written
    out = pytester.path / "again.html"
    assert main(["report", str(pytester.path / "out" / "latency.json"), "--html", str(out)]) == 0
    assert out.read_text() == written


def _figure(page: str, title: str) -> str:
    figures = re.findall(r'<figure class="fig"><h4>(.*?)</h4>(.*?)</figure>', page, re.S)
    return next(body for name, body in figures if name == title)


def test_cohort_cdf_draws_only_limits_of_cohort_objectives():
    cohort_goal = objective("ttft", p=50, max="900ms", input_tokens=(1, 100000))
    result = make_result(simulated_records(PHASES), PHASES, (*OBJECTIVES, cohort_goal))
    page = render_html(report_runs([result]))
    by_phase = _figure(page, "TTFT by phase")
    by_cohort = _figure(page, "TTFT by cohort")
    steady_limit = "limit ttft p95 &lt;= 700ms [steady]"
    assert steady_limit in by_phase
    assert steady_limit not in by_cohort  # the steady phase's limit is not a cohort's
    assert by_cohort.count('class="limit"') == 1
    assert "limit ttft p50 &lt;= 900ms" in by_cohort


def test_cdf_tick_labels_fit_inside_the_chart(spike_html):
    from pytest_latency.report.html.cdf import WIDTH

    figures = re.findall(r'<figure class="fig"><h4>(.*?)</h4>(.*?)</figure>', spike_html, re.S)
    cdfs = [
        body
        for title, body in figures
        if title.endswith(("by phase", "by cohort")) and "attribution" not in title
    ]
    assert len(cdfs) >= 5
    for body in cdfs:
        ticks = re.findall(
            r'<text x="([\d.]+)" y="[\d.]+" class="tick" text-anchor="middle">(.*?)<', body
        )
        assert ticks
        # 10 px sans-serif: about 6 px a character, at most; the label is centred.
        for x, label in ticks:
            assert float(x) + 6 * len(label) / 2 <= WIDTH, label
