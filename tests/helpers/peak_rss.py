"""A child process's own peak RSS, as a user's shell would see it.

``ru_maxrss`` of a forked child counts the memory it inherited at the fork: a child of
the test process would report the test process's size (and whatever it held, a 1 GiB
test fixture included). So the command runs under a small Python that forks it: its
peak is measured from that small process's fork, the way ``/usr/bin/time`` does.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

_MARK = "peak-rss-kib "
_WRAPPER = f"""
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
sys.stdout.flush()
sys.stderr.write("\\n{_MARK}%d\\n" % usage.ru_maxrss)
sys.exit(os.waitstatus_to_exitcode(status))
"""


@dataclass(frozen=True)
class Measured:
    code: int
    output: str  # stdout and stderr together, without the measurement's own line
    peak_rss_mib: float
    elapsed_s: float


def run_measured(
    command: Sequence[str], cwd: Path, env: Mapping[str, str] | None = None
) -> Measured:
    """Run ``command`` (its first item an executable path) to its end; its exit code,
    output, own peak RSS and wall-clock time."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", _WRAPPER, *command], cwd=cwd, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, env={**os.environ, **(env or {})}, check=False,
    )  # fmt: skip
    elapsed = time.monotonic() - started
    output, _, mark = done.stdout.decode("utf-8", "replace").rpartition(_MARK)
    return Measured(done.returncode, output, int(mark.strip()) / 1024, elapsed)
