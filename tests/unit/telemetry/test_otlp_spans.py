"""Span parsers: vLLM / generic gen_ai, TGI durations, SGLang slices, merging, ignoring."""

from __future__ import annotations

import math

import pytest

from pytest_latency.telemetry.spans import (
    SGLANG_SCOPE,
    parse_export_request,
    parse_rust_duration,
    parse_span,
    trace_id_hex,
)
from pytest_latency.telemetry.timings import ServerTimings
from tests.helpers.otlp_helpers import VLLM_ATTRS, make_request, make_span, new_trace_id


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("12.345ms", 0.012345),
        ("1.2s", 1.2),
        ("1s", 1.0),
        ("0ns", 0.0),
        ("15ns", 15e-9),
        ("850\u00b5s", 850e-6),  # Rust's micro sign
        ("3.2\u00b5s", 3.2e-6),
        ("3.2\u03bcs", 3.2e-6),  # Greek mu
        ("3.2us", 3.2e-6),
        ("100.000001ms", 0.100000001),
        ("3600.5s", 3600.5),
        ('"12ms"', 0.012),  # a Debug-quoted string
        ("  7ms ", 0.007),
    ],
)
def test_rust_duration_parses(text: str, seconds: float) -> None:
    value = parse_rust_duration(text)
    assert value is not None
    assert math.isclose(value, seconds, rel_tol=1e-12, abs_tol=1e-15)


@pytest.mark.parametrize("text", ["", "ms", "12", "12 minutes", "-3ms", "1.2.3s", "12m", "NaNs"])
def test_rust_duration_rejects(text: str) -> None:
    assert parse_rust_duration(text) is None


def test_trace_id_hex() -> None:
    assert trace_id_hex(bytes(range(16))) == "000102030405060708090a0b0c0d0e0f"
    assert trace_id_hex(bytes(16)) is None  # all zero: invalid in W3C trace context
    assert trace_id_hex(b"\x01" * 8) is None


def test_vllm_span() -> None:
    tid = new_trace_id()
    timings = parse_span(make_span(tid, "llm_request", VLLM_ATTRS), "vllm.llm_engine")
    assert timings == ServerTimings(
        trace_id=tid,
        source="otlp:vllm",
        queue_wait_s=0.125,
        prefill_s=0.25,
        decode_s=1.75,
        server_ttft_s=0.5,
        server_e2e_s=2.5,
        prompt_tokens=200,
        completion_tokens=64,
        inference_s=2.0,
    )


def test_gen_ai_attributes_recognised_on_any_span() -> None:
    tid = new_trace_id()
    attrs = {"gen_ai.latency.time_in_queue": 0.01, "gen_ai.usage.output_tokens": 9}
    timings = parse_span(make_span(tid, "gateway.request", attrs))
    assert timings is not None
    assert timings.source == "otlp:gen_ai"
    assert timings.queue_wait_s == 0.01
    assert timings.completion_tokens == 9
    assert timings.prefill_s is None  # not reported, not invented


def test_bad_attribute_values_are_dropped_not_guessed() -> None:
    tid = new_trace_id()
    attrs: dict[str, str | bool | int | float] = {
        "gen_ai.latency.time_in_queue": -1.0,
        "gen_ai.latency.time_to_first_token": float("nan"),
        "gen_ai.latency.e2e": "2.5",  # numeric string: accepted
        "gen_ai.latency.time_in_model_prefill": True,
        "gen_ai.usage.prompt_tokens": 3.5,
        "gen_ai.usage.completion_tokens": "12",
    }
    timings = parse_span(make_span(tid, "llm_request", attrs))
    assert timings is not None
    assert (timings.queue_wait_s, timings.server_ttft_s, timings.prefill_s) == (None, None, None)
    assert timings.server_e2e_s == 2.5
    assert timings.prompt_tokens is None
    assert timings.completion_tokens == 12


def test_tgi_request_span() -> None:
    tid = new_trace_id()
    attrs = {
        "total_time": "1.5s",
        "validation_time": "250\u00b5s",
        "queue_time": "12.345ms",
        "inference_time": "1.4s",
        "time_per_token": "14ms",
        "seed": "None",
    }
    timings = parse_span(make_span(tid, "generate_stream", attrs))
    assert timings is not None
    assert timings.source == "otlp:tgi"
    assert timings.queue_wait_s == pytest.approx(0.012345)
    assert timings.inference_s == pytest.approx(1.4)
    assert timings.server_e2e_s == pytest.approx(1.5)
    # TGI does not split inference into prefill and decode: neither is invented.
    assert timings.prefill_s is None
    assert timings.decode_s is None


