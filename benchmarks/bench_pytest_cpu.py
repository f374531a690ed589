"""A pytest plugin for ``bench_pytest_load.py``: the pytest process's own CPU (every
thread, from configure to unconfigure), optionally a cProfile of its main thread (which
drives) and the launcher's spin override. Loaded with ``-p bench_pytest_cpu``; does
nothing unless ``BENCH_PYTEST_CPU`` names the file to write."""

from __future__ import annotations

import cProfile
import json
import os
import resource
import time
from pathlib import Path
from typing import Any

import pytest

_started: dict[str, float] = {}
_profiler: list[cProfile.Profile] = []
_during: dict[str, float] = {"process_cpu_s": 0.0, "thread_cpu_s": 0.0}


def _cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def pytest_configure(config: pytest.Config) -> None:
    if "BENCH_PYTEST_CPU" not in os.environ:
        return
    if "BENCH_PYTEST_SPIN_US" in os.environ:
        from pytest_latency.driver import pacing

        pacing.SPIN_NS = round(float(os.environ["BENCH_PYTEST_SPIN_US"]) * 1e3)
    if "BENCH_PYTEST_PROFILE" in os.environ:
        _profiler.append(cProfile.Profile())
        _profiler[0].enable()
    _started.update(cpu=_cpu_s(), wall=time.perf_counter())
    _watch_drives()


def _watch_drives() -> None:
    """The process's CPU (every thread) and the driving thread's while drives run: the
    difference is what the plugin's other threads (receiver, scraper) took meanwhile."""
    from pytest_latency.driver import entry

    drive = entry.drive_to_end  # type: ignore[attr-defined]

    def watched(*args: Any, **kwargs: Any) -> None:
        process, thread = _cpu_s(), time.thread_time()
        try:
            drive(*args, **kwargs)
        finally:
            _during["process_cpu_s"] += _cpu_s() - process
            _during["thread_cpu_s"] += time.thread_time() - thread

    entry.drive_to_end = watched  # type: ignore[attr-defined]


def pytest_unconfigure(config: pytest.Config) -> None:
    if not _started:
        return
    cpu_s, wall_s = _cpu_s() - _started["cpu"], time.perf_counter() - _started["wall"]
    if _profiler:
        _profiler[0].disable()
        _profiler[0].dump_stats(os.environ["BENCH_PYTEST_PROFILE"])
    found = {"cpu_s": cpu_s, "wall_s": wall_s, **_during}
    Path(os.environ["BENCH_PYTEST_CPU"]).write_text(json.dumps(found))
