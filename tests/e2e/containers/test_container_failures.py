"""A server that cannot start says why (exit code, its own log lines) and leaves nothing."""

from __future__ import annotations

import time
from typing import Any

import pytest

from pytest_latency.servers import ServerStartError, start_server
from pytest_latency.spec.model import ServerSpec
from tests.e2e.containers.conftest import require_image

pytestmark = [pytest.mark.container, pytest.mark.slow]


@pytest.mark.usefixtures("no_leftovers")
def test_a_server_that_exits_at_start_fails_fast_with_its_logs(docker_client: Any) -> None:
    require_image(docker_client, "pytest-latency/llamacpp:local")
    spec = ServerSpec(kind="llamacpp", options={"args": ["--no-such-flag"]})
    started = time.monotonic()
    with pytest.raises(ServerStartError) as failure, start_server(spec):
        pytest.fail("the server should not have become ready")
    message = str(failure.value)
    assert "llamacpp server did not start" in message
    assert "exited with code" in message
    assert "--no-such-flag" in message  # llama-server's own complaint, from its logs
    # Failing on the exit, not at the 120 s readiness timeout.
    assert time.monotonic() - started < 30


@pytest.mark.usefixtures("no_leftovers")
def test_a_missing_project_image_names_the_build_command_without_pulling(
    docker_client: Any,
) -> None:
    spec = ServerSpec(kind="sim", image="pytest-latency/sim:never-built")
    expected = r"pytest-latency/sim:never-built .*`pytest-latency images build sim`"
    with pytest.raises(ServerStartError, match=expected), start_server(spec):
        pytest.fail("no such image")
