"""Reasoning streams (first token vs first answer token) and tokens per chunk reach records."""

from __future__ import annotations

import json

import pytest

from pytest_latency.driver import Target, run_plan
from pytest_latency.driver.httpx_transport import HttpxTransport
from pytest_latency.driver.request import Sender
from pytest_latency.driver.sse import StreamState
from pytest_latency.driver.tracecontext import ClientSpans
from pytest_latency.records import (
    RequestRecord,
    Status,
    baseline_row,
    record_from_dict,
    record_to_dict,
)
from tests.helpers.scripted_server import (
    DONE,
    Script,
    ScriptedServer,
    Step,
    chat_chunk,
    plan_at,
    sse,
)

MS = 1_000_000


def usage_delta(content: dict[str, str], completion_tokens: int) -> bytes:
    """A vLLM chunk with ``continuous_usage_stats``: cumulative usage on every chunk."""
    return sse(
        {
            "choices": [{"index": 0, "delta": content, "finish_reason": None}],
            "usage": {"prompt_tokens": 5, "completion_tokens": completion_tokens},
        }
    )


def fed(*events: tuple[bytes, int]) -> StreamState:
    state = StreamState([])
    for data, at_ns in events:
        body = data.removeprefix(b"data: ").rstrip(b"\n")
        state.feed(body, at_ns)
    return state


def test_reasoning_is_a_first_token_but_not_an_answer_token() -> None:
    state = fed(
        (chat_chunk(role="assistant"), 1 * MS),
        (chat_chunk(reasoning_content="Let"), 10 * MS),
        (chat_chunk(reasoning="me think"), 20 * MS),
        (chat_chunk("Hi"), 50 * MS),
        (chat_chunk("!", finish="stop"), 60 * MS),
    )
    assert (state.first_ns, state.first_reasoning_ns, state.first_answer_ns) == (
        10 * MS,
        10 * MS,
        50 * MS,
    )
    assert (state.chunks, state.reasoning_chunks) == (4, 2)
    assert state.gaps == [0.01, 0.03, 0.01]


def test_a_record_keeps_ttfo_reasoning_tokens_and_duration(server: ScriptedServer) -> None:
    reasoning_usage = sse(
        {
            "choices": [],
            "usage": {
                "prompt_tokens": 5,
                "completion_tokens": 9,
                "completion_tokens_details": {"reasoning_tokens": 7},
            },
        }
    )
    steps = (
        Step(0.00, chat_chunk(reasoning_content="hmm"), "reasoning"),
        Step(0.04, chat_chunk("Answer"), "answer"),
        Step(0.05, chat_chunk(".", finish="stop") + reasoning_usage + DONE),
    )
    server.route("thinker", Script(steps=steps))
    server.route("plain", Script(steps=(Step(0.0, chat_chunk("Hi", finish="stop") + DONE),)))
    thinker = run_plan(plan_at([0.0]), Target(server.url, "thinker")).records[0]
    plain = run_plan(plan_at([0.0]), Target(server.url, "plain")).records[0]
    assert thinker.status is Status.OK and plain.status is Status.OK
    assert thinker.reasoning_tokens == 7  # the server's count, not the one reasoning chunk
    assert thinker.ttft_s is not None and thinker.ttfo_s is not None
    assert thinker.reasoning_s is not None
    exchange = next(iter(server.by_trace().values()))
    written_gap_s = (exchange.instants("answer")[0] - exchange.instants("reasoning")[0]) / 1e9
    assert thinker.reasoning_s == pytest.approx(thinker.ttfo_s - thinker.ttft_s)
    # Each instant is taken on receipt: the client sees at most the server's gap plus
    # its own delivery jitter; generous for a busy machine, far from 0 or 2x.
    assert 0.5 * written_gap_s <= thinker.reasoning_s <= written_gap_s + 0.5
    assert plain.ttfo_s == plain.ttft_s  # nothing before the answer: the same number
    assert (plain.reasoning_tokens, plain.reasoning_s, plain.chunk_tokens) == (None, None, None)


