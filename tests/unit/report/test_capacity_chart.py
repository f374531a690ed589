"""The capacity search drawn as curves: estimates and bounds against offered rate, with
each objective's limit and the bracket."""

from __future__ import annotations

import re

from pytest_latency.report.html.capacity import capacity_section
from pytest_latency.report.html.capacity_chart import capacity_charts


def probe(rate: float, ttft: float, good: float, upper: float | None) -> dict[str, object]:
    return {
        "rate": rate,
        "offered": 50,
        "outcome": "pass" if ttft < 0.5 else "fail",
        "objectives": [
            {"objective": "ttft p90 <= 500ms", "unit": "seconds", "estimate": ttft,
             "lower": ttft * 0.9, "upper": upper, "limit": 0.5},
            {"objective": "attainment ttft <= 500ms >= 90%", "unit": "fraction",
             "estimate": good, "lower": good - 0.05, "upper": min(1.0, good + 0.05), "limit": 0.9},
            {"objective": "queue", "unit": "rps", "estimate": 0.1, "lower": None, "upper": None},
        ],
    }  # fmt: skip


SEARCH = {
    "passed_rps": 40.0,
    "failed_rps": 80.0,
    "stopped": "bracket narrow enough",
    "probes": [probe(40, 0.2, 0.99, 0.25), probe(80, 0.9, 0.5, None), probe(60, 0.45, 0.92, 0.6)],
}


def test_one_chart_per_unit_with_a_point_and_a_bar_per_probe() -> None:
    html = capacity_charts(SEARCH)
    assert html.count("<svg") == 2  # seconds and fraction; the queue check is not drawn
    assert html.count('class="cap-pt"') == 6 and html.count('class="cap-bound"') == 6
    assert html.count('class="limit"') == 2
    assert "passed 40/s" in html and "failed 80/s" in html
    assert "ttft p90 &lt;= 500ms" in html  # escaped, in the legend


def test_probes_are_joined_in_rate_order() -> None:
    html = capacity_charts(SEARCH)
    path = re.search(r'<path d="M([^"]+)" class="cdf"/>', html)
    assert path is not None
    xs = [float(point.split()[0]) for point in path.group(1).split("L")]
    assert xs == sorted(xs)


def test_a_search_without_evidence_draws_nothing_but_keeps_its_tables() -> None:
    bare = {"passed_rps": None, "failed_rps": 10.0, "probes": [{"rate": 10, "verdicts": {}}]}
    assert capacity_charts(bare) == ""
    assert "<h3>Capacity</h3>" in capacity_section(bare)
