"""The byte scan that skips JSON decoding never changes a record.

Reference: the same :class:`StreamState` with ``texts`` given, which decodes every payload
in full (the scan is off then). The fast and the reference timelines must agree on
every field a record takes, for recorded streams of every server shape we know, cut at
every byte boundary and delivered all at once, and for generated chunks; and over a real
loopback socket the hot path (httptools, byte scan) keeps the same records as the httpx
path.
"""

from __future__ import annotations

import asyncio
import itertools
import json

import httpx
from hypothesis import given, settings
from hypothesis import strategies as st

from pytest_latency.driver import Run, Target
from pytest_latency.driver.chunk_scan import fits, plain_answer, shape_of
from pytest_latency.driver.limits import ResponseLimits
from pytest_latency.driver.sinks import StreamSink
from pytest_latency.driver.sse import StreamError, StreamState
from pytest_latency.records import RequestRecord
from tests.helpers.scripted_server import Script, ScriptedServer, Step, plan_at


def event(obj: object, separators: tuple[str, str] = (", ", ": ")) -> bytes:
    return b"data: " + json.dumps(obj, separators=separators).encode() + b"\n\n"


def delta_chunk(
    delta: dict[str, object], finish: str | None = None, **extra: object
) -> dict[str, object]:
    return {
        "object": "chat.completion.chunk",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **extra,
    }


USAGE = {"prompt_tokens": 5, "completion_tokens": 4}
# One stream per server shape; each mixes plain answers with chunks that need decoding.
STREAMS = {
    "vllm": b"".join(
        [
            event(delta_chunk({"role": "assistant", "content": ""})),
            *(event(delta_chunk({"content": t}), separators=(",", ":")) for t in "abc"),
            event(delta_chunk({"content": "d"}, "length"), separators=(",", ":")),
            event({"choices": [], "usage": USAGE}),
            b"data: [DONE]\n\n",
        ]
    ),
    "sglang_nulls": b"".join(
        event(delta_chunk({"role": None, "content": t, "reasoning_content": None}, usage=None))
        for t in ("x", "y", "z")
    )
    + b"data: [DONE]\n\n",
    "reasoning": b"".join(
        [
            event(delta_chunk({"reasoning_content": "think"})),
            event(delta_chunk({"reasoning": "more"})),
            event(delta_chunk({"content": "ans"})),
            event(delta_chunk({"content": "wer"})),
            event(delta_chunk({}, "stop", usage=USAGE)),
            b"data: [DONE]\n\n",
        ]
    ),
    "continuous_usage": b"".join(
        event(delta_chunk({"content": t}, usage={"completion_tokens": n}))
        for n, t in enumerate(["ab", "c", "de"], start=2)
    )
    + b"data: [DONE]\n\n",
    "tricky_content": b"".join(
        event(delta_chunk({"content": t}))
        for t in ['"usage": 1', '{"content": "x"}', "\\", '"', "}", "[", "data: x", "\n\n"]
    )
    + event(delta_chunk({"content": "z"}, "stop"))
    + b"data: [DONE]\n\n",
    "logprobs": b"".join(
        event(
            {
                "choices": [
                    {
                        "index": 0,
                        "delta": {"content": t},
                        "logprobs": {"content": [{"token": t, "logprob": -0.1}]},
                        "finish_reason": None,
                    }
                ]
            }
        )
        for t in "pq"
    )
    + b"data: [DONE]\n\n",
    "two_choices": b"".join(
        event(
            {
                "choices": [
                    {"index": 0, "delta": {"content": "a"}, "finish_reason": None},
                    {"index": 1, "delta": {"content": "b"}, "finish_reason": "stop"},
                ]
            }
        )
        for _ in range(2)
    ),
    "llamacpp_timings": event(delta_chunk({"content": "a"}))
    + event(delta_chunk({"content": "b"}))
    + event(delta_chunk({}, "stop", timings={"prompt_ms": 1.5, "predicted_ms": 9.0}))
    + b"data: [DONE]\n\n",
    "error_midway": event(delta_chunk({"content": "a"}))
    + event(delta_chunk({"content": "b"}))
    + event({"error": {"message": "boom", "code": 500}}),
    "truncated_json": event(delta_chunk({"content": "a"}))
    + b'data: {"choices": [{"index": 0, "delta": {"content": "b"}, "finish_reason": null}\n\n',
    # Long enough that whole reads of several plain events of one frame come up (the
    # read-at-once path, chunk_scan.plain_events), with CRLF and a comment between.
    "many_plain": event(delta_chunk({"role": "assistant", "content": ""}))
    + b"".join(event(delta_chunk({"content": t}), separators=(",", ":")) for t in "abcdefgh")
    + b": keep-alive\n\n"
    + b"".join(event(delta_chunk({"content": t}), separators=(",", ":")) for t in "ijk")
    + event(delta_chunk({"content": "l"}, "stop"), separators=(",", ":"))
    + b"data: [DONE]\n\n",
    "many_plain_crlf": b"".join(
        event(delta_chunk({"content": t}), separators=(",", ":")) for t in "abcdef"
    ).replace(b"\n", b"\r\n")
    + b"data: [DONE]\r\n\r\n",
    "completions": b"".join(
        event({"choices": [{"index": 0, "text": t, "finish_reason": None}]}) for t in "uv"
    )
    + b"data: [DONE]\n\n",
}


