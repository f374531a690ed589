"""Orphans across pid namespaces: swept by heartbeat age, never while the owner beats.

Real containers of the sim image (``sleep``, no network), labelled as a CI job in
another container on this engine would label them; their heartbeat files are written
through the engine as the owner's heartbeat thread writes them.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from typing import Any

import pytest

from pytest_latency.servers.heartbeat import Heartbeat, beat, engine_offset, last_beat
from pytest_latency.servers.ownership import (
    OWNER_HOST_LABEL,
    OWNER_PID_LABEL,
    OWNER_PIDNS_LABEL,
    RUN_ID,
    RUN_ID_LABEL,
    owner_labels,
    remove_orphans,
)
from tests.e2e.containers.conftest import require_image

pytestmark = [pytest.mark.container, pytest.mark.slow]
IMAGE = "pytest-latency/sim:local"
ELSEWHERE = {OWNER_PIDNS_LABEL: "pid:[4026532999]", OWNER_PID_LABEL: "1"}


@pytest.fixture
def sleepers(docker_client: Any) -> Iterator[Any]:
    """Starts labelled sleeper containers; removes whatever the test left."""
    require_image(docker_client, IMAGE)
    started: list[Any] = []

    def start(**labels: str) -> Any:
        container = docker_client.containers.run(
            IMAGE, ["120"], entrypoint=["sleep"], detach=True, network_mode="none",
            labels={**owner_labels("orphan-test"), **labels},
        )  # fmt: skip
        started.append(container)
        return container

    yield start
    for container in started:
        for leftover in docker_client.containers.list(all=True, filters={"id": container.id}):
            leftover.remove(force=True)


def _exists(client: Any, container: Any) -> bool:
    return bool(client.containers.list(all=True, filters={"id": container.id}))


def test_a_stale_heartbeat_elsewhere_is_swept_a_fresh_one_is_kept(
    docker_client: Any, sleepers: Any
) -> None:
    now = time.time() + engine_offset(docker_client)  # the engine's clock
    stale = sleepers(**ELSEWHERE)
    beat(stale, now - 600)  # its owner stopped beating ten minutes ago
    fresh = sleepers(**ELSEWHERE)
    beat(fresh, now)
    other_host = sleepers(**ELSEWHERE, **{OWNER_HOST_LABEL: "ci-runner-7"})
    beat(other_host, now - 5)
    never_beat = sleepers(**ELSEWHERE)  # its owner may be starting: nothing says gone

    removed = remove_orphans(docker_client)

    assert stale.name in removed and not _exists(docker_client, stale)
    for kept in (fresh, other_host, never_beat):
        assert kept.name not in removed and _exists(docker_client, kept)


def test_the_heartbeat_thread_keeps_the_beat_fresh(docker_client: Any, sleepers: Any) -> None:
    container = sleepers()
    heartbeat = Heartbeat(container, docker_client, interval_s=0.2).start()
    try:
        seen: set[float] = set()
        deadline = time.monotonic() + 30
        while len(seen) < 3 and time.monotonic() < deadline:
            beat_at = last_beat(container)
            if beat_at is not None:
                seen.add(beat_at)
            time.sleep(0.05)  # polls for the event: a new beat
    finally:
        heartbeat.stop()
    assert len(seen) >= 3 and heartbeat.last_error is None
    now = time.time() + engine_offset(docker_client)
    assert now - 30 < max(seen) <= now + 1  # on the engine's clock


@pytest.mark.usefixtures("no_leftovers")
def test_a_started_server_carries_its_run_id_and_beats(docker_client: Any) -> None:
    from pytest_latency.servers import start_server
    from pytest_latency.spec.model import ServerSpec

    require_image(docker_client, IMAGE)
    with start_server(ServerSpec(kind="sim", image=IMAGE)) as info:
        (container,) = docker_client.containers.list(
            filters={"label": f"{RUN_ID_LABEL}={RUN_ID}", "id": info.details["container"]}
        )
        beat_at = last_beat(container)
        now = time.time() + engine_offset(docker_client)
        # Beating since the start; a sweep from anywhere leaves it alone.
        assert beat_at is not None and now - 60 < beat_at <= now + 1
        assert container.name not in remove_orphans(docker_client)
