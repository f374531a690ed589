"""The real llama.cpp server in a real container: a spec file, a burst, a crash, Ctrl-C."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
from typing import Any

import httpx
import numpy as np
import pytest

from tests.e2e.containers.conftest import require_image

pytestmark = [pytest.mark.container, pytest.mark.slow]

IMAGE = "pytest-latency/llamacpp:local"

# One slot, ~50 ms per 128-token answer on one CPU thread: 4/s is light load, a 40/s
# burst offers about twice what the slot can serve, so requests wait (deferred).
SPEC = """\
server: {kind: llamacpp, options: {parallel: 1}}
workload:
  seed: 5
  input_tokens: [40, 80]
  output_tokens: 128
  phases:
    - {name: steady, arrival: poisson, rate: 4, duration: 6s}
    - {name: burst, arrival: poisson, rate: 40, duration: 2s}
objectives:
  - {metric: error_rate, max: 5%}
"""


@pytest.fixture
def llamacpp_image(docker_client: Any) -> str:
    require_image(docker_client, IMAGE)
    return IMAGE


def _per_phase(requests: list[dict[str, Any]], phase: str, field: str) -> np.ndarray:
    return np.array([r[field] for r in requests if r["phase"] == phase], dtype=float)


@pytest.mark.usefixtures("no_leftovers")
def test_spec_file_runs_steady_and_burst_against_the_real_server(
    pytester: pytest.Pytester, docker_client: Any, llamacpp_image: str
) -> None:
    pytester.makefile(".slo.yaml", llama=SPEC)
    result = pytester.runpytest("--latency-json", "run.json", "-v")
    result.assert_outcomes(passed=1)
    (run,) = json.loads((pytester.path / "run.json").read_text())["runs"]
    server = run["server"]
    assert server["kind"] == "llamacpp" and server["image"] == llamacpp_image
    assert server["model"] == "tiny-random-llama"
    assert 0 < server["cold_start_s"] < 120
    requests = run["requests"]
    assert len(requests) == sum(phase["offered"] for phase in run["phases"]) > 20
    assert {r["status"] for r in requests} == {"ok"}
    # Real token counts from the server's usage: ignore_eos holds random weights to the cap.
    assert {r["output_tokens_source"] for r in requests} == {"usage"}
    assert {r["output_tokens"] for r in requests} == {128}
    # llama.cpp's last chunk reports its own prompt time for every request.
    assert all(r["prefill_s"] is not None and r["prefill_s"] > 0 for r in requests)
    # Under the burst, requests wait for the slot (requests_deferred > 0), so TTFT grows
    # by queueing while the per-token pace of the one running request does not change.
    deferred = [v for v in run["server_metrics"]["waiting"] if v is not None]
    assert max(deferred) > 0
    ttft_growth = np.percentile(_per_phase(requests, "burst", "ttft_s"), 90) / np.percentile(
        _per_phase(requests, "steady", "ttft_s"), 90
    )
    itl = {
        phase: np.median(np.concatenate([r["itl_s"] for r in requests if r["phase"] == phase]))
        for phase in ("steady", "burst")
    }
    assert ttft_growth > 10.0
    # Sub-millisecond gaps on a shared 2-core machine: 2x is the noise allowance, still
    # far from the TTFT growth (typically hundreds of times).
    assert 0.5 < itl["burst"] / itl["steady"] < 2.0


@pytest.mark.usefixtures("no_leftovers")
def test_killing_the_container_mid_run_gives_classified_failures_and_no_leftover(
    pytester: pytest.Pytester, docker_client: Any, llamacpp_image: str
) -> None:
    pytester.makepyfile(
        """
        import os
        import threading
        import time

        import docker
        import httpx

        from pytest_latency import objective, steady

        def kill_once_serving():
            # Synchronise on an event, not a timer: kill as soon as the server has
            # finished generating for some request of the run (a timer could fire
            # before the first request on a busy machine).
            client = docker.from_env()
            labels = ["pytest-latency.kind=llamacpp", f"pytest-latency.owner-pid={os.getpid()}"]
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                for container in client.containers.list(filters={"label": labels}):
                    arguments = container.attrs["Args"]
                    port = arguments[arguments.index("--port") + 1]
                    try:
                        text = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=1.0).text
                    except httpx.HTTPError:
                        continue
                    for line in text.splitlines():
                        if line.startswith("llamacpp:tokens_predicted_total"):
                            if float(line.split()[-1]) > 0:
                                container.kill()
                                return
                time.sleep(0.05)  # polling interval of the event check

        def test_killed(latency):
            assert latency.server.kind == "llamacpp"  # up and healthy before the clock
            threading.Thread(target=kill_once_serving, daemon=True).start()
            result = latency.run(
                steady(rate=8, duration_s=5), input_tokens=(40, 80), output_tokens=48, seed=2
            )
            result.assert_slo(objective("error_rate", max="5%"))
        """
    )
    result = pytester.runpytest("--latency-server=llamacpp", "--latency-json", "run.json")
    result.assert_outcomes(failed=1)
    exited = "*SERVER EXITED DURING THE RUN: container * exited with code 137*"
    result.stdout.fnmatch_lines([exited])
    result.stdout.fnmatch_lines(["*the server exited during the run*"])
    (run,) = json.loads((pytester.path / "run.json").read_text())["runs"]
    assert "exited with code 137" in run["server"]["exited_during_run"]
    requests = run["requests"]
    assert len(requests) == run["phases"][0]["offered"]
    assert len({r["id"] for r in requests}) == len(requests)  # one record each
    statuses = {r["status"] for r in requests}
    assert "ok" in statuses  # before the kill
    failed = [r for r in requests if r["status"] != "ok"]
    assert failed and all(r["error"] for r in failed)
    assert {r["status"] for r in failed} <= {"connection_error", "protocol_error", "timeout"}


def _serving_tokens(client: Any, owner_label: str) -> bool:
    """The owner's llama-server is up and has generated tokens (the run is under way)."""
    for container in client.containers.list(filters={"label": owner_label}):
        arguments = container.attrs["Args"]
        port = arguments[arguments.index("--port") + 1]
        try:
            metrics = httpx.get(f"http://127.0.0.1:{port}/metrics", timeout=1.0).text
        except httpx.HTTPError:
            return False
        for line in metrics.splitlines():
            if line.startswith("llamacpp:tokens_predicted_total"):
                return float(line.split()[-1]) > 0
    return False


