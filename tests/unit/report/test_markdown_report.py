"""The Markdown summary (``--latency-markdown``, ``$GITHUB_STEP_SUMMARY``, ``report
--markdown``), parsed as GitHub parses it: tables keep their shape and no HTML passes."""

from __future__ import annotations

import dataclasses
import json
import textwrap

import pytest
from markdown_it import MarkdownIt

from pytest_latency.cli.main import main
from pytest_latency.report.confidence_note import confidence_note
from pytest_latency.report.html import report_runs
from pytest_latency.report.html.model import ReportRun
from pytest_latency.report.json_report import write_json
from pytest_latency.report.markdown import (
    MAX_BYTES,
    append_step_summary,
    md_text,
    render_markdown,
    write_session_markdown,
)
from pytest_latency.report.terminal import format_run
from pytest_latency.spec.model import Phase, objective
from tests.helpers.html_runs import HOSTILE, make_result, simulated_records
from tests.helpers.known_runs import scaled_records

PHASES = (Phase("steady", rate=5, duration_s=20), Phase("burst", rate=25, duration_s=5))
OBJECTIVES = (
    objective("ttft", p=95, max="700ms", phase="steady"),
    objective("ttft", p=50, max="1ms", phase="burst"),
    objective("error_rate", max="5%"),
)
HOSTILE_TEST = "tests/test_x.py::test_chat[<script>alert(1)</script>|a|b]"


def _tokens(text: str) -> list:
    return MarkdownIt("commonmark").enable("table").parse(text)


def _tables(text: str) -> list[list[list[str]]]:
    """Every table as rows of cell texts (header row first)."""
    tables: list[list[list[str]]] = []
    row: list[str] = []
    inline = False
    for token in _tokens(text):
        if token.type == "table_open":
            tables.append([])
        elif token.type == "tr_open":
            row = []
        elif token.type in ("th_open", "td_open"):
            inline = True
        elif token.type == "inline" and inline:  # the text a reader sees
            row.append("".join(child.content for child in token.children or []))
            inline = False
        elif token.type == "tr_close":
            tables[-1].append(row)
    return tables


@pytest.fixture(scope="module")
def spike():
    return make_result(simulated_records(PHASES), PHASES, OBJECTIVES, test=HOSTILE_TEST)


def test_no_html_passes_and_hostile_names_keep_the_tables_whole(spike):
    text = render_markdown(report_runs([spike]))
    tokens = _tokens(text)
    assert not [t for t in tokens if t.type in ("html_block", "html_inline")]
    assert not [c for t in tokens for c in (t.children or []) if c.type == "html_inline"]
    assert "<script" not in text and "&lt;script&gt;" in text
    for table in _tables(text):
        widths = {len(row) for row in table}
        assert len(widths) == 1, table  # a stray | would add a cell to its row
    assert f"### FAIL: {md_text(HOSTILE_TEST)}" in text
    assert md_text(HOSTILE) in text  # the failures' error text, shown as text


def test_verdict_table_slowest_requests_and_diagnosis(spike):
    text = render_markdown(report_runs([spike]))
    verdicts, _, slowest, failures = _tables(text)
    assert verdicts[0][:4] == ["verdict", "objective", "estimate", "bounds"]
    labels = {row[1]: row[0] for row in verdicts[1:]}
    results = {r.objective.label: r.verdict.value.upper() for r in spike.objective_results}
    assert {label: verdict.strip("*") for label, verdict in labels.items()} == results
    # The slowest requests, slowest first, each linked to its trace.
    ranked = sorted((r for r in spike.records if r.ok), key=lambda r: -r.ttft_s)[:5]
    assert [int(row[0]) for row in slowest[1:]] == [r.id for r in ranked]
    slowest_trace = ranked[0].trace_id
    assert slowest[1][5] == slowest_trace
    assert f"| [{slowest_trace}](https://traces.example/trace/{slowest_trace}) |" in text
    # Failures by kind; the hostile error text is escaped, not markup.
    failed = [r for r in spike.records if not r.ok]
    assert sum(int(row[2]) for row in failures[1:]) == len(failed)
    assert "**Diagnosis**" in text


def _chosen(percentiles: tuple[float, ...], goals=()):
    run = make_result(scaled_records(1.0), PHASES, goals)
    return dataclasses.replace(run, summary_percentiles=percentiles)


def test_the_latency_table_shows_the_percentiles_the_terminal_shows():
    # --latency-percentiles 50,90,99.9 and an objective's own p97.5, as in the terminal.
    run = _chosen((50.0, 90.0, 99.9))
    run.evaluate([objective("ttft", p=97.5, max="5s", phase="steady")])
    _, latency, *_ = _tables(render_markdown(report_runs([run])))
    terminal = next(line for line in format_run(run, 80) if line.split()[:2] == ["phase", "metric"])
    assert latency[0] == ["phase", "metric", *terminal.split()[2:]]
    assert latency[0][2:] == ["p50", "p90", "p97.5", "p99.9"]
    # TTFTs 10..1000 ms in steps of 10 ms: p90 is 901 ms (linear interpolation).
    steady_ttft = next(row for row in latency[1:] if row[:2] == ["steady", "ttft"])
    assert steady_ttft[2:] == ["505.0ms", "901.0ms", "975.3ms", "999.0ms"]
    assert {row[1] for row in latency[1:]} == {"ttft", "itl", "e2e"}
    # No objective: the verdict table is a sentence, the latency table the first one.
    default = _tables(render_markdown(report_runs([_chosen((50.0, 95.0, 99.0))])))
    assert default[0][0] == ["phase", "metric", "p50", "p95", "p99"]


