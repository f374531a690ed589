"""The hot path: raw HTTP/1.1 framing, parity with httpx, and no blocking calls in the loop.

The no-blocking test times every loop callback (a task step, a protocol's
``data_received``): that is the loop's own view of "something held me", so a blocking
call anywhere on the driver's path shows up, whatever it is (a sync socket,
``time.sleep``, a large computation), which a list of forbidden functions would miss.

A callback's *hold* is its wall time minus the time its thread sat runnable on the run
queue (``/proc/thread-self/schedstat``, field 2): CPU time it spent plus time it was
asleep or blocked. Wall time alone is not it: on a busy machine the scheduler preempts
the loop thread mid-callback, and one healthy callback measured 0.145 s of wall time
that way. CPU time alone is not it either: a blocking ``sleep`` or socket read costs
almost none. The hold keeps both kinds of block and drops only preemption. The limit,
100 ms, is far above a healthy callback (tens of microseconds; the GIL, shared with the
in-process server thread, is handed over every 5 ms) and far below a blocking network
call or sleep worth the name. Two tests prove the check fails on an injected block: a
sleep and a busy computation.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
from collections.abc import Callable, Iterator

import httpx
import pytest

from pytest_latency.driver import Run, Status, Target
from pytest_latency.driver.h1 import H1Connection
from pytest_latency.driver.sinks import StreamSink
from tests.helpers.scripted_server import (
    DONE,
    PROMPT,
    Script,
    ScriptedServer,
    Step,
    chat_chunk,
    plan_at,
)
from tests.helpers.status_cases import CASES

HOLD_LIMIT_S = 0.1
SCHEDSTAT = "/proc/thread-self/schedstat"
STREAM = Script(
    steps=(*tuple(Step(0.005 * i, chat_chunk(f"t{i}")) for i in range(20)), Step(0.1, DONE))
)


class _RunQueueClock:
    """Nanoseconds this thread has waited runnable on the run queue (0 without schedstat)."""

    def __init__(self) -> None:
        self._local = threading.local()

    def __call__(self) -> int:
        fd = getattr(self._local, "fd", None)
        if fd is None:
            try:
                fd = os.open(SCHEDSTAT, os.O_RDONLY)  # resolved for the calling thread
            except OSError:
                fd = -1  # no schedstat: holds fall back to wall time (stricter)
            self._local.fd = fd
        return int(os.pread(fd, 64, 0).split()[1]) if fd >= 0 else 0


class LoopHolds:
    """Every loop callback whose hold reached ``HOLD_LIMIT_S``: (perf ns at start, hold s)."""

    def __init__(self) -> None:
        self.slow: list[tuple[int, float, str]] = []
        self.timed = 0
        self._queued_ns = _RunQueueClock()

    def wrap(self, run: Callable[[asyncio.Handle], None]) -> Callable[[asyncio.Handle], None]:
        def timed_run(handle: asyncio.Handle) -> None:
            started_ns, queued_ns = time.perf_counter_ns(), self._queued_ns()
            try:
                run(handle)
            finally:
                wall_ns = time.perf_counter_ns() - started_ns
                hold_s = (wall_ns - (self._queued_ns() - queued_ns)) / 1e9
                self.timed += 1
                if hold_s >= HOLD_LIMIT_S:
                    self.slow.append((started_ns, hold_s, repr(handle)))

        return timed_run

    def after(self, run: Run) -> list[tuple[int, float, str]]:
        """The slow callbacks from the run's time zero on (warm-up and GC come before)."""
        return [slow for slow in self.slow if slow[0] >= run.started_ns]


@pytest.fixture
def loop_holds(monkeypatch: pytest.MonkeyPatch) -> Iterator[LoopHolds]:
    holds = LoopHolds()
    monkeypatch.setattr(asyncio.Handle, "_run", holds.wrap(asyncio.Handle._run))
    yield holds


def drive_on_asyncio(plan: object, target: Target, client: httpx.AsyncClient | None = None) -> Run:
    run = Run(plan, target)  # type: ignore[arg-type]

    async def main() -> None:
        if client is None:
            await run.drive()
        else:
            async with client:
                await run.drive(client)

    asyncio.run(main())
    return run


