"""SIGTERM (a cancelled CI job) mid-run: the run is kept and the container removed."""

from __future__ import annotations

import json
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.e2e.containers.conftest import require_image

pytestmark = [pytest.mark.container, pytest.mark.slow]
IMAGE = "pytest-latency/sim:local"
CHILD_TEST = """
from pathlib import Path
from pytest_latency import steady

def test_long(latency):
    Path("server.txt").write_text(latency.server.url)  # where the parent watches
    latency.run(steady(rate=5, duration_s=60), output_tokens=200, seed=1)
"""


def _scheduled(url: str) -> float:
    try:
        text = httpx.get(f"{url}/metrics", timeout=2.0).text
    except httpx.HTTPError:
        return 0.0
    found = re.search(r"^sim:requests_scheduled_total (\S+)$", text, re.MULTILINE)
    return float(found.group(1)) if found else 0.0


def _default_sigint() -> None:  # not what a suite started with `&` would hand down
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _wait(condition: Any, child: subprocess.Popen[str], what: str) -> None:
    deadline = time.monotonic() + 120
    while not condition():
        assert child.poll() is None, f"pytest ended before {what}: {child.communicate()[0]}"
        assert time.monotonic() < deadline, f"never {what}"
        time.sleep(0.1)  # polls for an event


def test_sigterm_mid_run_removes_the_container_and_keeps_the_run(
    docker_client: Any, tmp_path: Path
) -> None:
    require_image(docker_client, IMAGE)
    (tmp_path / "test_long.py").write_text(CHILD_TEST)
    child = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:randomly",
         f"--latency-image={IMAGE}", "--latency-json", "run.json", "test_long.py"],
        cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
        preexec_fn=_default_sigint,
    )  # fmt: skip
    owner = {"label": f"pytest-latency.owner-pid={child.pid}"}
    try:
        server_file = tmp_path / "server.txt"
        _wait(server_file.exists, child, "started the container")
        url = server_file.read_text()
        assert len(docker_client.containers.list(all=True, filters=owner)) == 1
        # Served so far: the preflight's test request; run() checks the server again
        # (one more), then its own requests come.
        before = _scheduled(url)
        _wait(lambda: _scheduled(url) >= before + 4, child, "served 3 requests")
        child.send_signal(signal.SIGTERM)
        signalled = time.monotonic()
        gone_at: list[float] = []
        removed = threading.Thread(
            target=_wait_gone, args=(docker_client, owner, gone_at), daemon=True
        )
        removed.start()
        output, _ = child.communicate(timeout=60)
        took_s = time.monotonic() - signalled
        removed.join(timeout=10)
        gone_s = gone_at[0] - signalled if gone_at else float("nan")
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
        for leftover in docker_client.containers.list(all=True, filters=owner):
            leftover.remove(force=True)  # do not leak into the next test; still a failure
    assert child.returncode == 2, output
    assert docker_client.containers.list(all=True, filters=owner) == [], output
    (run,) = json.loads((tmp_path / "run.json").read_text())["runs"]
    assert run["interrupted"] is True and "SIGTERM" in run["interrupted_reason"]
    assert run["server"]["image"] == IMAGE
    requests = run["requests"]
    assert len(requests) == sum(phase["offered"] for phase in run["phases"]) >= 300
    assert sum(request["sent_s"] is not None for request in requests) >= 3
    assert took_s < 30, f"{took_s:.1f}s from SIGTERM to exit"
    print(f"SIGTERM to container removed: {gone_s:.2f}s, to exit: {took_s:.2f}s")


def _wait_gone(client: Any, owner: dict[str, str], gone_at: list[float]) -> None:
    """When the container disappeared (to print; CI kills within seconds of SIGTERM)."""
    deadline = time.monotonic() + 60
    while client.containers.list(all=True, filters=owner) and time.monotonic() < deadline:
        time.sleep(0.05)
    gone_at.append(time.monotonic())
