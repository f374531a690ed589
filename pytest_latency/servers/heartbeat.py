"""A container's heartbeat: a file inside it that its owner rewrites every few seconds.

Docker labels cannot change after a container starts, and CI jobs that share one
engine share nothing else: each job runs in its own container (its own pid namespace
and file system), sometimes on another host than the engine. The engine is the only
thing they all reach, so the heartbeat lives there: the owner copies a tiny file into
its container (``put_archive``, the API behind ``docker cp``; no shell or ``exec`` in
the image needed) whose modification time is the beat, and any sweeper reads that time
back (``get_archive`` returns it with the file's stat). Labels say where the file is
and how old it may get (:func:`heartbeat_labels`).

Times are on the engine's clock: the owner writes ``local time + (engine time - local
time)``, measured once per heartbeat, and sweepers compare with the engine's time, so
the hosts of two jobs need not agree on the time.
"""

from __future__ import annotations

import io
import logging
import tarfile
import threading
import time
from datetime import datetime
from typing import Any

logger = logging.getLogger("pytest_latency.servers")

HEARTBEAT_PATH_LABEL = "pytest-latency.heartbeat-path"
HEARTBEAT_INTERVAL_LABEL = "pytest-latency.heartbeat-interval-s"
HEARTBEAT_STALE_LABEL = "pytest-latency.heartbeat-stale-after-s"
HEARTBEAT_FILE = "/.pytest-latency-heartbeat"  # in the container's root: always there
INTERVAL_S = 10.0
# Twelve missed beats: an owner alive but starved of CPU for two minutes is not
# mistaken for a dead one, while a leaked GPU container lives two minutes longer.
STALE_AFTER_S = 120.0


def heartbeat_labels(interval_s: float = INTERVAL_S) -> dict[str, str]:
    return {
        HEARTBEAT_PATH_LABEL: HEARTBEAT_FILE,
        HEARTBEAT_INTERVAL_LABEL: f"{interval_s:g}",
        HEARTBEAT_STALE_LABEL: f"{max(STALE_AFTER_S, 12 * interval_s):g}",
    }


def _docker_time(text: str) -> float:
    """Docker's RFC 3339 times (``2026-01-01T10:00:00.123456789Z``) as Unix seconds."""
    return datetime.fromisoformat(text).timestamp()


def engine_offset(client: Any) -> float:
    """The engine's clock minus ours, in seconds (0 when the engine does not say)."""
    try:
        return _docker_time(str(client.info()["SystemTime"])) - time.time()
    except Exception:  # an engine without SystemTime: our clock is the best we have
        return 0.0


def beat(container: Any, at: float) -> None:
    """Write the heartbeat file into ``container`` with modification time ``at``."""
    name = HEARTBEAT_FILE.lstrip("/")
    data = f"{at:.3f}\n".encode()
    buffer = io.BytesIO()
    with tarfile.open(fileobj=buffer, mode="w", format=tarfile.PAX_FORMAT) as archive:
        entry = tarfile.TarInfo(name)
        entry.size = len(data)
        entry.mtime = at  # PAX keeps the fraction
        archive.addfile(entry, io.BytesIO(data))
    container.put_archive("/", buffer.getvalue())


def last_beat(container: Any, path: str = HEARTBEAT_FILE) -> float | None:
    """When the owner last wrote the heartbeat (engine clock), None if it never did."""
    import docker.errors

    try:
        stream, stat = container.get_archive(path)
    except docker.errors.NotFound:
        return None
    close = getattr(stream, "close", None)
    if close is not None:
        close()
    return _docker_time(stat["mtime"]) if stat and stat.get("mtime") else None


class Heartbeat:
    """Beats for one container from a daemon thread until :meth:`stop`."""

    def __init__(self, container: Any, client: Any, interval_s: float = INTERVAL_S) -> None:
        self.container = container
        self.client = client
        self.interval_s = interval_s
        self.beats = 0
        self.last_error: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name="pytest-latency-heartbeat", daemon=True
        )

    def start(self) -> Heartbeat:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=2.0)  # a beat takes ~0.1 s; never hold up the removal

    def _run(self) -> None:
        offset = engine_offset(self.client)
        while True:
            try:
                beat(self.container, time.time() + offset)
                self.beats += 1
            except Exception as error:  # removed from outside, engine gone: not fatal
                if self.last_error is None:
                    logger.warning("container heartbeat failed: %s", error)
                self.last_error = f"{type(error).__name__}: {error}"
            if self._stop.wait(self.interval_s):
                return
