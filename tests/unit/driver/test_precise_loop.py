"""The drive's event loop wakes timers when due: asyncio's epoll selector rounds a wait up
to whole milliseconds twice over (9 ms became 10), the precise one does not."""

from __future__ import annotations

import asyncio
import selectors
import socket
import time

import pytest

from pytest_latency.driver.precise_loop import PreciseEpollSelector, new_event_loop

pytestmark = pytest.mark.skipif(not hasattr(selectors, "EpollSelector"), reason="epoll is Linux's")


def _waited_s(selector: selectors.BaseSelector, timeout_s: float) -> float:
    started = time.perf_counter()
    selector.select(timeout_s)
    return time.perf_counter() - started


def test_a_wait_of_9_ms_is_not_10() -> None:
    # CPython 3.11's epoll selector waits 10 ms when asked for 9 (9 * 1e-3 > 0.009).
    with PreciseEpollSelector() as precise:
        assert min(_waited_s(precise, 0.009) for _ in range(3)) < 0.010


def test_a_sub_millisecond_wait_is_not_a_whole_millisecond() -> None:
    with PreciseEpollSelector() as precise:
        assert min(_waited_s(precise, 0.0002) for _ in range(5)) < 0.001


def test_ready_sockets_are_reported_with_or_without_a_timeout() -> None:
    left, right = socket.socketpair()
    with left, right, PreciseEpollSelector() as precise:
        precise.register(left, selectors.EVENT_READ, "left")
        assert precise.select(0.05) == []
        right.send(b"x")
        for timeout in (None, 0, 0.05):
            assert [(key.data, events) for key, events in precise.select(timeout)] == [
                ("left", selectors.EVENT_READ)
            ]


def test_a_loop_on_it_runs_timers_and_callbacks() -> None:
    loop = new_event_loop()
    try:
        assert isinstance(getattr(loop, "_selector", None), PreciseEpollSelector)
        assert loop.run_until_complete(asyncio.sleep(0.001, result="woke")) == "woke"
    finally:
        loop.close()
