"""The Ray generator on a real two-node Ray cluster, inside a loopback-only namespace.

Ray registers its nodes on the machine's non-loopback address, which tests must never
use; in a private network namespace with only loopback (``unshare -n``, as root) both
nodes register at 127.0.0.1. ``cluster_checks.py`` runs there (cluster, embedded server
and driver) and prints what it found; this test asserts on that. One cluster serves
every scenario, so the whole check takes ~45 s. CI (``CI=true``) must run it
(scripts/ray.sh installs Ray and iproute2); elsewhere it skips, saying why.
"""

from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

SCRIPT = Path(__file__).with_name("cluster_checks.py")
LAG_BOUND_S = 0.050  # --latency-max-lag's default: this busy 2-core machine is no quiet host

IN_CI = os.environ.get("CI") == "true"
pytestmark = [pytest.mark.slow, pytest.mark.ray]


def _missing() -> str | None:
    """Why the cluster cannot run here, if so."""
    if importlib.util.find_spec("ray") is None:
        return "Ray is not installed (pip install 'pytest-latency[ray]')"
    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("ip") is None:
        return "a loopback-only network namespace needs root, unshare and ip (iproute2)"
    return None


@pytest.fixture(scope="module")
def found() -> dict[str, Any]:
    if (reason := _missing()) is not None:
        if IN_CI:  # CI must run these
            pytest.fail(f"{reason}: scripts/ray.sh sets it up under CI")
        pytest.skip(f"{reason}; scripts/ray.sh sets it up")
    inner = f"ip link set lo up && exec {sys.executable} {SCRIPT}"
    done = subprocess.run(
        ["unshare", "-n", "sh", "-c", inner],
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def test_two_nodes_register_on_loopback(found: dict[str, Any]) -> None:
    assert found["nodes"] == ["127.0.0.1", "127.0.0.1"]


def test_every_offered_request_has_one_record_and_offsets_are_reported(
    found: dict[str, Any],
) -> None:
    spike = found["spike"]
    assert spike["records"] == spike["unique_ids"] == spike["offered"] > 0
    assert spike["statuses"] == {"ok": spike["offered"]}
    assert spike["lag_p99_s"] <= LAG_BOUND_S
    workers = spike["workers"]
    assert len(workers) == 2
    assert len({worker["node"] for worker in workers}) == 2  # one actor on each node
    for worker in workers:
        # Both nodes read one CLOCK_MONOTONIC: the true offset is 0, inside the bound.
        assert 0 < worker["clock_uncertainty_s"] < LAG_BOUND_S
        assert abs(worker["clock_offset_s"]) <= worker["clock_uncertainty_s"]
        assert worker["lost"] == 0
    assert sum(worker["requests"] for worker in workers) == spike["offered"]


def test_a_ray_run_records_its_busiest_actors_load(found: dict[str, Any]) -> None:
    """generator.client comes from the actors' loop monitors, as with local workers."""
    client = found["spike"]["client"]
    assert client is not None
    assert 0 < client["cpu_s"] <= client["wall_s"] * 1.05  # one actor's driving thread
    assert client["loop_lag_p99_s"] is not None and client["saturated"] is False


def test_a_killed_actor_leaves_cancelled_records_naming_it(found: dict[str, Any]) -> None:
    kill = found["kill"]
    assert kill["records"] == kill["unique_ids"] == kill["offered"]
    lost = {worker["worker"]: worker["lost"] for worker in kill["workers"]}
    assert lost[kill["victim"]] > 0
    assert sum(lost.values()) == lost[kill["victim"]] == kill["statuses"]["cancelled"]
    node = next(w["node"] for w in kill["workers"] if w["worker"] == kill["victim"])
    assert kill["cancelled_errors"] == [
        f"Ray actor {kill['victim']} on node {node} was lost: ActorDiedError: The actor died"
        " unexpectedly before finishing this task.; the request's outcome is unknown"
    ]
    # The other actor's whole share came back, and what the victim's ended before the
    # last collection.
    survivor = next(w for w in kill["workers"] if w["worker"] != kill["victim"])
    assert kill["statuses"]["ok"] == kill["offered"] - lost[kill["victim"]]
    assert kill["statuses"]["ok"] >= survivor["requests"]


def test_a_lost_actor_does_not_delay_the_end_or_leave_actors(found: dict[str, Any]) -> None:
    kill = found["kill"]
    # Placement, clock pings and warm-up take a few seconds on a busy machine; the
    # plan's own bound is its duration plus the 10 s request timeout.
    assert kill["wall_s"] < kill["plan_duration_s"] + 10 + 15
    assert kill["left"]["named_actors"] == []
    assert kill["left"]["cpus_free"] == kill["left"]["cpus_total"]


def test_more_workers_than_cpus_is_a_clear_error_at_once(found: dict[str, Any]) -> None:
    assert found["too_many"]["error"] == (
        "5 generator workers need 5 CPUs (1 each); the Ray cluster has 2: lower"
        " --latency-ray-workers"
    )
    assert found["too_many"]["wall_s"] < 10


def test_sigterm_keeps_every_record_of_a_ray_run(found: dict[str, Any]) -> None:
    sigterm = found["sigterm"]
    assert sigterm["interrupted"] is True, sigterm["output_tail"]
    assert sigterm["exit_code"] == 2, sigterm["output_tail"]  # pytest: interrupted
    assert sigterm["records"] == sigterm["unique_ids"] == sigterm["offered"] > 0
    assert sigterm["ok"] >= 5
    assert sigterm["exit_s"] < 30
    assert [w["lost"] for w in sigterm["workers"]] == [0, 0]
    assert "generator: 2 Ray workers on 2 nodes; clock offsets" in sigterm["output_tail"]
    assert sigterm["schema_problems"] == []  # generator.workers is in the shipped schema