def timeline(state: StreamState) -> tuple[object, ...]:
    return (
        state.first_ns,
        state.first_answer_ns,
        state.first_reasoning_ns,
        list(state.gaps),
        state.chunks,
        state.reasoning_chunks,
        state.chunk_tokens,
        state.usage_tokens,
        state.reasoning_usage,
        state.prompt_tokens,
        state.timings,
        state.finished,
        state.done,
    )


def read(pieces: list[bytes], reference: bool) -> tuple[object, ...]:
    """Feed ``pieces`` as successive socket reads (read i at i ms); the sink's outcome."""
    record = RequestRecord(id=0, phase="p", intended_s=0.0, input_tokens=1)
    sink = StreamSink(record, 0, 0, ResponseLimits(), [] if reference else None)
    for index, piece in enumerate(pieces):
        if sink(piece, (index + 1) * 1_000_000):
            break
    sink.flush()
    error = None if sink.error is None else (type(sink.error), str(sink.error))
    return (*timeline(sink.state), error, record.status, record.end_s)


def test_every_stream_reads_the_same_whole_and_cut_at_every_byte() -> None:
    for name, body in STREAMS.items():
        assert read([body], reference=False) == read([body], reference=True), name
        for cut in range(1, len(body)):
            pieces = [body[:cut], body[cut:]]
            assert read(pieces, reference=False) == read(pieces, reference=True), (name, cut)


def test_every_stream_reads_the_same_one_event_per_read_and_byte_by_byte() -> None:
    for name, body in STREAMS.items():
        events = [part + b"\n\n" for part in body.split(b"\n\n") if part]
        assert read(events, reference=False) == read(events, reference=True), name
        singles = [body[i : i + 1] for i in range(len(body))]
        assert read(singles, reference=False) == read(singles, reference=True), name


def test_every_stream_reads_the_same_in_reads_of_several_whole_events() -> None:
    for name, body in STREAMS.items():
        events = [part + b"\n\n" for part in body.split(b"\n\n") if part]
        for size in (2, 3, 4):
            for offset in range(size):
                cuts = [0, *range(offset or size, len(events), size), len(events)]
                reads = [b"".join(events[a:b]) for a, b in itertools.pairwise(cuts) if b > a]
                assert read(reads, reference=False) == read(reads, reference=True), (name, size)


def test_the_scan_takes_the_plain_chunks_and_leaves_the_rest() -> None:
    plain = event(delta_chunk({"content": "tok"}), separators=(",", ":"))[6:-2]
    assert plain_answer(plain)
    assert plain_answer(event(delta_chunk({"content": "t", "reasoning_content": None}))[6:-2])
    for needs_decoding in (
        delta_chunk({"content": ""}),
        delta_chunk({"content": "t"}, "stop"),
        delta_chunk({"content": "t"}, usage=USAGE),
        delta_chunk({"reasoning_content": "t"}),
        delta_chunk({"content": "t", "reasoning": "r"}),
        delta_chunk({"content": None}),
        {"error": {"message": "content"}},
    ):
        assert not plain_answer(event(needs_decoding)[6:-2]), needs_decoding