@pytest.mark.slow
@pytest.mark.parametrize("path", ["hot-path", "httpx"])
def test_no_blocking_call_in_the_loop_during_a_drive(
    server: ScriptedServer, loop_holds: LoopHolds, path: str
) -> None:
    server.route("stream", STREAM)
    client = httpx.AsyncClient(trust_env=False) if path == "httpx" else None
    run = drive_on_asyncio(
        plan_at([0.01 * i for i in range(30)]), Target(server.url, "stream"), client
    )
    assert all(record.status is Status.OK for record in run.records)
    assert loop_holds.timed > 30 * 20  # every chunk's read went through the timer
    assert loop_holds.after(run) == []


def _sleep_block() -> None:
    time.sleep(2 * HOLD_LIMIT_S)  # a blocking call: almost no CPU, all hold


def _busy_block() -> None:
    cpu_until = time.thread_time() + 2 * HOLD_LIMIT_S
    while time.thread_time() < cpu_until:  # a heavy computation: all CPU
        pass


@pytest.mark.slow
@pytest.mark.parametrize("block", [_sleep_block, _busy_block], ids=["sleep", "computation"])
def test_the_blocking_call_check_catches_a_block(
    server: ScriptedServer,
    loop_holds: LoopHolds,
    monkeypatch: pytest.MonkeyPatch,
    block: Callable[[], None],
) -> None:
    server.route("stream", STREAM)
    take = StreamSink.__call__

    def blocking_take(self: StreamSink, data: bytes, now_ns: int) -> bool:
        if self.state.chunks == 3:
            block()  # on the hot path, inside data_received
        return take(self, data, now_ns)

    monkeypatch.setattr(StreamSink, "__call__", blocking_take)
    run = drive_on_asyncio(plan_at([0.0]), Target(server.url, "stream"))
    slow = loop_holds.after(run)
    assert slow, "a 200 ms block in the loop went unnoticed"
    assert all(hold_s >= 2 * HOLD_LIMIT_S * 0.95 for _, hold_s, _ in slow), slow


@pytest.mark.slow
@pytest.mark.parametrize("case", list(CASES))
def test_httpx_path_classifies_like_the_hot_path(server: ScriptedServer, case: str) -> None:
    script, status, error = CASES[case]
    server.route(case, script)
    run = drive_on_asyncio(
        plan_at([0.0], timeout_s=0.4), Target(server.url, case), httpx.AsyncClient(trust_env=False)
    )
    (record,) = run.records
    assert record.status is status, record.error
    assert (record.error or "").startswith(error), record.error
    assert PROMPT not in (record.error or "")


class _Transport(asyncio.Transport):
    def __init__(self) -> None:
        super().__init__()
        self.written = bytearray()
        self.closed = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        self.written += data

    def abort(self) -> None:
        self.closed = True

    def close(self) -> None:
        self.closed = True


RESPONSE = (
    b"HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\nServer-Timing: queue;dur=3\r\n\r\n"
    b"5;ext=1\r\nhello\r\n1\r\n \r\n5\r\nworld\r\n0\r\nx-trailer: 1\r\n\r\n"
)


@pytest.mark.parametrize("piece", [1, 2, 3, 7, len(RESPONSE)])
def test_chunked_framing_split_anywhere(piece: int) -> None:
    async def main() -> tuple[int, str, bytes, bool]:
        connection = H1Connection()
        connection.connection_made(_Transport())
        head_future = connection.send(b"POST / HTTP/1.1\r\n\r\n")
        body = bytearray()

        def sink(data: bytes, now_ns: int) -> bool:
            body.extend(data)
            return False

        reader: asyncio.Task[None] | None = None
        for start in range(0, len(RESPONSE), piece):
            connection.data_received(RESPONSE[start : start + piece])
            if head_future.done() and reader is None:
                reader = asyncio.get_running_loop().create_task(connection.read_body(sink))
                await asyncio.sleep(0)
        head = await head_future
        assert reader is not None
        await asyncio.wait_for(reader, 1.0)
        return head.status, head.header("server-timing"), bytes(body), connection.reusable

    status, timing, body, reusable = asyncio.run(main())
    assert (status, timing, body, reusable) == (200, "queue;dur=3", b"hello world", True)


