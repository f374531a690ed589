"""The Ctrl-C tests' children hear SIGINT even when started with it ignored, as a shell
starts background jobs (the cause of their failures on busy, backgrounded runs)."""

from __future__ import annotations

import shlex
import subprocess
import sys

import pytest

from tests.helpers.interrupting import catches_sigint, interrupt, python_code_argv

WAIT = "import sys, time\nprint('up', flush=True)\ntime.sleep(60)\n"


def _started_with_sigint_ignored(argv: list[str]) -> subprocess.Popen[str]:
    # `trap '' INT` ignores SIGINT in the shell, and exec hands that on, like `cmd &`.
    command = "trap '' INT; exec " + " ".join(shlex.quote(part) for part in argv)
    child = subprocess.Popen(
        ["sh", "-c", command], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stdout.readline() == "up\n"  # the event
    return child


@pytest.mark.slow
@pytest.mark.skipif(catches_sigint(1) is None, reason="needs /proc/PID/status")
def test_a_plain_child_inherits_ignored_sigint_and_ours_does_not() -> None:
    plain = _started_with_sigint_ignored([sys.executable, "-c", WAIT])
    try:
        assert catches_sigint(plain.pid) is False  # Ctrl-C would be dropped
    finally:
        plain.kill()
        plain.communicate()
    ours = _started_with_sigint_ignored(python_code_argv(WAIT))
    try:
        assert catches_sigint(ours.pid) is True
        interrupt(ours)
        _, err = ours.communicate(timeout=30)
    finally:
        ours.kill()
    assert "KeyboardInterrupt" in err
