"""Running one drive on an event loop: which loop, the GIL's switch interval, and a main
task that returns nothing.

The loop: asyncio's, on :class:`.precise_loop.PreciseEpollSelector`, whose timers wake
when due instead of up to 2 ms late; or uvloop when asked for (benchmarks).

The switch interval: the plugin's other threads (the OTLP receiver decoding span
batches, the Prometheus scraper, the progress poller) share the GIL with the driving
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

import importlib.util
import sys
from typing import Any

import anyio

from pytest_latency.driver.client import Run
from pytest_latency.driver.precise_loop import new_event_loop

DRIVE_SWITCH_INTERVAL_S = 0.0005


def loop_options(use_uvloop: bool = False) -> dict[str, Any]:
    """anyio's asyncio backend options. asyncio's own loop by default, not uvloop even
    when installed: an exception raised by a Python signal handler while uvloop runs
    (pytest-timeout's signal method failing a test mid-run) does not reach the drive, so
    the test passed instead of failing (``tests/e2e/test_interrupted_run.py``)."""
    if use_uvloop and importlib.util.find_spec("uvloop") is not None:
        return {"use_uvloop": True}
    return {"loop_factory": new_event_loop}


async def _drive(run: Run) -> None:
    await run.drive()


def drive_to_end(run: Run, *, use_uvloop: bool = False) -> None:
    """Drive ``run`` on a new event loop (uvloop when asked and installed: benchmarks);
    read the records with ``run.result()``."""
    options = loop_options(bool(use_uvloop))
    previous = sys.getswitchinterval()
    sys.setswitchinterval(DRIVE_SWITCH_INTERVAL_S)
    try:
        anyio.run(_drive, run, backend_options=options)
    finally:
        sys.setswitchinterval(previous)
