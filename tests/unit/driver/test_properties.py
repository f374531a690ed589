"""Property tests of the SSE decoder and the hot path's HTTP response layer (Hypothesis).

Splits: a valid stream or response cut at random points, across reads, decodes to the
same events / the same record as one read. Garbage: random or mutated bytes never raise
out of the layer (only the decoder's own StreamError), never grow a pending line past
its bound, and once the peer closes every future a request waits on is resolved, so a
request can never hang on the parser.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pytest_latency.driver.h1 import H1Connection
from pytest_latency.driver.limits import ResponseLimits
from pytest_latency.driver.sinks import StreamSink
from pytest_latency.driver.sse import SSEDecoder, StreamError, StreamState
from pytest_latency.records import RequestRecord, Status

PROPERTY = settings(
    max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow]
)
payload_text = st.text(
    st.characters(blacklist_categories=("Cs",), blacklist_characters="\r\n"), max_size=40
)


def split(data: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({cut % (len(data) + 1) for cut in cuts})
    bounds = [0, *points, len(data)]
    return [data[a:b] for a, b in itertools.pairwise(bounds) if b > a]


def decode_all(pieces: list[bytes], max_line: int = 1 << 20) -> list[bytes]:
    decoder = SSEDecoder(max_line)
    events = [event for piece in pieces for event in decoder.feed(piece)]
    return events + decoder.flush()


@st.composite
def event_stream(draw: st.DrawFn) -> tuple[bytes, list[bytes]]:
    payloads = draw(st.lists(payload_text, min_size=1, max_size=8))
    newline = draw(st.sampled_from([b"\n", b"\r\n", b"\r"]))
    out, expected = b"", []
    for text in payloads:
        if draw(st.booleans()):
            out += b": keep-alive" + newline
        lines = text.encode().split(b"\x00") if text else [b""]
        out += b"".join(b"data: " + line + newline for line in lines) + newline
        expected.append(b"\n".join(lines))
    return out, expected


@pytest.mark.slow
@PROPERTY
@given(event_stream(), st.lists(st.integers(min_value=0), max_size=12))
def test_sse_decoder_random_splits_give_the_same_events(
    stream: tuple[bytes, list[bytes]], cuts: list[int]
) -> None:
    data, expected = stream
    assert decode_all([data]) == expected
    assert decode_all(split(data, cuts)) == expected


@pytest.mark.slow
@PROPERTY
@given(st.lists(st.binary(max_size=300), max_size=10), st.integers(min_value=1, max_value=200))
def test_sse_decoder_garbage_only_raises_stream_errors_and_stays_bounded(
    pieces: list[bytes], max_line: int
) -> None:
    decoder = SSEDecoder(max_line)
    state = StreamState([])
    try:
        for piece in pieces:
            for event in decoder.feed(piece):
                state.feed(event, 0)
            assert sum(len(p) for p in decoder._pieces) <= max_line
        for event in decoder.flush():
            state.feed(event, 0)
    except StreamError:
        pass  # the documented way a stream is refused


@pytest.mark.slow
@PROPERTY
@given(
    st.one_of(
        st.binary(max_size=200),
        st.integers(0, 6000).map(lambda n: b"[" * n + b"]" * n),
        st.integers(0, 6000).map(lambda n: b'{"a":' * n + b"1" + b"}" * n),
        st.recursive(
            st.none() | st.booleans() | st.integers() | st.text(max_size=5),
            lambda inner: (
                st.lists(inner, max_size=3)
                | st.dictionaries(st.sampled_from(["choices", "delta", "usage", "error"]), inner)
            ),
            max_leaves=20,
        ).map(lambda value: json.dumps(value).encode()),
    )
)
def test_stream_state_refuses_any_payload_only_with_a_stream_error(data: bytes) -> None:
    with contextlib.suppress(StreamError):  # the documented way a payload is refused
        StreamState([]).feed(data, 0)


class _FakeTransport(asyncio.Transport):
    def __init__(self, connection: H1Connection) -> None:
        super().__init__()
        self.connection = connection
        self.aborted = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        pass

    def abort(self) -> None:
        self.aborted = True

    def close(self) -> None:
        self.aborted = True

    def get_extra_info(self, name: str, default: object = None) -> object:
        return default


def tokens_stream(count: int) -> bytes:
    chunk = {"choices": [{"index": 0, "delta": {"content": "t"}, "finish_reason": None}]}
    return b"".join(b"data: " + json.dumps(chunk).encode() + b"\n\n" for _ in range(count)) + (
        b"data: [DONE]\n\n"
    )


@st.composite
def valid_response(draw: st.DrawFn) -> tuple[bytes, int]:
    count = draw(st.integers(0, 6))
    body = tokens_stream(count)
    extra = draw(st.lists(st.sampled_from(["x-a: 1", "server-timing: q;dur=1", "via: p"])))
    lines = ["HTTP/1.1 200 OK", "content-type: text/event-stream", *extra]
    if draw(st.booleans()):
        sizes = draw(st.lists(st.integers(1, 40), min_size=1, max_size=20))
        pieces, at = [], 0
        for size in sizes:
            if at < len(body):
                pieces.append(body[at : at + size])
                at += size
        pieces.append(body[at:])
        framed = b"".join(b"%x\r\n%s\r\n" % (len(p), p) for p in pieces if p) + b"0\r\n\r\n"
        lines.append("transfer-encoding: chunked")
    else:
        framed = body
        lines.append(f"content-length: {len(body)}")
    framed_head = b"HTTP/1.1 100 Continue\r\n\r\n" if draw(st.booleans()) else b""
    return framed_head + ("\r\n".join(lines) + "\r\n\r\n").encode() + framed, count


@st.composite
def mutated_response(draw: st.DrawFn) -> bytes:
    """A valid response with bytes inserted, replaced or cut somewhere."""
    data, _ = draw(valid_response())
    at = draw(st.integers(0, len(data)))
    junk = draw(st.binary(max_size=8))
    cut = draw(st.integers(0, 8))
    return data[:at] + junk + data[at + cut :]


def feed_response(pieces: list[bytes], attach_after: int, close: bool) -> tuple[object, ...]:
    """Feed reads to a connection (the reader attaches after ``attach_after`` reads)."""

    async def main() -> tuple[object, ...]:
        connection = H1Connection(ResponseLimits(max_head_bytes=4096, max_line_bytes=4096))
        connection.connection_made(_FakeTransport(connection))
        head = connection.send(b"POST / HTTP/1.1\r\n\r\n")
        record = RequestRecord(id=0, phase="p", intended_s=0.0, input_tokens=1)
        sink = StreamSink(record, 0, 0, connection.limits)
        reader: asyncio.Task[None] | None = None
        for index, piece in enumerate(pieces):
            if index == attach_after:
                reader = asyncio.ensure_future(connection.read_body(sink))
                await asyncio.sleep(0)
            connection.data_received(piece)
        if reader is None:
            reader = asyncio.ensure_future(connection.read_body(sink))
        if close:
            connection.connection_lost(None)
        await asyncio.sleep(0)
        if not head.done() or not reader.done():
            assert not close, "a request waits forever after the peer closed"
            reader.cancel()
            return ("pending",)
        if head.exception() is not None or reader.exception() is not None:
            return ("failed",)
        return (record.status, sink.state.chunks, sink.state.done, sink.error)

    return asyncio.run(main())


@pytest.mark.slow
@PROPERTY
@given(
    valid_response(),
    st.lists(st.integers(min_value=0), max_size=12),
    st.integers(min_value=0, max_value=12),
)
def test_random_splits_of_a_valid_response_give_the_same_record(
    response: tuple[bytes, int], cuts: list[int], attach_after: int
) -> None:
    data, count = response
    # A stream with no content chunk is an empty answer: failed, whatever the splits.
    expected = (Status.OK if count else Status.HTTP_ERROR, count, True, None)
    assert feed_response([data], 0, close=False) == expected
    assert feed_response(split(data, cuts), attach_after, close=False) == expected


@pytest.mark.slow
@PROPERTY
@given(
    st.one_of(
        st.binary(max_size=400),
        mutated_response(),
    ),
    st.lists(st.integers(min_value=0), max_size=12),
    st.integers(min_value=0, max_value=12),
)
def test_garbage_never_raises_out_of_the_layer_and_never_hangs(
    data: bytes, cuts: list[int], attach_after: int
) -> None:
    outcome = feed_response(split(data, cuts), attach_after, close=True)
    assert outcome != ("pending",)
