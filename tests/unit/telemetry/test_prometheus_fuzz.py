"""Any /metrics body, Prometheus text or not, is parsed or refused with ValueError: never
another exception (a JSON body once ended a capacity search with an IndexError)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_latency.telemetry.prometheus import (
    METRIC_NAMES,
    detect_kind,
    not_prometheus,
    parse_exposition,
)

KNOWN = sorted(
    {name for keys in METRIC_NAMES.values() for names in keys.values() for name in names}
)
# Lines built from the pieces of the format, so the fuzzing reaches the parser.
PIECES = st.sampled_from(
    [*KNOWN, "{", "}", '{model_name="m"}', " ", "# HELP", "# TYPE", "gauge", "counter", "NaN",
     "+Inf", "1", "-2.5e3", '"', "=", ",", "\\", "\n", "{}", "[", "]", "<html>", "#"]
)  # fmt: skip
LINES = st.lists(PIECES, max_size=12).map("".join)
BODIES = st.one_of(st.text(max_size=300), st.lists(LINES, max_size=8).map("\n".join))


@settings(max_examples=400, deadline=None)
@given(BODIES)
def test_any_body_parses_or_raises_value_error(body: str) -> None:
    try:
        kind = detect_kind(body)
        parse_exposition(body, kind or "auto")
    except ValueError:
        pass


@pytest.mark.parametrize(
    ("body", "reason"),
    [
        ('{"status": "ok", "version": "1.2"}', "JSON"),
        ('[{"name": "vllm:num_requests_waiting"}]', "JSON"),
        ("<!doctype html><html><body>Not found</body></html>", "HTML"),
        ("", "empty"),
        ("\x00\x01garbage ~~~", "binary"),
        ("Service Unavailable: try again later", "no Prometheus sample"),
    ],
)
def test_a_body_that_is_not_prometheus_text_says_what_it_is(body: str, reason: str) -> None:
    found = not_prometheus(body)
    assert found is not None and reason in found
    assert parse_exposition(body, "auto") == {}


def test_prometheus_text_is_not_refused() -> None:
    body = '# TYPE vllm:num_requests_waiting gauge\nvllm:num_requests_waiting{m="a"} 3\n'
    assert not_prometheus(body) is None
    assert parse_exposition(body, "auto") == {"waiting": 3.0}
