"""An exception raised by a Python signal handler mid-drive (pytest-timeout's ``signal``
method failing the test) stops the drive and is raised by ``drive_to_end``, on either
loop, wherever the handler ran: in a callback (where both loops log and drop what a
callback raises) or in a task nobody awaits. uvloop runs every Python handler from a
callback of its own, so without the stop a timed-out test passed."""

from __future__ import annotations

import asyncio
import importlib.util
import signal
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from pytest_latency.driver import Run, Status, Target
from pytest_latency.driver.loop import drive_to_end
from tests.helpers.scripted_server import DONE, Script, ScriptedServer, Step, chat_chunk, plan_at

HAS_UVLOOP = importlib.util.find_spec("uvloop") is not None
LOOPS = pytest.mark.parametrize(
    "use_uvloop",
    [False, pytest.param(True, marks=pytest.mark.skipif(not HAS_UVLOOP, reason="uvloop"))],
    ids=["asyncio", "uvloop"],
)
POLL_S = 0.002  # polling interval of the "requests in flight" event check


class TestTimeout(BaseException):  # like pytest's Failed: not an Exception
    __test__ = False


def _fail(signum: int, frame: object) -> None:
    raise TestTimeout("Timeout >5.0s")


@pytest.fixture
def failing_handler() -> Iterator[Callable[..., Any]]:
    previous = signal.signal(signal.SIGUSR1, _fail)
    try:
        yield _fail
    finally:
        signal.signal(signal.SIGUSR1, previous)


class SignalledMidRun(Run):
    """Raises SIGUSR1 in this process once two requests are at the server, from a
    callback (``where="callback"``) or from a task's step (``where="task"``)."""

    def __init__(self, server: ScriptedServer, where: str, *args: Any) -> None:
        super().__init__(*args)
        self.server, self.where = server, where

    async def drive(self, client: object = None) -> object:  # type: ignore[override]
        side = asyncio.get_running_loop().create_task(self._signal_when_in_flight())
        try:
            return await super().drive()
        finally:
            side.cancel()

    async def _signal_when_in_flight(self) -> None:
        # The server's thread counts the exchanges: an event check, polled.
        while len(self.server.exchanges) < 2:  # noqa: ASYNC110
            await asyncio.sleep(POLL_S)
        if self.where == "callback":
            asyncio.get_running_loop().call_soon(signal.raise_signal, signal.SIGUSR1)
        else:
            signal.raise_signal(signal.SIGUSR1)  # the handler runs here, in this task


@LOOPS
@pytest.mark.parametrize("where", ["callback", "task"])
def test_a_handlers_exception_stops_the_drive_and_is_raised(
    server: ScriptedServer, failing_handler: Callable[..., Any], use_uvloop: bool, where: str
) -> None:
    # No request ends before its 3 s timeout: a drive that missed the exception ends with
    # timeouts and raises nothing.
    server.route("m", Script(steps=(Step(0.0, chat_chunk("x")), Step(3.0, DONE))))
    plan = plan_at([0.0, 0.0, 2.5], timeout_s=3.0)
    run = SignalledMidRun(server, where, plan, Target(server.url, "m"))
    with pytest.raises(TestTimeout, match=r"Timeout >5\.0s"):
        drive_to_end(run, use_uvloop=use_uvloop)
    assert [record.status for record in run.result().records] == [Status.CANCELLED] * 3
    assert signal.getsignal(signal.SIGUSR1) is failing_handler  # the wrapper is gone


@LOOPS
def test_handlers_that_do_not_raise_run_and_are_restored(
    server: ScriptedServer, use_uvloop: bool
) -> None:
    heard: list[int] = []
    previous = signal.signal(signal.SIGUSR1, lambda signum, frame: heard.append(signum))
    try:
        handler = signal.getsignal(signal.SIGUSR1)
        steps = (Step(0.0, chat_chunk("a")), Step(0.2, chat_chunk("b", finish="stop") + DONE))
        server.route("m", Script(steps=steps))
        run = SignalledMidRun(server, "task", plan_at([0.0, 0.0]), Target(server.url, "m"))
        drive_to_end(run, use_uvloop=use_uvloop)
        assert heard == [signal.SIGUSR1]
        assert [record.status for record in run.result().records] == [Status.OK] * 2
        assert signal.getsignal(signal.SIGUSR1) is handler
    finally:
        signal.signal(signal.SIGUSR1, previous)
