"""A capacity probe stopped by its runaway queue shows its evidence, through pytest on
loopback: each objective's estimate and bounds from the requests it sent, its
percentiles from those (never `inf` from the requests it never sent), and why it
stopped, alike in the terminal, the JSON and the HTML (docs/capacity.md)."""

from __future__ import annotations

import html as html_text
import re

import pytest

from tests.helpers.json_schema import assert_valid_run_file

# 150..300/s into one replica of ~45/s with an unbounded queue: every probe runs away.
TEST_FILE = """
from pytest_latency import ServerSpec, objective

def test_capacity(latency):
    latency.capacity(
        objective("ttft", p=90, max="300ms"),
        rates=(150, 300), probe="4s", budget="14s",
        server=ServerSpec(kind="sim", options={"replicas": 1, "max_batch": 32,
                                               "max_queue": 100000}),
        seed=5, input_tokens=(20, 20), output_tokens=20, timeout_s=20.0,
    )
"""


@pytest.mark.slow
@pytest.mark.serial
def test_a_runaway_probe_shows_its_estimates_bounds_and_why(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_capacity=TEST_FILE)
    result = pytester.runpytest(
        "--latency-json", "latency.json", "--latency-html", "latency.html", "-p", "no:randomly"
    )
    (run,) = assert_valid_run_file(pytester.path / "latency.json")["runs"]
    probe = run["capacity"]["probes"][0]
    assert probe["stopped_early"] and "the queue ran away" in probe["stop_reason"], probe
    assert probe["outcome"] == "fail" and probe["verdicts"]["queue kept up"] == "fail"
    goal, queue = probe["objectives"]
    assert queue["objective"] == "queue kept up"
    assert goal["objective"] == "ttft p90 <= 300ms" and goal["verdict"] in ("fail", "inconclusive")
    assert goal["estimate"] is not None and goal["upper"] is not None and goal["n"] > 0
    sent = [r for r in run["requests"] if r["phase"] == "probe-1" and r["sent_s"] is not None]
    assert goal["n"] <= len(sent)  # the never-sent are no samples

    # The probe's phase: planned = completed + failed + unsent, percentiles of the sent.
    (phase,) = [p for p in run["phases"] if p["name"] == "probe-1"]
    # Cancelled: the never sent (unsent), and any sent ones the search's deadline cut off
    # mid-stream, which fail like any request that never delivered.
    assert phase["unsent"] == probe["planned"] - probe["sent"] > 0
    assert phase["unsent"] <= probe["cancelled"]
    assert phase["offered"] == phase["completed"] + phase["failed"] + phase["unsent"]
    assert phase["percentiles_s"]["ttft"]["p50"] is not None  # was inf (null) before

    verdict = "fail" if goal["verdict"] == "fail" else f"inconclusive ({probe['stop_reason']})"
    terminal = result.stdout.str()
    assert f"ttft p90 <= 300ms: {verdict}" in re.sub(r"\s+", " ", terminal), terminal
    # (A probe stopped in seconds leaves budget for another, which the deadline may cut:
    # that one is "not decided at a look"; the runaway probe's own lines never are.)
    assert "not decided at a look, no estimate" not in terminal.split("probe-2 ")[0]
    assert f"probe-1: failures: cancelled={probe['cancelled']}" not in terminal
    assert f"{phase['unsent']} never sent (not failures)" in terminal
    page = (pytester.path / "latency.html").read_text()
    cell = f"<td>ttft p90 &lt;= 300ms</td><td>{html_text.escape(verdict, quote=False)}</td>"
    assert cell in page
