"""The progress line during a run, written through pytest's terminal reporter.

On a terminal one line is rewritten in place every second (runs shorter than
:data:`SHOW_AFTER_S` show nothing); otherwise (a CI log, a pipe) one plain line is
written every :data:`PLAIN_INTERVAL_S`. ``-q`` turns it off. Writing suspends pytest's
output capture for the moment of the write, as pytest's own live logging does, so the
line is seen while the test's own output stays captured.

The reports come from the driver's poller thread (:mod:`pytest_latency.driver.progress`),
never from its event loop. This module is imported when pytest configures, so it loads
nothing heavy.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any

import pytest

from pytest_latency.report.wrapping import wrap

if TYPE_CHECKING:
    from pytest_latency.driver.progress import Progress

PLAIN_INTERVAL_S = 10.0  # one line per 10 s in a CI log
TTY_INTERVAL_S = 1.0  # the rewritten line on a terminal
SHOW_AFTER_S = 3.0  # on a terminal, short runs show no progress line at all


def format_progress(progress: Progress) -> str:
    """``latency 23s of 45s: sent 115/312, completed 112, in flight 3, 22s left``; past
    the planned duration, ``latency 45s planned, draining 5s: ...`` (in-flight requests
    finishing after the last send)."""
    if progress.final:
        done = f"latency run done in {progress.elapsed_s:.1f}s: sent {progress.sent}"
        done += f"/{progress.planned}"
        if progress.completed is not None:
            done += f", completed {progress.completed}"
        return done
    elapsed_s, duration_s = round(progress.elapsed_s), round(progress.duration_s)
    if elapsed_s > duration_s:
        # Never "40s of 35s": say the plan is over and what the run is waiting for.
        doing = "draining" if progress.sent >= progress.planned else "sending late"
        head = f"latency {duration_s}s planned, {doing} {elapsed_s - duration_s}s: "
    else:
        head = f"latency {elapsed_s}s of {duration_s}s: "
    if progress.completed is None:
        counts = f"{progress.sent}/{progress.planned} due (workers count the rest)"
    else:
        counts = (
            f"sent {progress.sent}/{progress.planned}, completed {progress.completed},"
            f" in flight {progress.in_flight}"
        )
    if elapsed_s > duration_s:
        return head + counts
    left = progress.time_left_s
    tail = f", {left:.0f}s left" if left > 0 else ", all sent"
    return head + counts + tail


class TerminalProgress:
    """A driver progress listener that writes through pytest's terminal reporter."""

    def __init__(self, config: pytest.Config) -> None:
        self._config = config
        self._shown = False  # this run has written a progress line

    def _reporter(self) -> Any:
        return self._config.pluginmanager.get_plugin("terminalreporter")

    @property
    def interval_s(self) -> float:
        reporter = self._reporter()
        return TTY_INTERVAL_S if reporter is not None and reporter.isatty() else PLAIN_INTERVAL_S

    def _uncaptured(self) -> AbstractContextManager[object]:
        capture = self._config.pluginmanager.get_plugin("capturemanager")
        if capture is None:
            return nullcontext()
        disabled: AbstractContextManager[object] = capture.global_and_fixture_disabled()
        return disabled

    def __call__(self, progress: Progress) -> None:
        reporter = self._reporter()
        if reporter is None or self._config.get_verbosity() < 0:
            return
        on_terminal = bool(reporter.isatty())
        if progress.final:
            if self._shown and on_terminal:  # leave the last state and end its line
                with self._uncaptured():
                    self._rewrite(reporter, format_progress(progress))
                    reporter.write("\n", flush=True)
            self._shown = False
            return
        if on_terminal and progress.elapsed_s < SHOW_AFTER_S:
            return
        text = format_progress(progress)
        with self._uncaptured():
            if not self._shown:
                reporter.ensure_newline()  # off the line pytest started for the test
                self._shown = True
            if on_terminal:
                self._rewrite(reporter, text)
            else:
                width = self._config.get_terminal_writer().fullwidth
                for line in wrap(text, width, hanging="  "):
                    reporter.write_line(line)
                reporter.flush()

    def _rewrite(self, reporter: Any, text: str) -> None:
        width = self._config.get_terminal_writer().fullwidth
        reporter.rewrite(text[: width - 1], erase=True)
        reporter.flush()
