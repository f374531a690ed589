"""Which test run owns a container, and removing those whose owner is gone.

Testcontainers' reaper (Ryuk) is disabled: its image cannot be pulled without a
registry. Instead every container carries labels naming its owner: a run id (one per
test process), the process's pid, host name, boot id and pid namespace, and where its
heartbeat is (``heartbeat.py``). The next container start anywhere on the engine
removes orphans:

- an owner in this very pid namespace (same boot of the same kernel) is judged by its
  pid: gone means orphan, running means kept, whatever its heartbeat says;
- an owner anywhere else (another CI job's container sharing the engine, another host)
  is judged by its heartbeat: older than the owner's stated limit means orphan. A
  container that never beat, or carries no heartbeat labels (an older version's), is
  kept: nothing shows its owner is gone.
"""

from __future__ import annotations

import os
import socket
import time
import uuid
from collections.abc import Mapping
from functools import cache
from typing import Any

from pytest_latency.servers.heartbeat import (
    HEARTBEAT_PATH_LABEL,
    HEARTBEAT_STALE_LABEL,
    engine_offset,
    heartbeat_labels,
    last_beat,
)

OWNER_PID_LABEL = "pytest-latency.owner-pid"
OWNER_HOST_LABEL = "pytest-latency.owner-host"
OWNER_PIDNS_LABEL = "pytest-latency.owner-pidns"
OWNER_BOOT_LABEL = "pytest-latency.owner-boot"
RUN_ID_LABEL = "pytest-latency.run-id"
KIND_LABEL = "pytest-latency.kind"
RUN_ID = uuid.uuid4().hex  # this test process's run


def _pid_namespace() -> str:
    try:
        return os.readlink("/proc/self/ns/pid")
    except OSError:
        return "unknown"


@cache
def _boot_id() -> str:
    """This boot of this kernel: every host's initial pid namespace has the same inode."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as file:
            return file.read().strip() or "unknown"
    except OSError:
        return "unknown"


def owner_labels(kind: str) -> dict[str, str]:
    return {
        RUN_ID_LABEL: RUN_ID,
        OWNER_PID_LABEL: str(os.getpid()),
        OWNER_HOST_LABEL: socket.gethostname(),
        OWNER_PIDNS_LABEL: _pid_namespace(),
        OWNER_BOOT_LABEL: _boot_id(),
        KIND_LABEL: kind,
        **heartbeat_labels(),
    }


def owner_is_local(labels: Mapping[str, str]) -> bool:
    """True when the owner's pid means something here: same host, boot, pid namespace."""
    return (
        labels.get(OWNER_HOST_LABEL) == socket.gethostname()
        and labels.get(OWNER_BOOT_LABEL) == _boot_id() != "unknown"
        and labels.get(OWNER_PIDNS_LABEL) == _pid_namespace() != "unknown"
    )


def pid_running(pid_text: str | None) -> bool:
    try:
        os.kill(int(pid_text or "0"), 0)
    except (ValueError, ProcessLookupError):
        return False
    except PermissionError:  # someone else's process: it runs
        return True
    return True


def orphan_reason(labels: Mapping[str, str], last_alive: float | None, now: float) -> str | None:
    """Why the container's owner is gone, or None to keep the container.

    ``last_alive``: the owner's last heartbeat (None: never beat); ``now`` on the
    same clock. Local owners are judged by their pid alone.
    """
    if owner_is_local(labels):
        pid = labels.get(OWNER_PID_LABEL)
        return None if pid_running(pid) else f"its owner (pid {pid}, this host) is gone"
    try:
        stale_after = float(labels[HEARTBEAT_STALE_LABEL])
    except (KeyError, ValueError):
        return None  # no heartbeat to judge by: not ours to judge
    if last_alive is None:
        return None
    age = now - last_alive
    if age <= stale_after:
        return None
    host = labels.get(OWNER_HOST_LABEL, "?")
    return f"its owner (on {host}) last beat {age:.0f}s ago (stale after {stale_after:g}s)"


def remove_orphans(client: Any) -> list[str]:
    """Remove containers whose owning test run is gone; their names.

    Other sessions may be cleaning up at the same time: a container that vanishes while
    we look, or whose removal is already in progress, is simply not ours to report.
    """
    import docker.errors

    removed = []
    candidates = client.containers.list(
        all=True, filters={"label": OWNER_PID_LABEL}, ignore_removed=True
    )
    offset: float | None = None
    for container in candidates:
        labels = container.labels
        last_alive = None
        if not owner_is_local(labels) and HEARTBEAT_PATH_LABEL in labels:
            if offset is None:  # the engine's clock, asked once per sweep
                offset = engine_offset(client)
            try:
                last_alive = last_beat(container, labels[HEARTBEAT_PATH_LABEL])
            except (docker.errors.NotFound, docker.errors.APIError):
                continue  # gone meanwhile, or unreadable: nothing to judge
        if orphan_reason(labels, last_alive, time.time() + (offset or 0.0)) is None:
            continue
        try:
            container.remove(force=True)
        except (docker.errors.NotFound, docker.errors.APIError):
            continue
        removed.append(container.name)
    return removed
