"""The OpenAI-compatible surface over real loopback HTTP: shapes, validation, metrics."""

from __future__ import annotations

import json
import logging
import re
from typing import Any

import httpx
import pytest

from pytest_latency.sim import SimServer

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
TRACEPARENT = f"00-{TRACE_ID}-00f067aa0ba902b7-01"

# Short prompts fill no prefix-cache block: nothing is ever cached.
NO_CACHE_HIT = {"prompt_tokens_details": {"cached_tokens": 0}}


def chat(max_tokens: object = 5, **extra: Any) -> dict[str, Any]:
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": "one two three"},
    ]
    return {"model": "sim-tiny", "messages": messages, "max_tokens": max_tokens, **extra}


def sse_events(text: str) -> list[Any]:
    """Parse an SSE body strictly: every event is one ``data:`` line and a blank line."""
    assert text.endswith("\n\n"), "the stream must end with a complete event"
    events: list[Any] = []
    for block in text[:-2].split("\n\n"):
        assert block.startswith("data: ") and "\n" not in block, block
        payload = block[len("data: ") :]
        events.append(payload if payload == "[DONE]" else json.loads(payload))
    return events


def test_chat_stream_shape(client: httpx.Client) -> None:
    body = chat(max_tokens=4, stream=True, stream_options={"include_usage": True})
    response = client.post("/v1/chat/completions", json=body)
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/event-stream")
    events = sse_events(response.text)
    assert events[-1] == "[DONE]"
    role, *tokens, finish, usage_chunk, _ = events
    assert role["object"] == "chat.completion.chunk"
    assert role["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    assert len(tokens) == 4
    for chunk in tokens:
        (choice,) = chunk["choices"]
        assert choice["finish_reason"] is None
        assert set(choice["delta"]) == {"content"} and choice["delta"]["content"].strip()
    assert finish["choices"][0]["finish_reason"] == "length"
    assert finish["choices"][0]["delta"] == {}
    assert usage_chunk["choices"] == []
    assert usage_chunk["usage"] == {
        "prompt_tokens": 5,
        "completion_tokens": 4,
        "total_tokens": 9,
        **NO_CACHE_HIT,
    }
    assert len({event["id"] for event in events[:-1]}) == 1


def test_chat_stream_without_usage_has_no_usage_chunk(client: httpx.Client) -> None:
    events = sse_events(client.post("/v1/chat/completions", json=chat(3, stream=True)).text)
    assert all("usage" not in event for event in events[:-1])
    assert events[-2]["choices"][0]["finish_reason"] == "length"


def test_completions_stream_shape(client: httpx.Client) -> None:
    body = {"model": "sim-tiny", "prompt": "a b c d e f", "max_tokens": 3, "stream": True,
            "stream_options": {"include_usage": True}}  # fmt: skip
    events = sse_events(client.post("/v1/completions", json=body).text)
    *tokens, finish, usage_chunk, done = events
    assert done == "[DONE]"
    assert [event["object"] for event in tokens] == ["text_completion"] * 3
    assert all(event["choices"][0]["text"].strip() for event in tokens)
    assert finish["choices"][0]["finish_reason"] == "length"
    assert usage_chunk["usage"] == {
        "prompt_tokens": 6,
        "completion_tokens": 3,
        "total_tokens": 9,
        **NO_CACHE_HIT,
    }


@pytest.mark.parametrize("key", ["max_tokens", "max_completion_tokens"])
def test_non_streaming_honours_the_cap_exactly(client: httpx.Client, key: str) -> None:
    body = chat(max_tokens=None) | {key: 17}
    data = client.post("/v1/chat/completions", json=body).json()
    assert data["object"] == "chat.completion"
    (choice,) = data["choices"]
    assert choice["finish_reason"] == "length"
    assert choice["message"]["role"] == "assistant"
    assert len(choice["message"]["content"].split()) == 17
    assert data["usage"] == {
        "prompt_tokens": 5,
        "completion_tokens": 17,
        "total_tokens": 22,
        **NO_CACHE_HIT,
    }


def test_completions_non_streaming(client: httpx.Client) -> None:
    body = {"prompt": "word " * 250, "max_tokens": 9}  # model omitted: the served one
    data = client.post("/v1/completions", json=body).json()
    assert data["object"] == "text_completion"
    assert len(data["choices"][0]["text"].split()) == 9
    assert data["usage"]["prompt_tokens"] == 250


def test_ignore_eos_false_stops_early_between_min_and_max(client: httpx.Client) -> None:
    lengths = []
    for _ in range(6):
        body = chat(max_tokens=40, min_tokens=5, ignore_eos=False)
        data = client.post("/v1/chat/completions", json=body).json()
        n = data["usage"]["completion_tokens"]
        assert 5 <= n <= 40
        assert data["choices"][0]["finish_reason"] == ("length" if n == 40 else "stop")
        lengths.append(n)
    assert min(lengths) < 40  # seeded; all six at the cap would mean no early stop


BAD_BODIES = [
    ("not json", b"{nope"),
    ("array body", b"[1, 2]"),
    ("missing messages", {"model": "sim-tiny"}),
    ("empty messages", {"messages": []}),
    ("message without role", {"messages": [{"content": "hi"}]}),
    ("content wrong type", {"messages": [{"role": "user", "content": 5}]}),
    ("zero max_tokens", chat(max_tokens=0)),
    ("negative max_tokens", chat(max_tokens=-3)),
    ("string max_tokens", chat(max_tokens="10")),
    ("bool max_tokens", chat(max_tokens=True)),
    ("float max_tokens", chat(max_tokens=2.5)),
    ("string stream", chat(stream="yes")),
    ("stream_options without stream", chat(stream_options={"include_usage": True})),
    ("min above max", chat(max_tokens=3, min_tokens=4)),
    ("two choices", chat(n=2)),
    ("over context", chat(max_tokens=10_000)),
    ("model not a string", chat(model=7)),
]


@pytest.mark.parametrize(("case", "body"), BAD_BODIES, ids=[case for case, _ in BAD_BODIES])
def test_invalid_chat_requests_get_400(client: httpx.Client, case: str, body: object) -> None:
    if isinstance(body, bytes):
        response = client.post("/v1/chat/completions", content=body)
    else:
        response = client.post("/v1/chat/completions", json=body)
    assert response.status_code == 400, case
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert isinstance(error["message"], str) and error["message"]


@pytest.mark.parametrize("prompt", [None, 42, ["a", "b"]])
def test_invalid_completion_prompt_gets_400(client: httpx.Client, prompt: object) -> None:
    body = {"max_tokens": 3} if prompt is None else {"prompt": prompt, "max_tokens": 3}
    response = client.post("/v1/completions", json=body)
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"


def test_unknown_model_gets_404_and_models_lists_the_served_one(client: httpx.Client) -> None:
    response = client.post("/v1/chat/completions", json=chat(model="gpt-4o"))
    assert response.status_code == 404
    error = response.json()["error"]
    assert error["code"] == "model_not_found" and "gpt-4o" in error["message"]
    models = client.get("/v1/models").json()
    assert models["object"] == "list"
    assert [model["id"] for model in models["data"]] == ["sim-tiny"]


def parse_metrics(text: str) -> dict[str, float]:
    """Prometheus text format: HELP/TYPE comments, then ``name{labels} value`` samples."""
    samples: dict[str, float] = {}
    typed: set[str] = set()
    sample = re.compile(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{[^}]*\})? (\S+)$")
    for line in text.strip().splitlines():
        if line.startswith("# TYPE "):
            typed.add(line.split()[2])
            continue
        if line.startswith("# HELP "):
            continue
        match = sample.match(line)
        assert match is not None, f"unparsable metrics line: {line!r}"
        name = match.group(1)
        family = re.sub(r"_(bucket|sum|count)$", "", name)
        assert name in typed or family in typed, f"{name} has no TYPE line"
        samples[name + (match.group(2) or "")] = float(match.group(3))
    return samples


