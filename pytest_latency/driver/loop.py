"""Running one drive on an event loop: which loop, the GIL's switch interval, and a main
task that returns nothing.

The loop: asyncio's on :class:`.precise_loop.PreciseEpollSelector`, whose timers wake
when due instead of up to 2 ms late; ``PYTEST_LATENCY_LOOP=uvloop`` (the ``uvloop``
extra) drives on uvloop instead. uvloop spends 10-20 % less CPU per chunk, but in paired
runs on the project's machine it kept the 1,000 req/s schedule (p99 lag <= 5 ms) in 2 of 7
runs against 5 of 7, with 4x the median lag (docs/performance.md), so it is not the
default. An exception raised by a Python signal handler mid-drive (pytest-timeout's
``signal`` method) stops the drive on either loop (:mod:`.signal_stop`; uvloop used to
log and drop it).

The switch interval: the plugin's other threads (the Prometheus scraper, the progress
poller, the thread that reads the OTLP receiver's process) share the GIL with the driving
loop. A thread busy in Python holds it for up to ``sys.getswitchinterval()`` (5 ms by
default) before the loop's thread gets it back, so a send due meanwhile goes out up to
5 ms late: scattered late sends at low load in an otherwise idle process. During a
drive the interval is :data:`DRIVE_SWITCH_INTERVAL_S` (``benchmarks/bench_stalls.py``
measures it), and restored after.

The main task returns None, not the :class:`.client.DriveResult`: on Python 3.11,
``asyncio.Runner`` restores the SIGINT handler after the run through
``signal.getsignal``, which builds (and drops) a ``repr`` of a handler holding the main
task, and a finished task's repr includes its result. With every record in that result
the repr cost 0.2 s of CPU per 1,000 requests of 64 tokens, twice per run.
"""

from __future__ import annotations

import asyncio
import importlib.util
import os
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

import anyio

from pytest_latency.driver import pacing
from pytest_latency.driver.client import Run
from pytest_latency.driver.precise_loop import new_event_loop
from pytest_latency.driver.signal_stop import SignalStop

DRIVE_SWITCH_INTERVAL_S = 0.0005
LOOP_VARIABLE = "PYTEST_LATENCY_LOOP"
T = TypeVar("T")


def loop_options(use_uvloop: bool | None = False) -> dict[str, Any]:
    """anyio's asyncio backend options: asyncio's own loop on the precise selector, or
    uvloop (when installed) with ``use_uvloop``; ``None`` = the environment's choice,
    ``PYTEST_LATENCY_LOOP=uvloop`` (``pytest-latency[uvloop]``), asyncio's otherwise.
    Callers that run their own coroutine should use :func:`run_on_loop`, which also
    stops on a signal handler's exception."""
    if use_uvloop is None:
        use_uvloop = os.environ.get(LOOP_VARIABLE, "").strip().lower() == "uvloop"
    if use_uvloop and importlib.util.find_spec("uvloop") is not None:
        return {"use_uvloop": True}
    return {"loop_factory": new_event_loop}


async def _guarded(stop: SignalStop, func: Callable[..., Awaitable[T]], *args: Any) -> T:
    task, loop = asyncio.current_task(), asyncio.get_running_loop()
    assert task is not None
    stop.install(task, loop)
    pacing.set_coarse_timers(type(loop).__module__.startswith("uvloop"))
    try:
        return await func(*args)
    finally:
        pacing.set_coarse_timers(False)
        stop.restore()


def run_on_loop(func: Callable[..., Awaitable[T]], *args: Any, use_uvloop: bool | None = None) -> T:
    """``anyio.run(func, *args)`` the way a drive runs: on :func:`loop_options`'s loop,
    with the short switch interval, the launcher's sleep on uvloop's millisecond grid
    (:func:`.pacing.set_coarse_timers`), and an exception a signal handler raised
    meanwhile (a test's timeout) raised here once ``func`` has stopped
    (:mod:`.signal_stop`)."""
    options = loop_options(use_uvloop)
    previous = sys.getswitchinterval()
    sys.setswitchinterval(DRIVE_SWITCH_INTERVAL_S)
    stop = SignalStop()
    try:
        result: T = anyio.run(_guarded, stop, func, *args, backend_options=options)
    except BaseException:
        if stop.raised is None:
            raise
    finally:
        stop.restore()
        sys.setswitchinterval(previous)
    if stop.raised is not None:
        raise stop.raised
    return result


async def _drive(run: Run) -> None:
    await run.drive()


def drive_to_end(run: Run, *, use_uvloop: bool | None = None) -> None:
    """Drive ``run`` with :func:`run_on_loop` (asyncio's loop unless uvloop is chosen);
    read the records with ``run.result()``."""
    run_on_loop(_drive, run, use_uvloop=use_uvloop)
