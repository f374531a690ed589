"""The link between the test process and the receiving process: the messages, and the
test process's end (start the process, ask it, read its answers in a light thread).

One socket pair carries pickled messages (``multiprocessing.connection``: both ends are
this package). The test process sends ``sys.path``, then a :class:`ReceiverConfig`, then
requests; the receiving process sends :data:`READY` once it serves, a :class:`Reply` to
each request, and a :class:`LogLine` for each log record the test process would show.
Spans and their timings stay in the receiving process until a request asks for them.

The receiving process is ``python -c BOOT`` (``subprocess``: a fork that at once
executes a fresh interpreter, nothing copied from this threaded process; nor does it
re-import the test process's ``__main__`` as ``multiprocessing``'s spawn would). It
ignores SIGINT (Ctrl-C in a terminal reaches the whole process group; the test process
decides when the receiver stops) and ends by itself when this process is gone: its end
of the socket pair reads end-of-file then, and it also checks its parent's pid.
"""

from __future__ import annotations

import itertools
import logging
import socket
import subprocess
import sys
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pytest_latency.secret import Secret

if TYPE_CHECKING:
    from multiprocessing.connection import Connection

__all__ = (
    "READY",
    "ClearRequest",
    "LogLine",
    "ReceiverConfig",
    "ReceiverLink",
    "ReceiverStats",
    "Reply",
    "Request",
    "StatsRequest",
    "StopRequest",
    "TimingsRequest",
    "UnknownRequest",
)

logger = logging.getLogger("pytest_latency.telemetry.receiver")

#: The receiving process imports protobuf and serves within this (a loaded machine).
READY_TIMEOUT_S = 30.0
READY = "ready"
_GONE_WAIT_S = 5.0  # for the reader to notice a process gone (it logs that first)
PROCESS_TITLE = "pytest-latency-otlp-receiver"  # an argument, to tell it apart in ``ps``
# sys.path first (the test process may have changed it), then the package's own code.
BOOT = """\
import signal, sys
signal.signal(signal.SIGINT, signal.SIG_IGN)
from multiprocessing.connection import Connection
channel = Connection(int(sys.argv[1]))
sys.path[:] = channel.recv()
from pytest_latency.telemetry.receiver_process import main
main(channel, int(sys.argv[2]))
"""


@dataclass(frozen=True, slots=True)
class ReceiverConfig:
    max_traces: int
    max_body_bytes: int
    max_concurrent_posts: int
    token: Secret | None
    trace_prefix: str | None
    log_level: int  # records below it are not sent to the test process
    parent_pid: int


@dataclass(frozen=True, slots=True)
class ReceiverStats:
    """The receiver's counters at one moment."""

    spans: int = 0
    ignored: int = 0
    exports: int = 0
    rejections: dict[int, int] = field(default_factory=dict)
    traces_dropped: int = 0


@dataclass(frozen=True, slots=True)
class TimingsRequest:
    id: int
    trace_ids: list[str]
    grace_s: float
    settle_s: float


@dataclass(frozen=True, slots=True)
class UnknownRequest:
    id: int
    known: list[str]


@dataclass(frozen=True, slots=True)
class ClearRequest:
    id: int


@dataclass(frozen=True, slots=True)
class StatsRequest:
    id: int


@dataclass(frozen=True, slots=True)
class StopRequest:
    """Stop serving, answer the final counters, exit."""

    id: int


Request = TimingsRequest | UnknownRequest | ClearRequest | StatsRequest | StopRequest


@dataclass(frozen=True, slots=True)
class Reply:
    """``value``: packed timings by trace id, a count, True, or :class:`ReceiverStats`."""

    id: int
    value: object


@dataclass(frozen=True, slots=True)
class LogLine:
    name: str
    level: int
    text: str


class _Waiting:
    __slots__ = ("event", "value")

    def __init__(self) -> None:
        self.event = threading.Event()
        self.value: object = None