def test_the_summary_explains_its_confidence_figures_once():
    goals = [objective("ttft", p=50, max="5s", phase="steady"), objective("error_rate", max="5%")]
    runs = [_chosen((50.0,), goals), _chosen((50.0,), goals[:1])]
    text = render_markdown(report_runs(runs))
    note = confidence_note(runs)
    # A TTFT objective waits in the queue: the runaway check is one more test beside it.
    assert note is not None and "99.667% = 99% shared by 3 tests" in note
    assert text.count(md_text(note, limit=2000)) == 1  # the terminal's note, once
    assert "99.500% = 99% shared by 2 tests" in text
    assert "confidence:" not in render_markdown(report_runs([_chosen((50.0,))]))


def test_diagnosis_items_are_escaped():
    finding = {"hypothesis": f"queue {HOSTILE}", "evidence": "p95 | 2s", "check": "look *here*"}
    run = ReportRun.build({"test": "t", "diagnosis": [finding]}, [])
    text = render_markdown([run])
    assert "- **queue &lt;script&gt;alert(1)&lt;/script&gt;** Evidence: p95 \\| 2s" in text
    assert "Next: look \\*here\\*" in text


def test_md_text_escapes_markup_and_joins_lines():
    assert md_text("a|b") == "a\\|b"
    assert md_text("<b>x</b> & *y*\nz") == "&lt;b&gt;x&lt;/b&gt; &amp; \\*y\\* z"
    assert md_text("x" * 500).endswith("…") and len(md_text("x" * 500)) == 300


@pytest.mark.slow
def test_over_1_mib_is_cut_between_runs_with_a_note(spike):
    runs = report_runs([spike]) * 1000  # about 1.9 MiB
    text = render_markdown(runs)
    size = len(text.encode("utf-8"))
    assert MAX_BYTES - 100_000 < size <= MAX_BYTES
    assert "The summary stops here" in text
    shown = text.count("### FAIL")
    assert 0 < shown < 1000 and f"{shown} of 1000 runs are shown" in text
    tiny = render_markdown(runs[:2], limit=1200)  # not even one run fits: cut at a line
    assert len(tiny.encode("utf-8")) <= 1200 and "0 of 2 runs are shown" in tiny


def test_step_summary_is_appended_not_overwritten(spike, tmp_path):
    summary = tmp_path / "summary.md"
    summary.write_text("# Build\n\nearlier step output\n")
    out = tmp_path / "latency.md"
    write_session_markdown([spike], out, {"GITHUB_STEP_SUMMARY": str(summary)})
    written = summary.read_text()
    assert written.startswith("# Build\n\nearlier step output\n")
    assert written.endswith(out.read_text())
    # A step summary already near 1 MiB gets nothing rather than an oversized file.
    summary.write_text("x" * (MAX_BYTES - 1000))
    assert append_step_summary(summary, report_runs([spike])) is False
    assert summary.stat().st_size == MAX_BYTES - 1000


def test_report_command_renders_the_same_markdown_from_json(spike, tmp_path):
    write_json(tmp_path / "run.json", [spike])
    session = tmp_path / "session.md"
    write_session_markdown([spike], session, {})
    code = main(["report", str(tmp_path / "run.json"), "--markdown", str(tmp_path / "out.md")])
    assert code == 0
    assert (tmp_path / "out.md").read_text() == session.read_text()
    assert main(["report", str(tmp_path / "run.json")]) == 2  # neither --html nor --markdown


@pytest.mark.slow
def test_plugin_writes_markdown_and_appends_the_step_summary(pytester, monkeypatch):
    summary = pytester.path / "step-summary.md"
    summary.write_text("earlier\n")
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    pytester.makefile(
        ".slo.yaml",
        chat=textwrap.dedent(
            """\
            server: {kind: sim, options: {decode_base_s: 0.003, prefill_per_token_s: 0.00001}}
            workload:
              seed: 3
              input_tokens: [20, 40]
              output_tokens: 8
              phases:
                - {name: steady, arrival: constant, rate: 64, duration: 1s}
            objectives:
              - {metric: ttft, p: 50, max: 5s}
            """
        ),
    )
    result = pytester.runpytest("--latency-markdown", "out/latency.md", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    written = (pytester.path / "out" / "latency.md").read_text()
    assert "### PASS: chat.slo.yaml::chat" in written
    assert summary.read_text() == "earlier\n\n" + written
    result.stdout.fnmatch_lines(["latency Markdown: out/latency.md"])


@pytest.mark.slow
def test_no_latency_test_leaves_the_step_summary_alone(pytester, monkeypatch):
    summary = pytester.path / "step-summary.md"
    monkeypatch.setenv("GITHUB_STEP_SUMMARY", str(summary))
    pytester.makepyfile("def test_plain():\n    pass\n")
    pytester.runpytest().assert_outcomes(passed=1)
    assert not summary.exists()


def test_json_is_not_needed_for_cli_errors(tmp_path):
    (tmp_path / "bad.json").write_text(json.dumps({"schema": "other"}))
    assert main(["report", str(tmp_path / "bad.json"), "--markdown", str(tmp_path / "o.md")]) == 2
