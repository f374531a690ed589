"""A capacity search is observed like any run, on loopback against the embedded server:
each probe's requests are joined with the server's spans by trace id (queue wait,
prefill, decode), ``/metrics`` is scraped while each probe drives (on the search's
timeline), and every report counts each probe's requests as its phase does."""

from __future__ import annotations

import re

import pytest

from tests.helpers.json_schema import assert_valid_run_file

TEST_FILE = """
from pytest_latency import ServerSpec, objective

def test_capacity(latency):
    latency.capacity(
        objective("ttft", p=90, max="500ms"),
        rates=(20, 300), probe="3s", budget="16s",
        server=ServerSpec(kind="sim", options={"replicas": 1, "max_batch": 32}),
        seed=7, input_tokens=(20, 20), output_tokens=20, timeout_s=10.0,
    )
"""


@pytest.mark.slow
@pytest.mark.serial
def test_probes_join_server_spans_and_scrape_metrics(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_capacity=TEST_FILE)
    result = pytester.runpytest(
        "--latency-json", "latency.json", "--latency-html", "latency.html",
        "--latency-markdown", "latency.md", "--latency-metrics-interval", "250ms",
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    (run,) = assert_valid_run_file(pytester.path / "latency.json")["runs"]
    probes = run["capacity"]["probes"]
    assert probes, run["capacity"]

    # Server spans, joined by trace id, for the probes' completed requests.
    timings = run["server_timings"]
    completed = [r for r in run["requests"] if r["status"] == "ok"]
    assert timings is not None and timings["joined"] == len(completed) > 0, timings
    assert sum(timings["sources"].values()) == len(completed)
    assert all(source.startswith("otlp") for source in timings["sources"])  # spans
    for request in completed:
        assert request["queue_wait_s"] is not None and request["prefill_s"] is not None
        assert request["decode_s"] is not None
    # /metrics scraped while the probes drove, on the search's timeline.
    metrics = run["server_metrics"]
    assert metrics is not None and metrics["kind"] == "sim" and metrics["scrapes"] > len(probes)
    duration = sum(phase["duration_s"] for phase in run["workload"]["phases"])
    assert all(0.0 <= t <= duration for t in metrics["t_s"])
    assert any(value for value in metrics["running"])  # it saw requests running

    # Each probe's counts are its phase's, and its server medians are there.
    phases = {phase["name"]: phase for phase in run["phases"]}
    for probe in probes:
        phase = phases[probe["phase"]]
        own = [r for r in run["requests"] if r["phase"] == probe["phase"]]
        assert probe["planned"] == phase["offered"] == len(own)
        assert probe["cancelled"] == phase["statuses"].get("cancelled", 0)
        assert probe["sent"] == sum(r["sent_s"] is not None for r in own)
        assert probe["decided_on"] == probe["offered"] <= probe["planned"]
        if probe["stopped_early"]:
            assert probe["sent"] + probe["cancelled"] == probe["planned"]
        server = probe["server"]
        assert server["joined"] == server["completed"] == phase["statuses"].get("ok", 0)
        if server["completed"]:
            assert server["queue_wait_p50_s"] is not None and server["decode_p50_s"] > 0

    terminal = result.stdout.str()
    assert "server (" in terminal and "completed joined): queue wait p50" in terminal
    html = (pytester.path / "latency.html").read_text()
    for probe in probes:  # the probe table's counts, as the JSON's
        counts = [str(probe[key]) for key in ("planned", "sent", "cancelled", "decided_on")]
        cells = f"<td>{probe['phase']}</td><td>[^<]*</td>" + "".join(
            f"<td>{count}</td>" for count in counts
        )
        assert re.search(cells, html), (probe, cells)
    markdown = (pytester.path / "latency.md").read_text()
    assert "| rate | planned | sent | cancelled | decided on |" in markdown