def test_metrics_expose_aggregates_without_request_labels(client: httpx.Client) -> None:
    client.post("/v1/chat/completions", json=chat(max_tokens=3))
    client.post("/v1/chat/completions", json=chat(max_tokens=0))
    response = client.get("/metrics")
    assert response.headers["content-type"].startswith("text/plain")
    metrics = parse_metrics(response.text)
    assert metrics["sim:num_requests_waiting"] == 0
    assert metrics["sim:num_requests_running"] == 0
    assert metrics['sim:requests_total{outcome="ok"}'] >= 1
    assert metrics['sim:requests_total{outcome="invalid"}'] >= 1
    assert metrics["sim:generation_tokens_total"] >= 3
    assert metrics["sim:prompt_tokens_total"] >= 5
    assert metrics["sim:requests_rejected_total"] == 0
    assert metrics["sim:requests_expired_total"] == 0
    count = metrics["sim:request_queue_time_seconds_count"]
    assert count == metrics['sim:request_queue_time_seconds_bucket{le="+Inf"}'] >= 1
    assert "trace" not in response.text and "id=" not in response.text


def test_traceparent_is_kept_per_request_and_logged_at_debug(
    sim: SimServer, client: httpx.Client, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG, logger="pytest_latency.sim")
    headers = {"traceparent": TRACEPARENT}
    assert client.post("/v1/chat/completions", json=chat(3), headers=headers).status_code == 200
    client.post("/v1/chat/completions", json=chat(3), headers={"traceparent": "00-bogus-01"})
    recent = sim.snapshot().recent
    mine, other = recent[-2], recent[-1]
    assert mine.trace_id == TRACE_ID
    assert mine.queue_wait_s is not None and mine.prefill_s is not None
    assert mine.decode_s is not None and mine.decode_s > 0
    assert re.fullmatch(r"[0-9a-f]{32}", other.trace_id) and other.trace_id != TRACE_ID
    assert any(TRACE_ID in record.getMessage() for record in caplog.records)
    assert all(
        record.levelno == logging.DEBUG
        for record in caplog.records
        if TRACE_ID in record.getMessage()
    )


def test_version_names_the_embedded_server_as_vllm_names_itself(sim: SimServer) -> None:
    from pytest_latency.file_format import plugin_version
    from pytest_latency.servers.server_version import read_server_version

    found = read_server_version(sim.url, "sim")
    assert found.version == f"pytest-latency-sim {plugin_version()}"
    assert found.source == "/version"
