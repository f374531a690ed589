"""Ctrl-C in the middle of a run keeps what was measured: the run goes into the JSON."""

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
server: {{url: "{url}", model: slow, api: chat}}
workload:
  seed: 1
  input_tokens: 5
  output_tokens: 4
  timeout: 20s
  phases: [{{name: steady, arrival: constant, rate: 10, duration: 3s}}]
objectives:
  - {{metric: ttft, p: 50, max: 1s}}
"""


@pytest.mark.slow
def test_ctrl_c_keeps_the_run_with_interrupted_true(server: ScriptedServer, tmp_path: Path):
    server.route("slow", Script(steps=(Step(0.01, chat_chunk("x")), Step(10.0, DONE))))
    (tmp_path / "slow.slo.yaml").write_text(textwrap.dedent(SPEC.format(url=server.url)))
    child = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
         "--latency-json", "run.json", "slow.slo.yaml"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while len(server.exchanges) < 3 and time.monotonic() < deadline:
            time.sleep(0.02)  # polls for an event (requests in flight), not a fixed wait
        assert len(server.exchanges) >= 3, "the run never started"
        child.send_signal(signal.SIGINT)
        output, _ = child.communicate(timeout=30)
    finally:
        child.kill()
    assert child.returncode == 2, output  # pytest's "interrupted"
    (run,) = json.loads((tmp_path / "run.json").read_text())["runs"]
    assert run["interrupted"] is True and "Ctrl-C" in run["interrupted_reason"]
    assert len(run["requests"]) == 30  # one record per offered request, sent or not
    statuses = {request["status"] for request in run["requests"]}
    assert statuses == {"cancelled"}