def test_a_connection_the_server_closed_silently_is_not_reused() -> None:
    """llama.cpp's overflow threads close a connection after one response without
    ``Connection: close``; reusing it before the loop notices the FIN would lose the next
    request ("Server disconnected without sending a response"). Blocking the loop after
    the first response makes that window certain: only the pool's check can catch it."""
    from pytest_latency.driver.fast import H1Pool

    async def answer_once_then_close(
        reader: asyncio.StreamReader, writer: asyncio.StreamWriter
    ) -> None:
        await reader.readuntil(b"\r\n\r\n")
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok")
        await writer.drain()
        writer.close()

    async def main() -> list[int]:
        server = await asyncio.start_server(answer_once_then_close, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        pool = H1Pool("127.0.0.1", port, keepalive_expiry_s=30.0)
        statuses = []
        try:
            for _ in range(2):
                connection = await pool.acquire()
                head = await connection.send(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
                await connection.read_body(lambda data, now_ns: False)
                statuses.append(head.status)
                pool.release(connection)
                time.sleep(0.05)  # noqa: ASYNC251 - the FIN arrives; the loop must not run
        finally:
            pool.close()
            server.close()
            await server.wait_closed()
        assert pool.opened == 2
        return statuses

    assert asyncio.run(asyncio.wait_for(main(), 10)) == [200, 200]


def test_a_connection_released_mid_body_is_never_reused() -> None:
    """A warm-up ping cut off by its time bound hands its connection back mid-body; the
    next request on it would read the old body (and did trip the framing state)."""
    from pytest_latency.driver.fast import H1Pool

    async def stall_mid_body(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        while True:
            try:
                await reader.readuntil(b"\r\n\r\n")
            except (asyncio.IncompleteReadError, ConnectionError):
                return
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-length: 10\r\n\r\nok")  # 8 bytes owed
            await writer.drain()

    async def main() -> int:
        server = await asyncio.start_server(stall_mid_body, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        pool = H1Pool("127.0.0.1", port, keepalive_expiry_s=30.0)
        try:
            connection = await pool.acquire()
            await connection.send(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
            with pytest.raises(asyncio.TimeoutError):
                await asyncio.wait_for(connection.read_body(lambda data, now_ns: False), 0.2)
            pool.release(connection)  # as the cancelled ping's `finally` does
            again = await pool.acquire()
            assert again is not connection
            head = await again.send(b"GET / HTTP/1.1\r\nhost: x\r\n\r\n")
            assert head.status == 200
            return pool.opened
        finally:
            pool.close()
            server.close()

    assert asyncio.run(asyncio.wait_for(main(), 10)) == 2


def test_the_reuse_check_works_past_fd_setsize() -> None:
    """A run holds thousands of sockets: the FIN check must not use select()."""
    import fcntl
    import resource
    import socket

    from pytest_latency.driver.h1 import H1Connection

    if resource.getrlimit(resource.RLIMIT_NOFILE)[0] <= 1100:
        pytest.skip("the open-files limit is too low to hold a descriptor past 1024")
    left, right = socket.socketpair()
    high = socket.socket(fileno=fcntl.fcntl(left.fileno(), fcntl.F_DUPFD, 1100))
    try:

        class _HighTransport:
            def get_extra_info(self, name: str) -> object:
                return high if name == "socket" else None

        connection = H1Connection()
        connection.transport = _HighTransport()  # type: ignore[assignment]
        assert connection.peer_closed() is False  # idle and open
        right.close()
        assert connection.peer_closed() is True  # the FIN is readable
    finally:
        high.close()
        left.close()


def test_the_hot_path_runs_on_uvloop(server: ScriptedServer) -> None:
    """uvloop's transports are not asyncio.Transport subclasses; the connection must not care."""
    pytest.importorskip("uvloop")
    import anyio

    server.route("stream", STREAM)
    run = Run(plan_at([0.0, 0.01]), Target(server.url, "stream"))
    anyio.run(run.drive, backend_options={"use_uvloop": True})
    assert [record.status for record in run.records] == [Status.OK, Status.OK]
    assert all(record.output_tokens == 20 for record in run.records)
