"""The receiving process: serves OTLP/HTTP on the socket the test process bound, keeps
the timings, answers the test process's requests, and ends with it.

Started by :class:`~pytest_latency.telemetry.receiver_link.ReceiverLink` (whose
docstring has the protocol). It ends when the test process asks (:class:`StopRequest`),
when its end of the link reads end-of-file (the test process closed it, or died: the
kernel closes a killed process's sockets), or when its parent pid changes (the test
process died while a process it forked still holds the link open).
"""

from __future__ import annotations

import logging
import os
import socket
import threading
from typing import TYPE_CHECKING

from pytest_latency.telemetry.packed import pack
from pytest_latency.telemetry.receiver_link import (
    READY,
    ClearRequest,
    LogLine,
    ReceiverConfig,
    ReceiverStats,
    Reply,
    Request,
    StatsRequest,
    StopRequest,
    TimingsRequest,
    UnknownRequest,
)
from pytest_latency.telemetry.receiver_thread import ThreadReceiver

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

__all__ = ("main",)

# Lower priority than the test process: on a shared machine the driving loop wins the
# CPU when it wakes (flood - quiet p99 of the bench's 1 ms sleep: +0.7 ms at nice 10,
# +0.9-2.7 ms at 0, load ~3.5 on two cores). Still a tenth of a busy core at worst.
NICENESS = 10
PARENT_CHECK_S = 0.5  # how often the parent's pid is checked while no request comes


class _Sender:
    """Sends on the link from any thread of this process."""

    def __init__(self, channel: Connection) -> None:
        self._channel = channel
        self._lock = threading.Lock()

    def __call__(self, message: object) -> None:
        try:
            with self._lock:
                self._channel.send(message)
        except OSError:
            pass  # the test process is gone; the request loop sees it and ends


class _Forward(logging.Handler):
    """Log records go to the test process, which logs them as its own."""

    def __init__(self, send: _Sender, level: int) -> None:
        super().__init__(level)
        self._send = send

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if record.exc_info:
            text += "\n" + logging.Formatter().formatException(record.exc_info)
        self._send(LogLine(record.name, record.levelno, text))


def main(channel: Connection, listen_fd: int) -> None:
    """Serve until told to stop or the test process is gone; then exit."""
    os.nice(NICENESS)  # spans can wait; the driving loop in the test process cannot
    config = channel.recv()
    if not isinstance(config, ReceiverConfig):
        raise TypeError(f"expected a ReceiverConfig, got {type(config).__name__}")
    send = _Sender(channel)
    package_logger = logging.getLogger("pytest_latency")
    package_logger.addHandler(_Forward(send, config.log_level))
    package_logger.setLevel(config.log_level)
    package_logger.propagate = False
    receiver = ThreadReceiver(
        max_traces=config.max_traces, max_body_bytes=config.max_body_bytes,
        max_concurrent_posts=config.max_concurrent_posts, token=config.token,
        trace_prefix=config.trace_prefix,
    )  # fmt: skip
    receiver.start(socket.socket(fileno=listen_fd))
    send(READY)
    stop: StopRequest | None = None
    try:
        stop = _serve_requests(receiver, channel, send, config.parent_pid)
    finally:
        receiver.stop()
        if stop is not None:
            send(Reply(stop.id, stats(receiver)))
        channel.close()
    os._exit(0)  # no interpreter teardown: handler threads may still be reading


def _serve_requests(
    receiver: ThreadReceiver, channel: Connection, send: _Sender, parent_pid: int
) -> StopRequest | None:
    """Answer requests until a :class:`StopRequest` (returned) or the test process is gone."""
    while True:
        try:
            if not channel.poll(PARENT_CHECK_S):
                if os.getppid() != parent_pid:
                    return None
                continue
            request = channel.recv()
        except (EOFError, OSError):
            return None
        if isinstance(request, StopRequest):
            return request
        if isinstance(request, TimingsRequest):  # waits: answered beside other requests
            threading.Thread(
                target=_answer_timings, args=(receiver, request, send), daemon=True
            ).start()
            continue
        send(Reply(request.id, answer(receiver, request)))


def answer(receiver: ThreadReceiver, request: Request) -> object:
    """The value replied to one request that does not wait."""
    if isinstance(request, UnknownRequest):
        return receiver.unknown_trace_ids(set(request.known))
    if isinstance(request, ClearRequest):
        receiver.clear()
        return True
    if isinstance(request, StatsRequest):
        return stats(receiver)
    raise TypeError(f"unexpected request {type(request).__name__}")


def _answer_timings(receiver: ThreadReceiver, request: TimingsRequest, send: _Sender) -> None:
    found = receiver.timings(request.trace_ids, request.grace_s, request.settle_s)
    send(Reply(request.id, {trace_id: pack(timings) for trace_id, timings in found.items()}))


def stats(receiver: ThreadReceiver) -> ReceiverStats:
    return ReceiverStats(
        spans=receiver.spans_received,
        ignored=receiver.spans_ignored,
        exports=receiver.exports,
        rejections=receiver.rejections,
        traces_dropped=receiver.traces_dropped,
    )
