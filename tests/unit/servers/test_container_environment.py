"""run_container leaves the process's environment alone (checked without Docker)."""

from __future__ import annotations

import os
from typing import Any

import pytest
from testcontainers.core.config import testcontainers_config

from pytest_latency.servers import container as container_module
from pytest_latency.servers.container import ContainerSpec, Listen, run_container


class FakeContainer:
    """Stands in for testcontainers' DockerContainer: records what start() saw."""

    def __init__(self) -> None:
        self.reaper_disabled_at_start: bool | None = None
        self.env: dict[str, str] = {}  # DockerContainer's environment for the start
        self.stopped = False
        client = type("Client", (), {"ping": lambda self: True})()
        self._docker = type("Docker", (), {"client": client})()

    def get_docker_client(self) -> Any:
        return self._docker

    def start(self) -> None:
        self.reaper_disabled_at_start = testcontainers_config.ryuk_disabled

    def get_wrapped_container(self) -> Any:
        image = type("Image", (), {"id": "sha256:fake"})()
        return type("Wrapped", (), {"id": "0123456789abcdef", "image": image})()

    def stop(self) -> None:
        self.stopped = True


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> FakeContainer:
    fake = FakeContainer()
    monkeypatch.setattr(container_module, "_docker_container", lambda spec: fake)
    monkeypatch.setattr(container_module, "remove_orphans", lambda client: None)
    monkeypatch.setattr(container_module, "_prepare_host", lambda spec, client: None)
    monkeypatch.setattr(container_module, "wait_healthy", lambda *args, **kwargs: 0.5)
    monkeypatch.setattr(testcontainers_config, "_ryuk_disabled", False)
    return fake


SPEC = ContainerSpec(
    kind="llamacpp", image="x/y:1", command=(), listen=Listen("127.0.0.1", 9), served_model="m"
)


def test_the_reaper_is_off_for_the_start_only_and_the_environment_is_unchanged(
    fake: FakeContainer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TESTCONTAINERS_RYUK_DISABLED", raising=False)
    before = dict(os.environ)
    with run_container(SPEC) as running:
        assert running.url == "http://127.0.0.1:9" and running.cold_start_s == 0.5
    assert fake.reaper_disabled_at_start is True
    assert fake.stopped
    assert dict(os.environ) == before
    assert testcontainers_config.ryuk_disabled is False  # restored


def test_a_users_own_reaper_setting_stands(
    fake: FakeContainer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TESTCONTAINERS_RYUK_DISABLED", "false")
    with run_container(SPEC):
        pass
    assert fake.reaper_disabled_at_start is False
    assert os.environ["TESTCONTAINERS_RYUK_DISABLED"] == "false"