def test_ctrl_c_mid_run_removes_the_container(
    pytester: pytest.Pytester, docker_client: Any, llamacpp_image: str
) -> None:
    pytester.makepyfile(
        """
        from pytest_latency import steady

        def test_long(latency):
            latency.run(steady(rate=2, duration_s=60), output_tokens=16, seed=1)
        """
    )
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--latency-server=llamacpp",
        ],
        cwd=pytester.path,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    try:
        owner = f"pytest-latency.owner-pid={process.pid}"
        deadline = time.monotonic() + 120
        while not _serving_tokens(docker_client, owner):
            assert time.monotonic() < deadline and process.poll() is None, "never served"
            time.sleep(0.2)
        process.send_signal(signal.SIGINT)  # mid-run: the server has answered requests
        output, _ = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert "interrupted" in output  # pytest reports the Ctrl-C (our RunInterrupted)
    assert docker_client.containers.list(all=True, filters={"label": owner}) == []


def test_containers_of_a_dead_test_process_are_removed_on_the_next_start(
    docker_client: Any,
) -> None:
    from pytest_latency.servers.ownership import (
        OWNER_PID_LABEL,
        OWNER_PIDNS_LABEL,
        owner_labels,
        remove_orphans,
    )

    image = "pytest-latency/sim:local"  # built on every path, registry or not
    require_image(docker_client, image)
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()  # a pid that no longer runs (reuse within the test is vanishingly rare)

    def sleeper(**labels: str) -> Any:
        return docker_client.containers.run(
            image, ["120"], entrypoint=["sleep"], detach=True, network_mode="none",
            labels={**owner_labels("orphan-test"), **labels},
        )  # fmt: skip

    orphan = sleeper(**{OWNER_PID_LABEL: str(dead.pid)})
    # The same dead pid in another pid namespace (another CI container on this engine)
    # is someone else's process: never judged, never removed.
    foreign = sleeper(**{OWNER_PID_LABEL: str(dead.pid), OWNER_PIDNS_LABEL: "pid:[1]"})
    try:
        removed = remove_orphans(docker_client)
        assert orphan.name in removed and foreign.name not in removed
        assert docker_client.containers.list(all=True, filters={"id": orphan.id}) == []
        assert docker_client.containers.list(all=True, filters={"id": foreign.id})
    finally:
        for container_id in (orphan.id, foreign.id):
            for leftover in docker_client.containers.list(all=True, filters={"id": container_id}):
                leftover.remove(force=True)