def test_sglang_slices_use_span_durations() -> None:
    tid = new_trace_id()
    waiting = make_span(tid, "prefill_waiting", duration_ns=30_000_000)
    forward = make_span(tid, "prefill_forward", duration_ns=45_000_000)
    batch = parse_export_request(make_request([waiting, forward], SGLANG_SCOPE))
    timings = batch.timings[tid]
    assert timings.source == "otlp:sglang"
    assert timings.queue_wait_s == pytest.approx(0.030)
    assert timings.prefill_s == pytest.approx(0.045)
    assert batch.ignored == 0


def test_sglang_gen_ai_prefill_is_not_trusted() -> None:
    """SGLang computes time_in_model_prefill from dispatch: it contains queue wait."""
    tid = new_trace_id()
    root = make_span(
        tid,
        "Req 1a2b3c4d",
        {
            "rid": "1a2b3c4d",
            "module": "sglang::request",
            "gen_ai.latency.time_to_first_token": 0.2,
            "gen_ai.latency.e2e": 1.0,
            "gen_ai.latency.time_in_model_prefill": 0.19,
            "gen_ai.latency.time_in_model_decode": 0.8,
            "gen_ai.latency.time_in_model_inference": 0.99,
        },
    )
    forward = make_span(tid, "prefill_forward", duration_ns=50_000_000)
    timings = parse_export_request(make_request([root, forward], SGLANG_SCOPE)).timings[tid]
    assert timings.server_ttft_s == 0.2
    assert timings.decode_s == 0.8
    assert timings.inference_s is None
    assert timings.prefill_s == pytest.approx(0.05)  # from the slice, not the attribute


def test_unknown_spans_are_ignored_and_counted() -> None:
    tid = new_trace_id()
    spans = [
        make_span(tid, "POST /v1/chat/completions", {"http.status_code": 200}),
        make_span(tid, "queued"),
        make_span(tid, "llm_request", VLLM_ATTRS),
        make_span("00" * 16, "llm_request", VLLM_ATTRS),  # invalid trace id
    ]
    batch = parse_export_request(make_request(spans))
    assert (batch.spans, batch.ignored) == (4, 3)
    assert list(batch.timings) == [tid]


def test_several_spans_of_one_trace_merge() -> None:
    tid, other = new_trace_id(), new_trace_id()
    spans = [
        make_span(tid, "generate", {"queue_time": "5ms"}),
        make_span(tid, "gateway", {"gen_ai.latency.time_to_first_token": 0.3}),
        make_span(tid, "generate", {"queue_time": "999ms", "inference_time": "1s"}),
        make_span(other, "llm_request", {"gen_ai.latency.e2e": 4.0}),
    ]
    batch = parse_export_request(make_request(spans))
    merged = batch.timings[tid]
    assert merged.queue_wait_s == pytest.approx(0.005)  # first value wins
    assert merged.server_ttft_s == pytest.approx(0.3)
    assert merged.inference_s == pytest.approx(1.0)
    assert merged.source == "otlp:tgi+otlp:gen_ai"
    assert batch.timings[other].server_e2e_s == 4.0


def test_merged_rules() -> None:
    a = ServerTimings(trace_id="ab" * 16, source="otlp:vllm", queue_wait_s=0.1)
    b = ServerTimings(trace_id="ab" * 16, source="server-timing", queue_wait_s=9.0, decode_s=1.0)
    merged = a.merged(b)
    assert (merged.queue_wait_s, merged.decode_s) == (0.1, 1.0)
    assert merged.source == "otlp:vllm+server-timing"
    assert a.merged(ServerTimings(trace_id="ab" * 16, source="x", queue_wait_s=5.0)) is a
    with pytest.raises(ValueError, match="cannot merge"):
        a.merged(ServerTimings(trace_id="cd" * 16, source="otlp:vllm"))
    assert ServerTimings(trace_id="ab" * 16, source="x").is_empty
    assert not a.is_empty
    assert a.as_dict()["queue_wait_s"] == 0.1
