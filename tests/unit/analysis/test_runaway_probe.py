"""A capacity probe its runaway queue stopped shows what its data hold: each objective's
estimate and bounds from the requests it sent (never-sent ones are no samples), a fail
where they show one, and otherwise inconclusive, with the stop as the reason (a pass
needs the whole probe), in the terminal, the JSON and the HTML alike. And the queue
check itself, with known truth: inside the probe's alpha, it fails no healthy probe
near capacity (beyond its share) and finds a probe far over it within seconds."""

from __future__ import annotations

import dataclasses
import math
import re

import pytest

from pytest_latency.analysis.capacity_probe import (
    SATURATION_LABEL,
    check_spans,
    decide_runaway,
    held_back,
    queue_alpha,
    saturated,
)
from pytest_latency.analysis.capacity_result import CapacityResult, ProbeEvidence, ProbeResult
from pytest_latency.analysis.looks import look_confidences
from pytest_latency.analysis.probe_counts import probe_counts
from pytest_latency.records import STOPPED_EARLY, RequestRecord, Status
from pytest_latency.report.capacity_table import capacity_lines
from pytest_latency.report.html.capacity import capacity_section
from pytest_latency.spec.model import objective
from tests.helpers.mgc_queue import MGcQueue

SENT, UNSENT = 120, 40
REASON = f"{STOPPED_EARLY}capacity probe at 80/s: the queue ran away"
QUEUE = ProbeEvidence(
    objective=SATURATION_LABEL, decided_as="in flight grows under 10/s", verdict="fail",
    estimate=30.0, lower=-math.inf, upper=math.inf, n=SENT, n_effective=None,
    unit="rps", limit=10.0, at_least=False,
)  # fmt: skip
GOAL = objective("ttft", p=90, max="500ms")


def _seen(ttft_s: float) -> list[RequestRecord]:
    """120 sent requests (every 1/80 s) that all took ``ttft_s``, then 40 never sent."""
    records = []
    for index in range(SENT + UNSENT):
        at = index / 80
        record = RequestRecord(index, "probe", at, 20, error=None if index < SENT else REASON)
        if index < SENT:
            record.sent_s, record.status, record.output_tokens = at, Status.OK, 20
            record.first_token_s, record.end_s = at + ttft_s, at + ttft_s + 0.2
        records.append(record)
    return records


def test_a_fail_its_sent_requests_show_stands() -> None:
    verdicts, evidence = decide_runaway([GOAL], _seen(2.0), QUEUE, confidence=0.995)
    assert verdicts == {GOAL.label: "fail", SATURATION_LABEL: "fail"}
    item, queue = evidence
    assert queue is QUEUE and item.objective == GOAL.label and item.verdict == "fail"
    assert item.n == SENT  # the never-sent are no samples
    assert item.estimate == 0.0 and item.upper < 0.9  # share within 500 ms, bounded


def test_a_pass_needs_the_whole_probe_so_it_stays_inconclusive_with_its_numbers() -> None:
    verdicts, evidence = decide_runaway([GOAL], _seen(0.05), QUEUE, confidence=0.995)
    assert verdicts[GOAL.label] == "inconclusive" and verdicts[SATURATION_LABEL] == "fail"
    item = evidence[0]
    assert item.verdict == "inconclusive" and item.n == SENT
    assert item.estimate == 1.0 and item.lower > 0.9  # the data alone would pass


@pytest.fixture(scope="module")
def reports() -> tuple[str, str, dict[str, object]]:
    records = _seen(0.05)
    verdicts, evidence = decide_runaway([GOAL], records, QUEUE, confidence=0.995)
    probe = ProbeResult(80.0, SENT + UNSENT, verdicts, True, 8.0, "server queue empty",
                        tuple(evidence))  # fmt: skip
    found = CapacityResult(None, 80.0, [probe], 30.0, 8.0, "a test")
    counts = probe_counts(records, SENT + UNSENT)
    assert counts.stop_reason == REASON
    document = {**probe.to_json(), **counts.to_json(), "phase": "probe-1"}
    search = {**found.to_json(), "probes": [document]}
    moved = [_in_phase(record) for record in records]
    text = "\n".join(capacity_lines(found, None, width=200, records=moved))
    return text, capacity_section(search), document


def _in_phase(record: RequestRecord) -> RequestRecord:
    record.phase = "probe-1"
    return record


def test_the_terminal_shows_the_estimate_and_why_it_is_undecided(
    reports: tuple[str, str, dict[str, object]],
) -> None:
    text, _, _ = reports
    assert f"ttft p90 <= 500ms: inconclusive ({REASON}); as attainment" in text
    assert "100.0% [" in text and f"n {SENT}" in text
    assert "not decided at a look" not in text


