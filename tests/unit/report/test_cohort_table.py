"""The HTML cohort table speaks words, never Python's True/False/None."""

from __future__ import annotations

import re

from pytest_latency.report.html.tables import cohorts_table


def _row(turn: object, cache_hit: object) -> dict[str, object]:
    return {
        "phase": "steady",
        "input_tokens": "1-128",
        "output_tokens": "64",
        "turn": turn,
        "cache_hit": cache_hit,
        "offered": 3,
        "completed": 3,
        "failed": 0,
        "ttft_p50_s": 0.1,
        "ttft_p95_s": 0.2,
        "itl_p50_s": 0.01,
        "e2e_p95_s": None,
    }


def _cells(page: str) -> list[list[str]]:
    rows = re.findall(r"<tr>(.*?)</tr>", page.split("<tbody>")[1])
    return [re.findall(r"<td>(.*?)</td>", row) for row in rows]


def test_cache_hit_reads_hit_miss_or_dash() -> None:
    page = cohorts_table([_row(None, False), _row(None, True), _row(None, None)])
    head = re.findall(r"<th>(.*?)</th>", page)
    column = head.index("cache hit")
    assert [cells[column] for cells in _cells(page)] == ["miss", "hit", "-"]
    assert not re.search(r">(True|False|None)<", page)


def test_turn_index_is_shown_as_a_number_and_unknown_as_dash() -> None:
    page = cohorts_table([_row(0, None), _row(2, None), _row(None, None)])
    head = re.findall(r"<th>(.*?)</th>", page)
    assert "cache hit" not in head  # no cohort knows a cache hit
    column = head.index("turn")
    assert [cells[column] for cells in _cells(page)] == ["0", "2", "-"]


def test_the_html_phase_table_shows_target_planned_and_sent_rates_as_the_terminal_does():
    """It labelled the target rate 'planned/s' and had no target column."""
    from pytest_latency.report.html.tables import phases_table

    row = {
        "name": "steady", "offered": 103, "completed": 103, "failed": 0, "target_rate": 10.0,
        "offered_rate": 9.9, "duration_s": 10.0, "schedule_lag_p99_s": 0.001,
        "percentiles_s": {},
    }  # fmt: skip
    html = phases_table([row])
    heads = [cell.split("</th>")[0] for cell in html.split("<th>")[1:]]
    assert heads[4:7] == ["target/s", "planned/s", "sent/s"]
    cells = [cell.split("</td>")[0] for cell in html.split("<td>")[1:]]
    assert cells[4:7] == ["10.00", "10.30", "9.90"]  # planned: 103 requests over 10 s
