"""An exception raised by a Python signal handler during a drive stops the drive, on
either loop, wherever the handler happened to run.

A Python signal handler runs at the next bytecode boundary of the main thread, inside
whatever code the loop was running. pytest-timeout's ``signal`` method fails the test
from one (``pytest.fail``, a ``BaseException``). Where that exception lands decides
whether the drive hears it:

- in asyncio's wait for sockets, it propagates out of ``run_until_complete``: the drive
  stops (the usual case with asyncio's loop, which spends its idle time there);
- in a callback or a protocol's ``data_received``, both loops hand it to the loop's
  exception handler, which logs it and goes on;
- in a task's step (a request's task, the loop monitor), the task ends with it and
  nobody awaits that task;
- uvloop runs Python signal handlers from its own self-pipe callback
  (``Loop._read_from_self``, MagicStack/uvloop#94): every such exception is logged and
  dropped, so the timed-out test passed (``tests/e2e/test_interrupted_run.py``).

:class:`SignalStop` wraps, for the drive only, each Python-level handler installed in
the main thread: the wrapper calls the handler and, if it raises, keeps the exception,
cancels the drive's task (as asyncio's own Ctrl-C handler does) and re-raises it in
place. :func:`.loop.drive_to_end` then raises the kept exception once the drive has
marked its unfinished records cancelled, whichever way the loop stopped. The loop's
exception handler stays quiet about that one exception (it is the run's outcome, not a
stray error). asyncio.Runner's Ctrl-C handler is left as it is (:func:`_runners`).
"""

from __future__ import annotations

import asyncio
import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

Handler = Callable[[int, FrameType | None], Any]


def _runners(handler: object) -> bool:
    """Whether ``handler`` is asyncio.Runner's Ctrl-C handler: it cancels the drive by
    itself, and after the run it puts Python's back only if its own is still there."""
    return isinstance(getattr(handler, "__self__", None), asyncio.Runner)


def _wake() -> None:
    """A no-op the loop runs so that it wakes from its wait and sees the cancellation."""


class SignalStop:
    """Python signal handlers wrapped for one drive (main thread only); ``raised`` is
    the first exception one of them raised meanwhile."""

    def __init__(self) -> None:
        self.raised: BaseException | None = None
        self._wrapped: dict[int, tuple[Handler, Handler]] = {}

    def install(self, task: asyncio.Task[Any], loop: asyncio.AbstractEventLoop) -> None:
        """Wrap every callable handler; hush the loop's report of the kept exception."""
        if threading.current_thread() is not threading.main_thread():
            return  # only the main thread runs Python signal handlers (and may set them)
        for signum in signal.valid_signals():
            handler = signal.getsignal(signum)
            if callable(handler) and not _runners(handler):
                wrapper = self._wrap(handler, task, loop)
                signal.signal(signum, wrapper)
                self._wrapped[signum] = (handler, wrapper)
        loop.set_exception_handler(self._quiet_about_kept)

    def restore(self) -> None:
        """Put each original handler back, unless something replaced the wrapper since."""
        for signum, (handler, wrapper) in self._wrapped.items():
            if signal.getsignal(signum) is wrapper:
                signal.signal(signum, handler)
        self._wrapped.clear()

    def _wrap(
        self, handler: Handler, task: asyncio.Task[Any], loop: asyncio.AbstractEventLoop
    ) -> Handler:
        def stop_the_drive_if_it_raises(signum: int, frame: FrameType | None) -> Any:
            try:
                return handler(signum, frame)
            except BaseException as exc:
                if self.raised is None:
                    self.raised = exc
                    task.cancel()
                    loop.call_soon_threadsafe(_wake)
                raise

        return stop_the_drive_if_it_raises

    def _quiet_about_kept(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        if self.raised is None or context.get("exception") is not self.raised:
            loop.default_exception_handler(context)
