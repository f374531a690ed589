"""SIGTERM stops a latency session the way Ctrl-C does, so a cancelled CI job cleans up.

By default SIGTERM kills Python at once: no ``finally`` runs, so containers leak and
the run's records never reach the JSON. While the plugin is configured, SIGTERM is
handed to whatever handles Ctrl-C (SIGINT) at that moment:

- during a drive, asyncio's runner cancels the drive, whose records (the unfinished
  ones marked ``cancelled``) come back in :class:`pytest_latency.driver.RunInterrupted`;
- anywhere else, Python's default handler raises :class:`KeyboardInterrupt`, which
  pytest reports as an interrupted session and every cleanup runs on the way out.

A SIGINT that is ignored (a job started with ``&`` from a non-interactive shell
inherits SIGINT ignored) still does not swallow SIGTERM: it raises KeyboardInterrupt.
Once the session is cleaning up (:func:`cleaning_up`), further SIGTERMs are noted and
ignored, so a second signal cannot leave a container half removed.

Light (stdlib and pytest): the plugin imports this module at configure time in every run.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

CTRL_C = "Ctrl-C"
SIGTERM = "SIGTERM"


class TerminationHandler:
    """The SIGTERM handler of one configured plugin: install, note, restore."""

    def __init__(self) -> None:
        self._previous: Any = None
        self._installed = False
        self.received = 0  # SIGTERMs since install
        self.closing = False

    def install(self) -> bool:
        """Handle SIGTERM from now on; False (nothing changed) off the main thread,
        where Python cannot set handlers, or when SIGTERM is ignored on purpose."""
        if threading.current_thread() is not threading.main_thread():
            return False
        previous = signal.getsignal(signal.SIGTERM)
        if previous is signal.SIG_IGN:  # e.g. nohup-style wrappers: their choice stands
            return False
        self._previous = previous
        signal.signal(signal.SIGTERM, self._on_sigterm)
        self._installed = True
        return True

    def restore(self) -> None:
        """Put back the handler that was there before :meth:`install` (if still ours)."""
        if not self._installed:
            return
        self._installed = False
        if signal.getsignal(signal.SIGTERM) == self._on_sigterm:
            signal.signal(signal.SIGTERM, self._previous)

    def _on_sigterm(self, signum: int, frame: FrameType | None) -> None:
        self.received += 1
        if self.closing:
            return  # already on the way out: let the cleanup finish
        handler = signal.getsignal(signal.SIGINT)
        if callable(handler):  # asyncio's runner during a drive; default_int_handler
            handler(signal.SIGINT, frame)
            return
        raise KeyboardInterrupt  # SIGINT ignored or default: a stop request still stops


class StopServersOnInterrupt:
    """A plugin object while configured: on Ctrl-C or SIGTERM, stop the session's
    servers first, before pytest formats the traceback and the reports are written.

    CI follows SIGTERM with SIGKILL within seconds (GitHub Actions 2.5 s, ``docker
    stop`` 10 s), and reporting an interrupted run takes seconds on a busy runner: a
    container removed only at unconfigure could be killed with its owner and leak.
    """

    def __init__(self, handler: TerminationHandler, stop_servers: Callable[[], None]) -> None:
        self.handler = handler
        self.stop_servers = stop_servers

    @pytest.hookimpl(tryfirst=True)
    def pytest_keyboard_interrupt(self) -> None:
        cleaning_up(self.handler)
        self.stop_servers()


#: Where the plugin keeps its config's handler until unconfigure.
HANDLER_KEY = pytest.StashKey[TerminationHandler]()
# Handlers of configured plugins, innermost last (pytester runs pytest inside pytest).
_handlers: list[TerminationHandler] = []


def install() -> TerminationHandler:
    """Handle SIGTERM for a configured plugin (if this thread can); pass the handler
    back to :func:`restore` at unconfigure."""
    handler = TerminationHandler()
    handler.install()
    _handlers.append(handler)
    return handler


def cleaning_up(handler: TerminationHandler) -> None:
    """The session is removing its servers: further SIGTERMs must not interrupt that."""
    handler.closing = True


def restore(handler: TerminationHandler) -> None:
    """Put back the SIGTERM handler that was there before ``handler`` (unconfigure)."""
    handler.restore()
    if handler in _handlers:
        _handlers.remove(handler)


def interrupt_reason() -> str:
    """What stopped the run: SIGTERM if one arrived while the plugin was configured."""
    return SIGTERM if any(handler.received for handler in _handlers) else CTRL_C
