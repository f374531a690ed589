"""Bounds and decoding pieces of the driver: limits, Content-Encoding, SSE line bounds."""

from __future__ import annotations

import copy
import gzip
import math
import zlib

import pytest

from pytest_latency.driver import ResponseLimits, Run, Target
from pytest_latency.driver.encoding import BodyDecoder, encoding_problem
from pytest_latency.driver.limits import size_text
from pytest_latency.driver.sse import LineTooLong, MalformedStream, SSEDecoder, StreamState
from pytest_latency.driver.transport import ProtocolFailure
from tests.helpers.scripted_server import plan_at


def test_limits_must_be_positive_ints() -> None:
    with pytest.raises(ValueError, match="max_line_bytes"):
        ResponseLimits(max_line_bytes=0)
    assert size_text(1024 * 1024) == "1 MiB" and size_text(64 * 1024) == "64 KiB"
    assert size_text(300) == "300 bytes"


def test_a_run_refuses_a_deadline_that_never_comes() -> None:
    # The spec refuses an infinite timeout; a workload built around that check (object
    # replacement, unpickled plans) must still never remove every deadline.
    plan = plan_at([0.0], timeout_s=1.0)
    with pytest.raises(ValueError, match="finite"):
        type(plan.workload)(phases=plan.workload.phases, timeout_s=math.inf, output_tokens=4)
    workload = copy.copy(plan.workload)
    object.__setattr__(workload, "timeout_s", math.inf)
    with pytest.raises(ValueError, match="finite"):
        Run(
            type(plan)(workload=workload, requests=plan.requests), Target("http://127.0.0.1:9", "m")
        )


@pytest.mark.parametrize(
    ("header", "problem"),
    [
        ("", None),
        ("identity", None),
        ("gzip", None),
        ("Deflate", None),
        ("br", "unsupported Content-Encoding 'br'"),
        ("gzip, zstd", "unsupported Content-Encoding 'zstd'"),
        ("gzip, gzip", "stacked Content-Encoding"),
    ],
)
def test_encoding_problem(header: str, problem: str | None) -> None:
    found = encoding_problem(header)
    assert found == problem if problem is None else (found or "").startswith(problem)


def test_gzip_and_deflate_decode_in_pieces() -> None:
    body = b"data: hello\n\n" * 50
    for header, packed in (("gzip", gzip.compress(body)), ("deflate", zlib.compress(body))):
        decoder = BodyDecoder.for_header(header, 1 << 20)
        assert decoder is not None
        pieces = [p for i in range(0, len(packed), 7) for p in decoder.decode(packed[i : i + 7])]
        assert b"".join(pieces + decoder.flush()) == body


def test_a_compressed_body_cannot_expand_past_its_bound() -> None:
    decoder = BodyDecoder.for_header("gzip", 1000)
    assert decoder is not None
    with pytest.raises(ProtocolFailure, match="decoded body over 1000 bytes"):
        decoder.decode(gzip.compress(b"\0" * 100_000))


def test_a_gzip_bomb_decodes_in_bounded_steps_and_its_failure_keeps_no_buffer() -> None:
    bomb = gzip.compress(b"\0" * (48 << 20))  # ~48 KiB that would expand to 48 MiB
    decoder = BodyDecoder.for_header("gzip", 8 << 20)
    assert decoder is not None
    with pytest.raises(ProtocolFailure, match="decoded body over 8 MiB") as caught:
        decoder.decode(bomb)
    # Everything the failure keeps alive: the frames of its traceback and their locals.
    held = 0
    tb = caught.value.__traceback__
    while tb is not None:
        for value in tb.tb_frame.f_locals.values():
            if isinstance(value, (bytes, bytearray)):
                held += len(value)
            elif isinstance(value, list):
                held += sum(len(v) for v in value if isinstance(v, (bytes, bytearray)))
        tb = tb.tb_next
    assert held < len(bomb) + (1 << 20)
    ok = BodyDecoder.for_header("gzip", 64 << 20)
    assert ok is not None
    assert max(len(piece) for piece in ok.decode(bomb)) <= 256 * 1024


def test_an_endless_line_is_refused_at_its_bound() -> None:
    decoder = SSEDecoder(max_line_bytes=100)
    decoder.feed(b"data: " + b"x" * 50)
    with pytest.raises(LineTooLong, match="SSE line over 100 bytes without a newline"):
        decoder.feed(b"x" * 60)
    with pytest.raises(LineTooLong, match="SSE line over 100 bytes"):
        SSEDecoder(max_line_bytes=100).feed(b"data: " + b"y" * 200 + b"\n")
    with pytest.raises(LineTooLong, match="SSE event data over 100 bytes"):
        SSEDecoder(max_line_bytes=100).feed(b"data: " + b"z" * 60 + b"\ndata: " + b"z" * 60 + b"\n")


def test_deep_json_is_a_malformed_stream_not_a_recursion_error() -> None:
    with pytest.raises(MalformedStream, match="nested too deeply"):
        StreamState([]).feed(b"[" * 100_000 + b"]" * 100_000, 0)
