"""Child Pythons a test interrupts with Ctrl-C (SIGINT), made to hear it.

A shell starts background jobs (``cmd &``, ``nohup``, some CI runners) with SIGINT
*ignored*, and children inherit that. Python then installs no KeyboardInterrupt handler
at startup, so a test's SIGINT is dropped: the child's run went on to its end and the
test saw no "interrupted" or empty output (issue 13 item 10). The children here install
Python's own handler first thing, whatever they inherited, and :func:`interrupt` sends
SIGINT only once the child catches it (read from ``/proc/PID/status``), failing at once
with the reason otherwise.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from pathlib import Path

_HEAR_CTRL_C = "import signal; signal.signal(signal.SIGINT, signal.default_int_handler)\n"
HANDLER_TIMEOUT_S = 30.0  # the handler is the child's first statement: only a bound


def python_code_argv(code: str) -> list[str]:
    """``python -c CODE`` with Ctrl-C heard."""
    return [sys.executable, "-c", _HEAR_CTRL_C + code]


def pytest_argv(*args: str) -> list[str]:
    """``python -m pytest ARGS`` with Ctrl-C heard."""
    return python_code_argv("import sys, pytest; sys.exit(pytest.console_main())") + list(args)


def catches_sigint(pid: int) -> bool | None:
    """Whether ``pid`` has a SIGINT handler installed; None where /proc cannot tell."""
    status = Path(f"/proc/{pid}/status")
    try:
        text = status.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("SigCgt:"):
            return bool(int(line.split()[1], 16) >> (signal.SIGINT - 1) & 1)
    return None


def interrupt(process: subprocess.Popen[str]) -> None:
    """Send Ctrl-C once ``process`` has its handler installed (an event, polled)."""
    deadline = time.monotonic() + HANDLER_TIMEOUT_S
    while catches_sigint(process.pid) is False and process.poll() is None:
        assert time.monotonic() < deadline, "the child never installed a SIGINT handler"
        time.sleep(0.01)  # polling interval of the event check
    assert process.poll() is None, f"the child exited (status {process.returncode}) first"
    process.send_signal(signal.SIGINT)