TEXT = st.text(alphabet=st.sampled_from('ab"\\{}[]: ,\n\u00e9'), max_size=8)
DELTA = st.fixed_dictionaries(
    {},
    optional={
        "role": st.sampled_from(["assistant", None]),
        "content": st.one_of(st.none(), TEXT),
        "reasoning_content": st.one_of(st.none(), TEXT),
        "reasoning": st.one_of(st.none(), TEXT),
    },
)
CHUNK = st.builds(
    lambda delta, finish, usage, separators: json.dumps(
        {
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
            **({} if usage is None else {"usage": usage}),
        },
        separators=separators,
    ).encode(),
    DELTA,
    st.sampled_from([None, "stop", "length"]),
    st.one_of(st.none(), st.just(USAGE)),
    st.sampled_from([(",", ":"), (", ", ": ")]),
)


@settings(max_examples=300, deadline=None)
@given(st.lists(CHUNK, min_size=1, max_size=6))
def test_generated_chunks_read_the_same_either_way(payloads: list[bytes]) -> None:
    fast, full = StreamState([]), StreamState([], [])
    first = json.dumps(delta_chunk({"content": "first"})).encode()  # the scan starts after it
    for state in (fast, full):
        state.feed(first, 0)
        for at, payload in enumerate(payloads, start=1):
            try:
                state.feed(payload, at)
            except StreamError:
                break
    assert timeline(fast) == timeline(full)


def drive(server: ScriptedServer, model: str, transport: str) -> RequestRecord:
    run = Run(plan_at([0.0], timeout_s=5.0), Target(server.url, model))

    async def main() -> None:
        if transport == "hot":
            await run.drive()
            return
        async with httpx.AsyncClient(trust_env=False) as client:
            await run.drive(client)

    asyncio.run(main())
    (record,) = run.records
    return record


def comparable(record: RequestRecord) -> tuple[object, ...]:
    """What must not depend on the transport (instants differ by delivery, not meaning)."""
    return (
        record.status,
        record.error,
        record.http_status,
        record.output_tokens,
        record.output_tokens_source,
        record.prompt_tokens,
        len(record.itl_s),
        record.first_token_s is None,
        record.end_s is None,
        record.ttfo_s is None,
        record.ttfo_s is not None and record.ttft_s is not None and record.ttfo_s < record.ttft_s,
        record.reasoning_tokens,
        record.reasoning_s is None,
        record.chunk_tokens,
    )


def test_the_hot_path_and_httpx_keep_the_same_records_over_a_real_socket(
    server: ScriptedServer,
) -> None:
    """Each recorded stream, written as pieces that cut events and join several, gives
    the same record on the hot path (byte scan) as on httpx (full decoding path)."""
    for name, body in STREAMS.items():
        cuts = sorted({0, *range(7, len(body), 53), len(body)})
        steps = tuple(Step(0.0, body[a:b]) for a, b in itertools.pairwise(cuts) if body[a:b])
        server.route(name, Script(steps=steps))
        assert comparable(drive(server, name, "hot")) == comparable(drive(server, name, "httpx")), (
            name
        )


def test_a_streams_frame_is_reused_only_around_plain_new_content() -> None:
    chunk = event(delta_chunk({"content": "tok"}), separators=(",", ":"))[6:-2]
    shape = shape_of(chunk)
    assert shape is not None and fits(chunk, shape)
    assert fits(chunk.replace(b"tok", b"another token"), shape)
    for other in (b"", b'a\\"b', b"a\\\\", b"a\nb", b'"'):
        assert not fits(chunk.replace(b"tok", other), shape), other
    assert not fits(chunk.replace(b"null", b'"stop"'), shape)  # the frame changed
    assert shape_of(chunk.replace(b"tok", b"t\\u00e9")) is None  # escapes: no frame
    state = StreamState([])
    for at in range(3):
        state.feed(chunk, at)
    assert state.shape == shape and state.chunks == 3
