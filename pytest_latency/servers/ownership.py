"""Which test process owns a container, and removing those whose owner is gone.

Testcontainers' reaper (Ryuk) is disabled: its image cannot be pulled without a
registry. Instead every container carries its owner's pid, host name and pid namespace;
a container whose owner no longer runs (a killed CI job) is removed by the next start.
Owners in another pid namespace (another CI container sharing the engine and the host
name) are never judged: their pids mean nothing here.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Mapping
from typing import Any

OWNER_PID_LABEL = "pytest-latency.owner-pid"
OWNER_HOST_LABEL = "pytest-latency.owner-host"
OWNER_PIDNS_LABEL = "pytest-latency.owner-pidns"
KIND_LABEL = "pytest-latency.kind"


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return "unknown"


def owner_labels(kind: str) -> dict[str, str]:
    return {
        OWNER_PID_LABEL: str(os.getpid()),
        OWNER_HOST_LABEL: socket.gethostname(),
        OWNER_PIDNS_LABEL: _pid_namespace(),
        KIND_LABEL: kind,
    }


def owner_alive(labels: Mapping[str, str]) -> bool:
    """False only when the owner provably ran in this pid namespace and is gone."""
    same_namespace = labels.get(OWNER_PIDNS_LABEL) == _pid_namespace() != "unknown"
    if labels.get(OWNER_HOST_LABEL) != socket.gethostname() or not same_namespace:
        return True  # not ours to judge
    try:
        os.kill(int(labels.get(OWNER_PID_LABEL, "0")), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:
        return True
    return True


def remove_orphans(client: Any) -> list[str]:
    """Remove containers whose owning test process no longer runs; their names.

    Other sessions may be cleaning up at the same time: a container that vanishes while
    we look, or whose removal is already in progress, is simply not ours to report.
    """
    import docker.errors

    removed = []
    candidates = client.containers.list(
        all=True, filters={"label": OWNER_PID_LABEL}, ignore_removed=True
    )
    for container in candidates:
        if owner_alive(container.labels):
            continue
        try:
            container.remove(force=True)
        except (docker.errors.NotFound, docker.errors.APIError):
            continue
        removed.append(container.name)
    return removed
