"""Ctrl-C after the drive ended (while the session waits for server spans) keeps the run.

The drive turns Ctrl-C into ``RunInterrupted``; the wait for late spans after it (up to
``--latency-otlp-grace``) used to let a plain KeyboardInterrupt through, and the
finished run never reached the JSON.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tests.helpers.scripted_server import DONE, Script, ScriptedServer, Step, chat_chunk

SPEC = """\
server: {{url: "{url}", model: quick, api: chat}}
workload:
  seed: 1
  input_tokens: 5
  output_tokens: 4
  timeout: 5s
  phases: [{{name: steady, arrival: constant, rate: 10, duration: 1s}}]
objectives:
  - {{metric: ttft, p: 50, max: 1s}}
"""


def _default_sigint() -> None:  # a suite started with `&` would hand SIGINT ignored down
    signal.signal(signal.SIGINT, signal.SIG_DFL)


@pytest.mark.slow
def test_ctrl_c_while_waiting_for_spans_keeps_the_finished_run(
    server: ScriptedServer, tmp_path: Path
) -> None:
    server.models = ["quick"]  # the preflight checks the model is listed
    server.route("quick", Script(steps=(Step(0.01, chat_chunk("x")), Step(0.02, DONE))))
    (tmp_path / "quick.slo.yaml").write_text(textwrap.dedent(SPEC.format(url=server.url)))
    child = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "--latency-otlp-receiver", "127.0.0.1:0", "--latency-otlp-grace", "120s",
         "--latency-json", "run.json", "quick.slo.yaml"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=_default_sigint,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        # The drive is over once every request was answered and the client closed all
        # its connections (the driver's and the metrics scraper's, after the drive).
        while len(server.exchanges) < 10 or server._tasks or server.connections == 0:
            assert child.poll() is None and time.monotonic() < deadline, "never finished"
            time.sleep(0.02)  # polls for an event
        child.send_signal(signal.SIGINT)  # now the session waits up to 120 s for spans
        output, _ = child.communicate(timeout=60)
    finally:
        child.kill()
        child.wait()
    assert child.returncode == 2, output
    (run,) = json.loads((tmp_path / "run.json").read_text())["runs"]
    assert run["interrupted"] is True and "Ctrl-C" in run["interrupted_reason"]
    requests = run["requests"]
    assert len(requests) == sum(phase["offered"] for phase in run["phases"]) >= 10
    assert {request["status"] for request in requests} == {"ok"}
