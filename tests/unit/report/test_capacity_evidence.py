"""A capacity search's probes show their evidence: each verdict's estimate, bounds, n
and effective n in the terminal, the JSON and the HTML report; the queue check reads
plainly (``queue kept up``)."""

from __future__ import annotations

import json
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from pytest_latency.analysis.capacity import DEFAULT_LOOKS
from pytest_latency.analysis.capacity_result import CapacityResult
from pytest_latency.analysis.looks import look_confidences
from pytest_latency.report.capacity_table import capacity_lines, evidence_text
from pytest_latency.report.html.capacity import capacity_section
from pytest_latency.spec.model import objective
from tests.helpers.json_schema import SCHEMA_PATH
from tests.helpers.slot_server import SlotServer
from tests.helpers.virtual_capacity import VirtualProbes

# 2 slots of 0.6 s: 3.33 req/s at most. The search's probes pass low, run away high.
SERVER = SlotServer(slots=2, prefill_s=0.1, decode_s=0.025, output_tokens=20)
GOAL = objective("ttft", p=90, max="2s")


@pytest.fixture(scope="module")
def found() -> CapacityResult:
    """Probes at 1/s (undecided alone: queued TTFTs are correlated), 12/s (the queue
    runs away) and 1/s again, which decides on both probes' requests (pooled)."""
    probes = VirtualProbes(SERVER.records, [GOAL], warmup_s=3.0, probe_s=60.0, seed=8)
    looks = DEFAULT_LOOKS
    confidences = look_confidences(0.01 / 3, looks)
    ran = [probes(rate, looks, confidences) for rate in (1.0, 12.0, 1.0)]
    return CapacityResult(1.0, 12.0, ran, budget_s=200.0, spent_s=150.0, stopped="a test")


def test_the_terminal_shows_each_verdicts_estimate_bounds_and_effective_n(
    found: CapacityResult,
) -> None:
    lines = capacity_lines(found, None, width=100)
    text = "\n".join(lines)
    assert all(len(line) <= 100 for line in lines), lines
    assert "ttft p90 <= 2s: " in text and "as attainment(ttft<=2000ms) >= 90.0%: 100.0% [" in text
    assert "effective n " in text and "%, " in text  # a share, with its bounds
    assert "queue kept up: " in text and "not over-saturated" not in text
    assert [p.outcome for p in found.probes] == ["inconclusive", "fail", "pass"], found.to_json()
    assert found.probes[1].verdicts["queue kept up"] == "fail"  # 12/s into 3.33/s
    assert "(2 probes at this rate pooled)" in text
    assert "queue kept up: fail; in flight grew " in text and "runaway from " in text


def test_the_evidence_text_reads_each_unit() -> None:
    share = {"objective": "a", "verdict": "pass", "decided_as": "attainment(ttft<=1s) >= 90%",
             "estimate": 0.95, "lower": 0.91, "upper": None, "n": 300, "n_effective": 40.2,
             "unit": "fraction", "pooled": 2}  # fmt: skip
    assert evidence_text(share) == (
        "a: pass; as attainment(ttft<=1s) >= 90%: 95.0% [91.0%, -], n 300, effective n 40"
        " (2 probes at this rate pooled)"
    )
    latency = {**share, "estimate": 0.25, "lower": 0.2, "upper": 0.3, "unit": "seconds"}
    assert "250ms [200ms, 300ms]" in evidence_text(latency)
    same = {**share, "decided_as": "a"}  # decided as written: no "as ..."
    assert evidence_text(same).startswith("a: pass; 95.0% [91.0%, -], n 300")


def test_the_json_holds_each_probes_evidence_and_meets_the_schema(found: CapacityResult) -> None:
    document = json.loads(json.dumps(found.to_json(), allow_nan=False))
    schema = json.loads(SCHEMA_PATH.read_text())
    probe_schema = {"$defs": schema["$defs"], "$ref": "#/$defs/capacityProbe"}
    for probe in document["probes"]:
        errors = list(Draft202012Validator(probe_schema).iter_errors(probe))
        assert not errors, errors[0].message
        first: dict[str, Any] = probe["objectives"][0]
        if first["objective"] == GOAL.label:  # a probe decided at a look
            offered = probe["offered"] * first["pooled"]  # the same rate: as many again
            assert abs(first["n"] - offered) < 0.3 * offered and first["n_effective"] <= first["n"]
            assert first["lower"] <= first["estimate"] and first["limit"] == 0.9
        assert probe["objectives"][-1]["objective"] == "queue kept up"


def test_the_html_report_has_a_capacity_table_with_the_evidence(found: CapacityResult) -> None:
    search: dict[str, Any] = json.loads(json.dumps(found.to_json()))
    search["probes"][0]["objectives"][0]["objective"] = "<b>x</b>"  # escaped, not markup
    page = capacity_section(search)
    assert "<h3>Capacity</h3>" in page and "What each probe verdict rests on" in page
    assert "effective n" in page and "queue kept up" in page and "<b>x</b>" not in page
    assert page.count("<tr>") >= 2 * len(found.probes) + 2  # a row per probe and verdict
    old = {**search, "probes": [{"rate": 4.0, "verdicts": {"ttft p90 <= 2000ms": "pass"}}]}
    assert "ttft p90 &lt;= 2000ms" in capacity_section(old)  # files without evidence
    assert capacity_section(None) == ""
