"""Ctrl-C in the middle of a run keeps what was measured: the run goes into the JSON."""

from __future__ import annotations

import importlib.util
import os
import subprocess
import textwrap
import time
from pathlib import Path

import pytest

from tests.helpers.interrupting import interrupt, pytest_argv
from tests.helpers.json_schema import assert_valid_run_file
from tests.helpers.scripted_server import DONE, Script, ScriptedServer, Step, chat_chunk

SPEC = """\
server: {{url: "{url}", model: slow, api: chat}}
workload:
  seed: 1
  input_tokens: 5
  output_tokens: 4
  timeout: 30s
  phases: [{{name: steady, arrival: constant, rate: 10, duration: 3s}}]
objectives:
  - {{metric: ttft, p: 50, max: 1s}}
"""


HAS_UVLOOP = importlib.util.find_spec("uvloop") is not None
# Both loops the drive may run on (driver/loop.py): uvloop once dropped an exception raised
# by a signal handler, so the timed-out test passed.
LOOPS = pytest.mark.parametrize(
    "loop",
    ["asyncio", pytest.param("uvloop", marks=pytest.mark.skipif(not HAS_UVLOOP, reason="uvloop"))],
)


def on_loop(loop: str) -> dict[str, str]:
    return {**os.environ, "PYTEST_LATENCY_LOOP": loop}


@pytest.mark.slow
@LOOPS
def test_ctrl_c_keeps_the_run_with_interrupted_true(
    server: ScriptedServer, tmp_path: Path, loop: str
):
    server.models = ["slow"]  # the preflight checks the model is listed
    # No request ends on its own before the interrupt (60 s to [DONE], 30 s deadline):
    # every record is cancelled whatever the load, and a lost Ctrl-C shows as a run that
    # ended by itself within the 60 s bound below.
    server.route("slow", Script(steps=(Step(0.01, chat_chunk("x")), Step(60.0, DONE))))
    (tmp_path / "slow.slo.yaml").write_text(textwrap.dedent(SPEC.format(url=server.url)))
    child = subprocess.Popen(
        pytest_argv("-q", "-p", "no:cacheprovider", "--latency-json", "run.json", "slow.slo.yaml"),
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=on_loop(loop),
    )  # fmt: skip
    try:
        # Synchronise on an event: requests in flight means the drive runs under
        # asyncio's Ctrl-C handler (the preflight's one-token request comes first, then
        # the run's). Starting pytest on a busy machine can take many seconds; the
        # deadline only bounds a child that never gets there.
        deadline = time.monotonic() + 120
        while len(server.exchanges) < 4 and child.poll() is None:
            assert time.monotonic() < deadline, "the run never started"
            time.sleep(0.02)  # polling interval of the event check
        interrupt(child)
        output, _ = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 2, output  # pytest's "interrupted"
    (run,) = assert_valid_run_file(tmp_path / "run.json")["runs"]
    assert run["interrupted"] is True and "Ctrl-C" in run["interrupted_reason"]
    assert run["outcome"] == "interrupted"
    assert len(run["requests"]) == 30  # one record per offered request, sent or not
    statuses = {request["status"] for request in run["requests"]}
    assert statuses == {"cancelled"}


TIMED_TEST = """\
import signal

import pytest

from pytest_latency import Phase


def test_times_out_mid_run(latency):
    # What pytest-timeout's signal method does: fail the test from a signal handler.
    signal.signal(signal.SIGUSR1, lambda *_: pytest.fail("Timeout >5.0s"))
    latency.run(Phase("steady", rate=10, duration_s=3, arrival="constant"),
                input_tokens=(5, 5), output_tokens=4, seed=1, timeout_s=30)
"""


@pytest.mark.slow
@LOOPS
def test_a_test_failing_mid_run_keeps_the_run(server: ScriptedServer, tmp_path: Path, loop: str):
    import signal

    server.models = ["slow"]
    # As above: no request can end before the signal, so every record is cancelled.
    server.route("slow", Script(steps=(Step(0.01, chat_chunk("x")), Step(60.0, DONE))))
    (tmp_path / "test_timed.py").write_text(TIMED_TEST)
    child = subprocess.Popen(
        pytest_argv("-q", "-p", "no:cacheprovider", "--latency-json", "run.json",
                    "--latency-server", server.url, "--latency-model", "slow", "test_timed.py"),
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=on_loop(loop),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120  # bounds only a child that never starts its run
        while len(server.exchanges) < 4 and child.poll() is None:
            assert time.monotonic() < deadline, "the run never started"
            time.sleep(0.02)  # polling interval of the event check
        child.send_signal(signal.SIGUSR1)
        output, _ = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 1, output  # the test failed, as the timeout said
    assert "Timeout >5.0s" in output and "INTERNALERROR" not in output
    runs = assert_valid_run_file(tmp_path / "run.json")["runs"]
    assert len(runs) == 1, output
    (run,) = runs
    assert run["interrupted"] is True and run["outcome"] == "interrupted"
    assert run["interrupted_reason"] == (
        "interrupted (the test stopped mid-run: Failed: Timeout >5.0s)"
    )
    assert len(run["requests"]) == 30  # one record per offered request, sent or not
    assert {request["status"] for request in run["requests"]} == {"cancelled"}


CAPACITY_SPEC = """\
server: {{url: "{url}", model: slow, api: chat}}
workload: {{seed: 1, input_tokens: 5, output_tokens: 4, timeout: 30s}}
capacity: {{rates: [5, 20], probe: 10s, budget: 3m}}
objectives:
  - {{metric: ttft, p: 50, max: 1s}}
  - {{metric: capacity, min: 2}}
"""


@pytest.mark.slow
@LOOPS
def test_ctrl_c_keeps_a_capacity_search_so_far(server: ScriptedServer, tmp_path: Path, loop: str):
    server.models = ["slow"]
    server.route("slow", Script(steps=(Step(0.01, chat_chunk("x")), Step(60.0, DONE))))
    (tmp_path / "search.slo.yaml").write_text(CAPACITY_SPEC.format(url=server.url))
    child = subprocess.Popen(
        pytest_argv("-q", "-p", "no:cacheprovider", "--latency-json", "run.json",
                    "search.slo.yaml"),
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        env=on_loop(loop),
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120  # bounds only a child that never starts probing
        while len(server.exchanges) < 4 and child.poll() is None:
            assert time.monotonic() < deadline, "the search never started"
            time.sleep(0.02)  # polling interval of the event check
        interrupt(child)
        output, _ = child.communicate(timeout=60)
    finally:
        child.kill()
    assert child.returncode == 2, output
    (run,) = assert_valid_run_file(tmp_path / "run.json")["runs"]
    assert run["interrupted"] is True and "Ctrl-C" in run["interrupted_reason"]
    assert run["capacity"]["passed_rps"] is None and run["capacity"]["failed_rps"] is None
    assert run["capacity"]["probes"] == []  # the first probe never decided
    # The first probe's requests, sent or not, each once, none of them ended.
    assert len(run["requests"]) >= 3
    assert {request["status"] for request in run["requests"]} == {"cancelled"}
