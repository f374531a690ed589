"""``python -m pytest_latency.sim`` as the plugin runs it: a subprocess on a free port."""

from __future__ import annotations

import os
import re
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from pytest_latency.telemetry.receiver import OtlpReceiver

# every test starts the server as a subprocess (1-2 s each on a busy machine)
pytestmark = pytest.mark.slow

REPO = Path(__file__).resolve().parents[3]
BANNER = re.compile(r"^pytest-latency sim listening on (http://127\.0\.0\.1:(\d+))\n$")


def read_line(proc: subprocess.Popen[str], timeout_s: float) -> str:
    """One stdout line, or fail after ``timeout_s`` instead of blocking forever."""
    assert proc.stdout is not None
    with selectors.DefaultSelector() as selector:
        selector.register(proc.stdout, selectors.EVENT_READ)
        assert selector.select(timeout_s), f"no output within {timeout_s}s"
    return proc.stdout.readline()


@pytest.fixture
def cli() -> Iterator[tuple[subprocess.Popen[str], str]]:
    paths = [str(REPO), os.environ.get("PYTHONPATH", "")]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(path for path in paths if path))
    command = [sys.executable, "-m", "pytest_latency.sim", "--port", "0", "--decode-base", "0.002",
               "--replicas", "1", "--max-batch", "4", "--cold-start", "0.2"]  # fmt: skip
    pipe = subprocess.PIPE
    with subprocess.Popen(command, text=True, env=env, stdout=pipe, stderr=pipe) as proc:
        try:
            match = BANNER.match(read_line(proc, timeout_s=20))
            assert match is not None
            yield proc, match.group(1)
        finally:
            if proc.poll() is None:
                proc.kill()
            proc.wait(timeout=10)


def test_cli_prints_one_line_serves_and_exits_cleanly_on_sigterm(
    cli: tuple[subprocess.Popen[str], str],
) -> None:
    proc, url = cli
    with httpx.Client(base_url=url, trust_env=False, timeout=5) as client:
        deadline = time.monotonic() + 10
        while client.get("/health").status_code != 200:  # cold start of 0.2 s
            assert time.monotonic() < deadline
            time.sleep(0.02)
        body = {"prompt": "one two", "max_tokens": 5}
        assert client.post("/v1/completions", json=body).json()["usage"]["completion_tokens"] == 5
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0
    assert proc.stdout is not None and proc.stdout.read() == ""  # exactly one line in all
    assert proc.stderr is not None and "Traceback" not in proc.stderr.read()


def test_sigterm_ends_open_streams_promptly(cli: tuple[subprocess.Popen[str], str]) -> None:
    proc, url = cli
    received: list[str] = []

    def stream() -> None:  # 5000 tokens at ~2 ms would take 10 s
        body = {"prompt": "x", "max_tokens": 5000, "stream": True}
        with (
            httpx.Client(base_url=url, trust_env=False, timeout=10) as client,
            client.stream("POST", "/v1/completions", json=body) as response,
        ):
            received.extend(response.iter_lines())

    time.sleep(0.3)  # past the cold start
    reader = threading.Thread(target=stream, daemon=True)
    reader.start()
    deadline = time.monotonic() + 10
    while len(received) < 10:
        assert time.monotonic() < deadline, "the stream did not start"
        time.sleep(0.01)
    started = time.monotonic()
    proc.send_signal(signal.SIGTERM)
    assert proc.wait(timeout=10) == 0
    assert time.monotonic() - started < 3.0
    reader.join(timeout=10)
    assert not reader.is_alive()
    assert "data: [DONE]" not in received  # cut short, and visibly so (no [DONE])


def test_cli_rejects_invalid_configuration() -> None:
    env = dict(os.environ, PYTHONPATH=str(REPO))
    command = [sys.executable, "-m", "pytest_latency.sim", "--port", "0", "--replicas", "0"]
    done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=20)
    assert done.returncode == 2
    assert "replicas" in done.stderr and done.stdout == ""


def test_cli_exports_spans_and_flushes_them_on_sigterm() -> None:
    """How the plugin wires it: its receiver's URL as ``--otlp-traces-endpoint``."""
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    headers = {"traceparent": f"00-{trace_id}-b7ad6b7169203331-01"}
    env = dict(os.environ, PYTHONPATH=str(REPO))
    with OtlpReceiver() as receiver:
        command = [sys.executable, "-m", "pytest_latency.sim", "--port", "0",
                   "--decode-base", "0.002", "--otlp-traces-endpoint",
                   receiver.traces_url]  # fmt: skip
        pipe = subprocess.PIPE
        with subprocess.Popen(command, text=True, env=env, stdout=pipe, stderr=pipe) as proc:
            try:
                match = BANNER.match(read_line(proc, timeout_s=20))
                assert match is not None
                with httpx.Client(base_url=match.group(1), trust_env=False, timeout=5) as client:
                    body = {"prompt": "one two", "max_tokens": 3}
                    response = client.post("/v1/completions", json=body, headers=headers)
                    assert response.status_code == 200
                proc.send_signal(signal.SIGTERM)  # at once: the span is still batched
                assert proc.wait(timeout=10) == 0
            finally:
                if proc.poll() is None:
                    proc.kill()
                proc.wait(timeout=10)
        # Flushed before exit: already there, no waiting for a late batch.
        joined = receiver.timings([trace_id], grace_s=0.5)
    assert joined[trace_id].source == "otlp:vllm"
    assert joined[trace_id].completion_tokens == 3


def test_plugin_reads_the_banner_the_cli_prints() -> None:
    from pytest_latency.servers.sim import LISTENING_PREFIX
    from pytest_latency.sim.__main__ import BANNER

    assert BANNER.format(url="") == LISTENING_PREFIX
