"""Pure unit tests: SSE decoding, chunk interpretation, error texts, trace context, API."""

from __future__ import annotations

import json
import random
import re

import pytest

import pytest_latency.driver as driver
from pytest_latency.driver.errors import (
    MAX_ERROR_CHARS,
    error_event_text,
    exception_text,
    http_error_text,
)
from pytest_latency.driver.sse import ErrorEvent, MalformedStream, SSEDecoder, StreamState
from pytest_latency.driver.tracecontext import ClientSpans

STREAM = (
    b": a comment first\r\n"
    b"event: message\r\n"
    b"id: 7\r\n"
    b'data: {"a": 1}\r\n'
    b"\r\n"
    b"retry: 1000\n"
    b"data: line one\n"
    b"data:line two\n"
    b"data\n"
    b"\n"
    b":keepalive\r"
    b"data: cr only\r"
    b"\r"
    b"\n"  # a lone blank line after the dispatch: dispatches nothing
    b"data: [DONE]\n\n"
)
EXPECTED = [b'{"a": 1}', b"line one\nline two\n", b"cr only", b"[DONE]"]


def decode(pieces: list[bytes]) -> list[bytes]:
    decoder = SSEDecoder()
    events: list[bytes] = []
    for piece in pieces:
        events.extend(decoder.feed(piece))
    return events + decoder.flush()


def test_decoder_whole_stream() -> None:
    assert decode([STREAM]) == EXPECTED


def test_decoder_every_split_point() -> None:
    for cut in range(len(STREAM) + 1):
        assert decode([STREAM[:cut], STREAM[cut:]]) == EXPECTED, cut


def test_decoder_random_chunkings_and_single_bytes() -> None:
    rng = random.Random(3)
    for _ in range(200):
        cuts = sorted(rng.sample(range(1, len(STREAM)), rng.randint(1, 12)))
        pieces = [STREAM[a:b] for a, b in zip([0, *cuts], [*cuts, len(STREAM)], strict=True)]
        assert decode(pieces) == EXPECTED
    assert decode([bytes([byte]) for byte in STREAM]) == EXPECTED


def test_decoder_crlf_split_across_reads_is_one_line_end() -> None:
    # "data: a\r" | "\ndata: b\r\n\r\n": the \n pairs with the \r, so a and b are one event
    assert decode([b"data: a\r", b"\ndata: b\r\n\r\n"]) == [b"a\nb"]


def test_decoder_bom_and_lenient_end() -> None:
    assert decode([b"\xef\xbb\xbfdata: x\n\n"]) == [b"x"]
    assert decode([b"data: [DONE]\n"]) == [b"[DONE]"]  # no closing blank line
    assert decode([b"data: [DONE]"]) == [b"[DONE]"]  # not even a line end
    assert decode([b": only a comment\n\n", b""]) == []


def test_decoder_events_returned_as_soon_as_complete() -> None:
    decoder = SSEDecoder()
    assert decoder.feed(b'data: {"x"') == []
    assert decoder.feed(b": 1}\n") == []
    assert decoder.feed(b"\n") == [b'{"x": 1}']


def chunk(**choice: object) -> bytes:
    return json.dumps({"choices": [choice]}).encode()


def test_stream_state_content_rules() -> None:
    state = StreamState([])
    state.feed(chunk(delta={"role": "assistant"}), 1_000_000_000)  # role only: no token
    state.feed(chunk(delta={"role": "assistant", "content": ""}), 1_100_000_000)  # empty
    state.feed(chunk(delta={"content": None}), 1_150_000_000)
    assert state.first_ns is None and state.chunks == 0
    state.feed(chunk(delta={"reasoning_content": "hmm"}), 1_200_000_000)  # counts
    state.feed(chunk(delta={"reasoning": "so"}), 1_250_000_000)  # counts
    state.feed(chunk(delta={"content": "Hi"}), 1_290_000_000)
    state.feed(chunk(delta={"content": "!"}, finish_reason="stop"), 1_300_000_000)
    assert state.first_ns == 1_200_000_000
    assert state.gaps == pytest.approx([0.05, 0.04, 0.01])
    assert state.chunks == 4 and state.finished and not state.done
    state.feed(json.dumps({"choices": [], "usage": {"completion_tokens": 9}}).encode(), 0)
    state.feed(b"[DONE]", 1_400_000_000)
    state.feed(b"not json after done is ignored", 0)
    assert state.usage_tokens == 9 and state.done