def test_the_json_and_html_carry_the_same(reports: tuple[str, str, dict[str, object]]) -> None:
    _, html, document = reports
    assert document["stop_reason"] == REASON and document["stopped_early"] is True
    items = document["objectives"]
    assert isinstance(items, list)
    assert items[0]["verdict"] == "inconclusive" and items[0]["estimate"] == 1.0
    rows = re.findall(r"<tr>(.*?)</tr>", html.split("<h4>")[1])
    cells = [re.findall(r"<td>(.*?)</td>", row) for row in rows]
    (goal,) = [row for row in cells if row and row[1] == "ttft p90 &lt;= 500ms"]
    assert goal[2] == f"inconclusive ({REASON})" and goal[4] == "100.0%" and goal[7] == str(SENT)


def test_a_probe_stopped_at_an_early_look_holds_back_its_passes_only() -> None:
    """Stopped on one objective's fail at an early look, another's pass there is no pass
    of the probe (the rest was never sent): inconclusive, its numbers kept."""
    verdicts, evidence = decide_runaway([GOAL], _seen(0.05), None, confidence=0.995)
    passing = dataclasses.replace(evidence[0], verdict="pass")
    failing = dataclasses.replace(evidence[0], objective="e2e p90 <= 1s", verdict="fail")
    held, shown = held_back(
        {GOAL.label: "pass", "e2e p90 <= 1s": "fail"}, [passing, failing, QUEUE]
    )
    assert held == {GOAL.label: "inconclusive", "e2e p90 <= 1s": "fail"}
    assert [item.verdict for item in shown] == ["inconclusive", "fail", "fail"]
    assert shown[0].estimate == passing.estimate and shown[0].lower == passing.lower
    assert verdicts[SATURATION_LABEL] == "fail"  # a runaway fails the probe, queue or not


# The queue check of a live probe, with known truth (M/G/c queues, tests/helpers/mgc_queue.py):
# a 6 s warm-up, a 60 s probe, looks at half and all of it, checks between them.
WARM_S, PROBE_S, LOOKS = 6.0, 60.0, (0.5, 1.0)
PROBE_ALPHA = 0.002  # a probe's share of a search's 1% (about five rates)


def _called(queue: MGcQueue, load: float, seed: int) -> float | None:
    """When (seconds into the probe) the queue check called the probe runaway, if ever."""
    confidences = look_confidences(PROBE_ALPHA, LOOKS)
    level = queue_alpha(1, confidences, PROBE_S, LOOKS)
    records = queue.records(load, PROBE_S, seed, phase="probe", warmup_s=WARM_S)
    for span in check_spans(PROBE_S, LOOKS):
        now = WARM_S + span
        seen = [
            dataclasses.replace(r, end_s=None) if r.end_s is not None and r.end_s > now else r
            for r in records
            if r.intended_s <= now
        ]
        if saturated(seen, WARM_S, now, level):
            return span
    return None


def test_the_queue_check_takes_an_even_share_of_the_probe_alpha_beside_its_objectives() -> None:
    assert check_spans(60.0, LOOKS) == [7.5, 15.0, 30.0, 60.0]
    confidences = look_confidences(0.002, LOOKS)
    assert queue_alpha(1, confidences, 60.0, LOOKS) == pytest.approx(0.002 / 2 / 4)


@pytest.mark.parametrize("slots", [1, 4])
def test_a_healthy_probe_near_capacity_is_not_failed_by_the_queue_check(slots: int) -> None:
    """95% load, lognormal service with CV 2: 100 probes each, at most one call (seeds
    fixed; the issue measured 8-33% false probe FAILs with the check before)."""
    queue = MGcQueue(slots=slots, capacity_rps=6.67, cv=2.0, kind="lognormal")
    assert sum(_called(queue, 0.95, seed) is not None for seed in range(100)) <= 1


@pytest.mark.slow
@pytest.mark.parametrize("load", [0.9, 0.95])
@pytest.mark.parametrize("kind", ["lognormal", "hyperexponential"])
@pytest.mark.parametrize("slots", [1, 4])
def test_false_probe_fails_by_the_queue_check_stay_under_one_percent(
    slots: int, kind: str, load: float
) -> None:
    """400 probes a cell, at most 4 calls (the issue's goal: <= 1%)."""
    queue = MGcQueue(slots=slots, capacity_rps=6.67, cv=2.0, kind=kind)
    assert sum(_called(queue, load, seed) is not None for seed in range(2000, 2400)) <= 4


def test_a_probe_at_twice_a_16_slot_servers_capacity_fails_within_its_first_checks() -> None:
    """Fixed service (0.6 s, 16 slots, 26.7 req/s): at 2x in flight grows 27/s, found at
    the 7.5 s or 15 s check in every one of 20 probes."""
    queue = MGcQueue(slots=16, capacity_rps=16 / 0.6, cv=0.0)
    spans = [_called(queue, 2.0, seed) for seed in range(20)]
    assert all(span is not None and span <= 16.0 for span in spans), spans
