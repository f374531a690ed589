"""Which containers a sweep removes: the decision, without an engine.

Real containers (the heartbeat file, the sweep on a Docker engine) are in
tests/containers/test_orphan_heartbeat.py.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from pytest_latency.servers import ownership
from pytest_latency.servers.heartbeat import HEARTBEAT_STALE_LABEL, STALE_AFTER_S
from pytest_latency.servers.ownership import (
    OWNER_BOOT_LABEL,
    OWNER_HOST_LABEL,
    OWNER_PID_LABEL,
    OWNER_PIDNS_LABEL,
    orphan_reason,
    owner_is_local,
    owner_labels,
)

NOW = 1_000_000.0


@pytest.fixture(scope="module")
def dead_pid() -> str:
    finished = subprocess.Popen([sys.executable, "-c", "pass"])
    finished.wait()  # a pid that no longer runs (reuse within the test is vanishingly rare)
    return str(finished.pid)


def foreign(**changes: str) -> dict[str, str]:
    """Labels of an owner in another CI job's container on this engine."""
    return {**owner_labels("sim"), OWNER_PIDNS_LABEL: "pid:[4026532999]", **changes}


def test_labels_name_the_run_the_owner_and_its_heartbeat() -> None:
    labels = owner_labels("vllm")
    assert labels[ownership.RUN_ID_LABEL] == ownership.RUN_ID and len(ownership.RUN_ID) == 32
    assert float(labels[HEARTBEAT_STALE_LABEL]) == STALE_AFTER_S
    assert labels["pytest-latency.heartbeat-path"] == "/.pytest-latency-heartbeat"
    assert owner_is_local(labels)


def test_a_local_owner_is_judged_by_its_pid_only(dead_pid: str) -> None:
    alive = owner_labels("sim")
    assert orphan_reason(alive, last_alive=NOW - 10 * STALE_AFTER_S, now=NOW) is None
    dead = {**alive, OWNER_PID_LABEL: dead_pid}
    reason = orphan_reason(dead, last_alive=NOW, now=NOW)  # a fresh beat cannot save it
    assert reason is not None and dead_pid in reason


@pytest.mark.parametrize(
    "elsewhere",
    [
        {OWNER_PIDNS_LABEL: "pid:[4026532999]"},  # another container's pid namespace
        {OWNER_HOST_LABEL: "ci-runner-7"},  # another host
        {OWNER_BOOT_LABEL: "0b5e0b5e-0000-4000-8000-000000000000"},  # same inode, other kernel
    ],
    ids=["pid-namespace", "host", "boot"],
)
def test_an_owner_elsewhere_is_judged_by_its_heartbeat(
    elsewhere: dict[str, str], dead_pid: str
) -> None:
    labels = {**owner_labels("sim"), OWNER_PID_LABEL: dead_pid, **elsewhere}
    assert not owner_is_local(labels)  # its pid means nothing here, dead or not
    assert orphan_reason(labels, last_alive=NOW - 5, now=NOW) is None
    assert orphan_reason(labels, last_alive=NOW - STALE_AFTER_S, now=NOW) is None
    reason = orphan_reason(labels, last_alive=NOW - STALE_AFTER_S - 1, now=NOW)
    assert reason is not None and "last beat 121s ago" in reason


def test_an_owner_elsewhere_that_never_beat_is_kept() -> None:
    assert orphan_reason(foreign(), last_alive=None, now=NOW) is None


def test_a_container_without_heartbeat_labels_elsewhere_is_kept() -> None:
    labels = foreign()
    del labels[HEARTBEAT_STALE_LABEL]
    assert orphan_reason(labels, last_alive=0.0, now=NOW) is None


def test_the_owners_own_stale_limit_is_used() -> None:
    labels = foreign(**{HEARTBEAT_STALE_LABEL: "600"})
    assert orphan_reason(labels, last_alive=NOW - 300, now=NOW) is None
    assert orphan_reason(labels, last_alive=NOW - 601, now=NOW) is not None