def test_stream_state_completions_text_and_odd_usage() -> None:
    state = StreamState([])
    state.feed(chunk(text=""), 5)
    state.feed(chunk(text="Once"), 10)
    state.feed(b"", 11)  # an empty data line is ignored
    state.feed(json.dumps({"choices": [], "usage": {"completion_tokens": True}}).encode(), 12)
    assert state.first_ns == 10 and state.chunks == 1 and state.usage_tokens is None


@pytest.mark.parametrize(
    ("data", "error"),
    [
        (b"{not json", MalformedStream),
        (b'{"choices": "abc"}', MalformedStream),
        (b"[1, 2]", MalformedStream),
        (b'{"error": {"message": "overloaded", "code": 503}}', ErrorEvent),
        (b'{"object": "error", "message": "bad"}', ErrorEvent),
    ],
)
def test_stream_state_errors(data: bytes, error: type[Exception]) -> None:
    with pytest.raises(error):
        StreamState([]).feed(data, 0)


PROMPT = "Summarise the quarterly report of the Zephyr Lighthouse Company please"


def test_error_texts_are_short_and_never_echo_the_prompt() -> None:
    body = json.dumps({"error": {"message": "boom", "type": "server"}}).encode()
    assert http_error_text(500, body, PROMPT) == "HTTP 500: boom"
    assert http_error_text(429, b"", PROMPT) == "HTTP 429"
    assert http_error_text(400, b'{"detail": "too   many\\n tokens"}', PROMPT) == (
        "HTTP 400: too many tokens"
    )
    echoed = json.dumps({"message": f"prompt too long: '{PROMPT[5:40]}...'"}).encode()
    text = http_error_text(400, echoed, PROMPT)
    assert "redacted" in text and PROMPT[5:40] not in text
    long = http_error_text(500, b"x" * 10_000, PROMPT)
    assert len(long) <= len("HTTP 500: ") + MAX_ERROR_CHARS and long.endswith("…")
    event = error_event_text({"error": {"message": f"failed on {PROMPT}"}}, PROMPT)
    assert PROMPT not in event and "redacted" in event
    assert exception_text(ConnectionRefusedError(111, "Connection refused")).startswith(
        "ConnectionRefusedError: "
    )


def test_traceparent_format_and_randomness() -> None:
    seen = set()
    spans = ClientSpans()
    for _ in range(100):
        headers: dict[str, str] = {}
        span, trace_id = spans.start(0, headers, "chat m")
        span.end()
        header = headers["traceparent"]
        assert re.fullmatch(r"[0-9a-f]{32}", trace_id)
        # Flags: sampled (01), plus W3C level 2's random-trace-id bit (02) from the SDK.
        match = re.fullmatch(rf"00-{trace_id}-[0-9a-f]{{16}}-([0-9a-f]{{2}})", header)
        assert match and int(match.group(1), 16) & 1
        seen.add(trace_id)
    assert len(seen) == 100


def test_public_api() -> None:
    for name in driver.__all__:
        assert getattr(driver, name) is not None
    assert {"Target", "DriveResult", "drive", "run_plan"} <= set(driver.__all__)
    target = driver.Target("http://127.0.0.1:1/", "m", headers={"authorization": "Bearer s3cr3t"})
    assert target.url == "http://127.0.0.1:1/v1/chat/completions"
    assert "s3cr3t" not in repr(target)
    with pytest.raises(ValueError, match="api"):
        driver.Target("http://127.0.0.1:1", "m", api="embeddings")  # type: ignore[arg-type]


def test_run_aborted_names_the_leaf_a_task_group_wrapped() -> None:
    from pytest_latency.driver import RunAborted
    from pytest_latency.driver.client import DriveResult

    cause = ValueError("timeout")
    aborted = RunAborted(DriveResult([], 0.0, 0.0, 0), BaseExceptionGroup("g", [cause]))
    assert aborted.cause is cause and str(aborted) == "latency run stopped by ValueError"
    two = BaseExceptionGroup("g", [cause, KeyError("k")])
    assert RunAborted(DriveResult([], 0.0, 0.0, 0), two).cause is two  # nothing to pick
