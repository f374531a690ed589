"""CPU per streamed chunk of the body path alone: SSE decoding and chunk interpretation.

Feeds a recorded 64-token OpenAI stream (the bytes ``fast_server.py`` sends) to the
driver's :class:`StreamSink`, one event per read and all events in one read, and prints
microseconds of CPU per content chunk. No socket: this isolates the parser from the loop.

    python benchmarks/bench_parse.py --streams 2000
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from fast_server import CHUNK, DONE, FINISH

from pytest_latency.driver.limits import ResponseLimits
from pytest_latency.driver.sinks import StreamSink
from pytest_latency.records import RequestRecord

USAGE = b'data: {"choices": [], "usage": {"prompt_tokens": 8, "completion_tokens": 64}}\n\n'


def reads(tokens: int, per_read: int) -> list[bytes]:
    events = [CHUNK] * tokens + [FINISH, USAGE, DONE]
    return [b"".join(events[i : i + per_read]) for i in range(0, len(events), per_read)]


def per_chunk_us(streams: int, tokens: int, per_read: int) -> float:
    pieces = reads(tokens, per_read)
    limits = ResponseLimits()
    start = time.process_time()
    for index in range(streams):
        record = RequestRecord(id=index, phase="p", intended_s=0.0, input_tokens=8)
        sink = StreamSink(record, 0, 0, limits)
        for now_ns, piece in enumerate(pieces):
            sink(piece, now_ns * 1000)
        sink.flush()
        assert sink.error is None and sink.state.chunks == tokens
    return (time.process_time() - start) / (streams * tokens) * 1e6


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=2000)
    parser.add_argument("--tokens", type=int, default=64)
    args = parser.parse_args()
    for per_read in (1, 4, 1000):
        us = per_chunk_us(args.streams, args.tokens, per_read)
        print(f"{per_read:5d} events per read: {us:6.2f} us CPU per chunk ({1e6 / us:8.0f}/CPU-s)")


if __name__ == "__main__":
    main()
