"""Container tests need a Docker engine and the project's images.

Under ``CI=true`` a missing engine or image is a failure; elsewhere the tests skip with
how to enable them. ``bash scripts/container-images.sh`` installs and starts Docker (as
root) and builds the images (``pytest-latency images build``); ``scripts/test.sh`` runs it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

ENABLE_HINT = (
    "run `bash scripts/container-images.sh` (installs and starts Docker as root, builds "
    "the images; llama.cpp takes ~5 min once, vLLM on CPU ~3 min)"
)


def _require(reason: str) -> None:
    if os.environ.get("CI") == "true":
        pytest.fail(f"container tests must run under CI=true, but {reason}", pytrace=False)
    pytest.skip(f"{reason}; {ENABLE_HINT}")


@pytest.fixture(scope="session")
def docker_client() -> Iterator[Any]:
    try:
        import docker

        client = docker.from_env()
        client.ping()
    except Exception as error:
        _require(f"no Docker engine answers ({type(error).__name__})")
    os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")
    yield client
    client.close()


def require_image(client: Any, image: str) -> None:
    import docker.errors

    try:
        client.images.get(image)
    except docker.errors.ImageNotFound:
        _require(f"the image {image} is not built")


def _labels(client: Any) -> dict[str, dict[str, str]]:
    containers = client.containers.list(
        all=True, filters={"label": "pytest-latency.kind"}, ignore_removed=True
    )
    return {container.id: dict(container.labels) for container in containers}


@pytest.fixture
def no_leftovers(docker_client: Any) -> Iterator[None]:
    """Fails the test if a container it started (and only it) still exists afterwards;
    other sessions sharing the engine come and go as they please.

    The test's own pytest sessions have exited by teardown, so a container of theirs
    that is still there has an owner that is gone. A new container whose owner still
    runs belongs to another session working on the same engine at the same time (seen
    on a busy machine), not to this test.
    """
    from pytest_latency.servers.ownership import OWNER_PID_LABEL, owner_is_local, pid_running

    def owner_alive(labels: dict[str, str]) -> bool:  # False: provably gone, from here
        return not owner_is_local(labels) or pid_running(labels.get(OWNER_PID_LABEL))

    before = set(_labels(docker_client))
    yield
    left = {
        container_id
        for container_id, labels in _labels(docker_client).items()
        if container_id not in before and not owner_alive(labels)
    }
    assert not left, f"containers left behind: {sorted(left)}"
