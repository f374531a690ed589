"""Absurd server values and hostile text, in-process (issue 35, items 3, 4 and 9): server
durations clamped to the request's e2e, implausible token counts kept out of TPOT,
non-finite numbers written as null, server text escaped, and the plugin's output flags
refusing to share a file.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from pytest_latency.driver.errors import http_error_text, safe_text
from pytest_latency.driver.request import implausible_tokens
from pytest_latency.file_format import encode
from pytest_latency.plugin.outputs import output_paths_problem
from pytest_latency.records import RequestRecord, Status
from pytest_latency.report.wrapping import wrap
from pytest_latency.shown_text import has_control, shown
from pytest_latency.telemetry.join import join_records
from tests.helpers.latency_options import options

pytestmark = pytest.mark.security


def finished(e2e_s: float, timing: str) -> RequestRecord:
    record = RequestRecord(id=0, phase="steady", intended_s=0.0, input_tokens=1, max_tokens=4)
    record.status, record.sent_s = Status.OK, 0.0
    record.first_token_s, record.end_s = e2e_s / 2, e2e_s
    record.server_timing = timing
    return record


def test_server_durations_are_clamped_to_the_requests_own_e2e() -> None:
    record = finished(0.5, "queue;dur=1.7e308, prefill;dur=0.1")
    join_records([record], {})
    assert record.queue_wait_s == 0.5 and record.prefill_s == pytest.approx(0.0001)
    document = {"runs": [{"requests": [{"queue_wait_s": record.queue_wait_s}]}]}
    assert json.loads(encode(document)) == document


def test_an_implausible_token_count_is_marked_and_gives_no_tpot() -> None:
    record = finished(1.0, "")
    assert implausible_tokens(10**30, record) and implausible_tokens(5, record)
    assert not implausible_tokens(4, record)
    unbounded = RequestRecord(id=1, phase="s", intended_s=0.0, input_tokens=1)
    assert not implausible_tokens(100_000, unbounded) and implausible_tokens(10**8, unbounded)
    record.output_tokens, record.output_tokens_source = 2, "implausible"
    assert record.tpot_s is None
    record.output_tokens_source = "usage"
    assert record.tpot_s == pytest.approx(0.5)


def test_a_non_finite_value_is_written_as_null_and_the_json_stays_strict() -> None:
    document = {"runs": [{"estimate": math.inf, "requests": [{"x": math.nan}, {"x": 1.0}]}]}
    text = encode(document).decode()

    def refuse(constant: str) -> None:
        raise AssertionError(constant)

    parsed = json.loads(text, parse_constant=refuse)
    assert parsed["runs"][0]["estimate"] is None
    assert [row["x"] for row in parsed["runs"][0]["requests"]] == [None, 1.0]


HOSTILE = "model\n::error title=pwned::x\r\x1b[2J\x1b]8;;http://evil\x07link\x9b31m\u2028end"


def test_server_text_is_escaped_wherever_it_is_shown() -> None:
    escaped = shown(HOSTILE)
    assert not has_control(escaped) and "\\x1b" in escaped
    for text in (
        safe_text(HOSTILE, "prompt"),
        http_error_text(500, json.dumps({"error": HOSTILE}).encode(), "prompt"),
        *wrap(f"::error::{HOSTILE} " * 5, 40),
    ):
        assert not has_control(text), text
        assert not text.lstrip().startswith("::"), text
    assert shown("http://[::1]:8000") == "http://[::1]:8000"  # IPv6 stays readable


def test_the_plugins_output_flags_refuse_to_share_a_file(tmp_path: Path) -> None:
    same = tmp_path / "out"
    problem = output_paths_problem(options(json_path=same, csv_path=tmp_path / "." / "out"))
    assert problem is not None and "name the same file" in problem
    baseline = tmp_path / "base.json"
    baseline.write_text("{}")
    problem = output_paths_problem(options(baseline=baseline, html_path=baseline))
    assert problem is not None and "would replace the input --latency-baseline" in problem
