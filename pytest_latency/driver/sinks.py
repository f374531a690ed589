"""Body sinks: what a response's bytes turn into, read by read, on either transport.

Sinks run inside the transport's read (the hot path calls them from ``data_received``),
so they never raise: a decoding failure is kept in ``error`` and the sink asks the
transport to stop reading.
"""

from __future__ import annotations

from pytest_latency.driver.chunk_scan import plain_events
from pytest_latency.driver.errors import exception_text
from pytest_latency.driver.limits import MAX_ERROR_BODY_BYTES, ResponseLimits, size_text
from pytest_latency.driver.outcome import UNDECIDED, answer_failure
from pytest_latency.driver.sse import MalformedStream, SSEDecoder, StreamError, StreamState
from pytest_latency.records import RequestRecord, Status


class StreamSink:
    """Consumes a 2xx SSE body, filling the record's token timeline."""

    __slots__ = (
        "body_bytes",
        "decoder",
        "error",
        "limits",
        "received_ns",
        "record",
        "state",
        "t0_ns",
    )

    def __init__(
        self,
        record: RequestRecord,
        t0_ns: int,
        start_ns: int,
        limits: ResponseLimits,
        texts: list[str] | None = None,
    ) -> None:
        self.record = record
        self.t0_ns = t0_ns
        self.limits = limits
        gaps: list[float] = []
        record.itl_s = gaps
        self.state = StreamState(gaps, texts)  # texts: keep the answer (sessions)
        self.decoder = SSEDecoder(limits.max_line_bytes)
        self.received_ns = start_ns  # an empty body ends when its head arrived
        self.body_bytes = 0
        self.error: StreamError | None = None

    def __call__(self, data: bytes, now_ns: int) -> bool:
        self.received_ns = now_ns
        self.body_bytes += len(data)
        if self.body_bytes > self.limits.max_body_bytes:
            self.error = MalformedStream(f"body over {size_text(self.limits.max_body_bytes)}")
            return True
        state = self.state
        frame = state.frame
        try:
            if frame is not None and self.decoder.idle(len(data)):
                count = plain_events(data, *frame)
                if count:  # the hot path: whole plain events of this stream, one split
                    state.answers(now_ns, count)
                    return False
            for event in self.decoder.feed(data):
                state.feed(event, now_ns)
        except StreamError as exc:
            self.error = exc
            return True
        except Exception as exc:  # containment: one response's bytes never break the run
            self.error = MalformedStream(f"undecodable stream: {exception_text(exc)}")
            return True
        record = self.record
        if state.done and record.status is UNDECIDED:
            # Decided now, read on to the end so the connection is reused.
            failure = answer_failure(state)
            record.status = Status.OK if failure is None else Status.HTTP_ERROR
            record.error = failure
            record.end_s = (now_ns - self.t0_ns) / 1e9
        return False

    def flush(self) -> None:
        """The body ended: decode what the last line left pending."""
        if self.error is not None:
            return
        try:
            for event in self.decoder.flush():
                self.state.feed(event, self.received_ns)
        except StreamError as exc:
            self.error = exc
        except Exception as exc:  # containment, as above
            self.error = MalformedStream(f"undecodable stream: {exception_text(exc)}")


class ErrorSink:
    """Collects at most MAX_ERROR_BODY_BYTES of a non-2xx body, then stops reading."""

    __slots__ = ("body",)

    def __init__(self) -> None:
        self.body = bytearray()

    def __call__(self, data: bytes, now_ns: int) -> bool:
        self.body += data[: MAX_ERROR_BODY_BYTES - len(self.body)]
        return len(self.body) >= MAX_ERROR_BODY_BYTES