class ReceiverLink:
    """The receiving process, started serving on ``listener`` (this process's copy of the
    listener is closed once the process has its own)."""

    def __init__(self, listener: socket.socket, config: ReceiverConfig) -> None:
        from multiprocessing.connection import Connection

        ours, theirs = socket.socketpair()
        try:
            fds = (theirs.fileno(), listener.fileno())
            self.process = subprocess.Popen(
                [sys.executable, "-c", BOOT, *map(str, fds), PROCESS_TITLE],
                pass_fds=fds, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            )  # fmt: skip
        except BaseException:
            ours.close()
            raise
        finally:
            theirs.close()
            listener.close()
        self._channel: Connection = Connection(ours.detach())
        self._send_lock = threading.Lock()
        self._lock = threading.Lock()
        self._pending: dict[int, _Waiting] = {}
        self._ids = itertools.count(1)
        self._ready = threading.Event()  # also set when the process is gone
        self._gone = False
        self._closing = False
        self._send(list(sys.path))
        self._send(config)
        self._reader = threading.Thread(
            target=self._read, name=f"{PROCESS_TITLE}-link", daemon=True
        )
        self._reader.start()

    @property
    def alive(self) -> bool:
        with self._lock:
            return not self._gone

    def wait_ready(self, timeout_s: float = READY_TIMEOUT_S) -> bool:
        """Whether the process serves (waits for it at most ``timeout_s``)."""
        return self._ready.wait(timeout_s) and self.alive

    def ask(self, request: Request, timeout_s: float) -> object | None:
        """The reply's value, or None when the process did not answer in time (not
        ready within :data:`READY_TIMEOUT_S`, gone, or slower than ``timeout_s``)."""
        if not self.wait_ready():
            return None
        waiting = _Waiting()
        with self._lock:
            if self._gone:
                return None
            self._pending[request.id] = waiting
        try:
            try:
                self._send(request)
            except OSError:  # the process is gone: the reader sees it too, and wakes us
                timeout_s = min(timeout_s, _GONE_WAIT_S)
            waiting.event.wait(timeout_s)
        finally:
            with self._lock:
                self._pending.pop(request.id, None)
        return waiting.value

    def next_id(self) -> int:
        return next(self._ids)

    def stop(self, timeout_s: float) -> ReceiverStats | None:
        """Ask the process to stop; its final counters (None when it did not answer)."""
        self._closing = True  # its end-of-file is expected from now on
        final = self.ask(StopRequest(self.next_id()), timeout_s)
        return final if isinstance(final, ReceiverStats) else None

    def close(self, timeout_s: float) -> None:
        """Wait for the process to end (killed past ``timeout_s``), then close the link."""
        self._closing = True
        try:
            self.process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(timeout_s)
        self._reader.join(timeout_s)  # the process's end closed: the reader saw EOF
        self._channel.close()

    def kill(self) -> None:
        self._closing = True
        self.process.kill()

    def _send(self, message: object) -> None:
        with self._send_lock:
            self._channel.send(message)

    def _read(self) -> None:
        try:
            while True:
                message = self._channel.recv()
                if isinstance(message, Reply):
                    self._answer(message)
                elif isinstance(message, LogLine):
                    logging.getLogger(message.name).log(message.level, "%s", message.text)
                elif message == READY:
                    self._ready.set()
        except (EOFError, OSError):
            pass
        finally:
            self._went()

    def _answer(self, reply: Reply) -> None:
        with self._lock:
            waiting = self._pending.get(reply.id)
        if waiting is not None:
            waiting.value = reply.value
            waiting.event.set()

    def _went(self) -> None:
        if not self._closing:  # said before anyone waiting learns that nothing comes
            try:
                code = self.process.wait(5.0)
            except subprocess.TimeoutExpired:
                code = None
            logger.warning(
                "OTLP receiver: its process ended unexpectedly (exit code %s); spans "
                "sent from now on are refused and stored timings are lost", code,
            )  # fmt: skip
        with self._lock:
            self._gone = True
            pending = list(self._pending.values())
        for waiting in pending:
            waiting.event.set()
        self._ready.set()
