"""Timings that come with the response: Server-Timing headers and llama.cpp's ``timings``."""

from __future__ import annotations

import pytest

from pytest_latency.telemetry.headers import parse_llamacpp_timings, parse_server_timing

TID = "0af7651916cd43dd8448eb211c80319c"


def test_server_timing_header() -> None:
    header = 'queue;dur=12.3, prefill;dur=40;desc="a, b; c", decode;dur=900, cache;desc=hit'
    timings = parse_server_timing(header, TID)
    assert timings is not None
    assert timings.source == "server-timing"
    assert timings.queue_wait_s == pytest.approx(0.0123)
    assert timings.prefill_s == pytest.approx(0.040)
    assert timings.decode_s == pytest.approx(0.900)
    assert timings.server_ttft_s is None


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ("Queue;dur=5", 0.005),
        ('queue;desc=x;dur="7"', 0.007),
        ("queue;dur=-1, queue;dur=2", 0.002),
        ("queue;dur=1, queue;dur=2", 0.001),
    ],
)
def test_server_timing_queue_variants(header: str, expected: float) -> None:
    timings = parse_server_timing(header, TID)
    assert timings is not None
    assert timings.queue_wait_s == pytest.approx(expected)


@pytest.mark.parametrize("header", ["", "cache;desc=hit", "queue", "queue;dur=abc", ";;,"])
def test_server_timing_without_known_durations(header: str) -> None:
    assert parse_server_timing(header, TID) is None


def test_llamacpp_timings() -> None:
    timings = parse_llamacpp_timings(
        {
            "prompt_n": 180,
            "cache_n": 20,
            "prompt_ms": 35.5,
            "predicted_n": 64,
            "predicted_ms": 820.0,
            "predicted_per_token_ms": 12.8,
        },
        TID,
    )
    assert timings is not None
    assert timings.source == "llamacpp:timings"
    assert timings.prefill_s == pytest.approx(0.0355)
    assert timings.decode_s == pytest.approx(0.820)
    assert (timings.prompt_tokens, timings.completion_tokens) == (200, 64)
    assert timings.queue_wait_s is None  # llama.cpp measures no queue wait


def test_llamacpp_timings_empty_or_junk() -> None:
    assert parse_llamacpp_timings({}, TID) is None
    assert parse_llamacpp_timings({"prompt_ms": "x", "predicted_n": True}, TID) is None