def test_reasoning_tokens_fall_back_to_counted_reasoning_chunks() -> None:
    state = fed(
        (chat_chunk(reasoning_content="a"), 1 * MS),
        (chat_chunk(reasoning_content="b"), 2 * MS),
        (chat_chunk(reasoning="c"), 3 * MS),
        (chat_chunk("x", finish="stop"), 4 * MS),
    )
    assert state.reasoning_usage is None and state.reasoning_chunks == 3


def test_continuous_usage_gives_tokens_per_content_chunk(server: ScriptedServer) -> None:
    steps = (
        Step(0.0, usage_delta({"role": "assistant"}, 0)),  # no content: not a chunk
        Step(0.0, usage_delta({"content": "abc"}, 3)),
        Step(0.0, usage_delta({"content": "de"}, 5)),
        Step(0.0, usage_delta({"content": "f"}, 6)),
        Step(0.0, sse({"choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 6}})),
        Step(0.0, chat_chunk(finish="length") + DONE),
    )
    server.route("vllm", Script(steps=steps))
    target = Target(server.url, "vllm", continuous_usage_stats=True)
    record = run_plan(plan_at([0.0]), target).records[0]
    assert record.status is Status.OK
    assert record.chunk_tokens == [3, 2, 1]
    assert record.output_tokens == 6
    (exchange,) = server.by_trace().values()
    assert exchange.body["stream_options"] == {
        "include_usage": True,
        "continuous_usage_stats": True,
    }


def test_usage_on_only_some_content_chunks_leaves_chunk_tokens_unknown() -> None:
    state = fed(
        (usage_delta({"content": "ab"}, 2), 1 * MS),
        (chat_chunk("c"), 2 * MS),
        (usage_delta({"content": "d"}, 4), 3 * MS),
    )
    assert state.chunk_tokens is None


def test_the_body_asks_for_continuous_usage_only_when_told() -> None:
    def options(continuous: bool) -> object:
        sender = Sender(
            transport=HttpxTransport.__new__(HttpxTransport),
            headers={},
            model="m",
            chat=True,
            extra_body={},
            timeout_s=5.0,
            spans=ClientSpans(),
            continuous_usage_stats=continuous,
        )
        (request,) = plan_at([0.0]).requests
        return json.loads(sender.body(request))["stream_options"]

    assert options(False) == {"include_usage": True}  # llama.cpp, the embedded server
    assert options(True) == {"include_usage": True, "continuous_usage_stats": True}


def test_the_new_fields_round_trip_and_old_rows_read_as_null() -> None:
    record = RequestRecord(id=1, phase="steady", intended_s=0.5, input_tokens=8)
    record.status = Status.OK
    record.ttfo_s, record.reasoning_tokens, record.reasoning_s = 0.25, 12, 0.2
    record.chunk_tokens = [3, 3, 2]
    again = record_from_dict(json.loads(json.dumps(record_to_dict(record))))
    assert (again.ttfo_s, again.reasoning_tokens, again.reasoning_s, again.chunk_tokens) == (
        0.25,
        12,
        0.2,
        [3, 3, 2],
    )
    kept = record_from_dict(baseline_row(record_to_dict(record)))
    assert (kept.ttfo_s, kept.reasoning_tokens, kept.chunk_tokens) == (0.25, 12, [3, 3, 2])
    record.reasoning_tokens = record.reasoning_s = record.chunk_tokens = None
    assert "chunk_tokens" not in baseline_row(record_to_dict(record))  # null: left out
    old = {"id": 1, "phase": "steady", "intended_s": 0.0, "input_tokens": 5, "status": "ok"}
    back = record_from_dict(old)
    assert (back.ttfo_s, back.reasoning_tokens, back.reasoning_s, back.chunk_tokens) == (
        (None,) * 4
    )
    with pytest.raises(ValueError, match="chunk_tokens must be a list of integers"):
        record_from_dict({**old, "chunk_tokens": [1, 2.5]})
    with pytest.raises(ValueError, match="chunk_tokens must be a list of integers"):
        record_from_dict({**old, "chunk_tokens": [True]})
