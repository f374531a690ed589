from collections.abc import Iterator

import pytest

from tests.helpers.scripted_server import ScriptedServer

pytest_plugins = ["pytester"]


def pytest_configure(config: pytest.Config) -> None:
    # Inner pytest runs go to subprocesses: an in-process run unloads and re-imports
    # modules (httpx, httpcore) between runs, which breaks their exception mapping.
    config.option.runpytest = "subprocess"


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    """A scripted streaming server on an ephemeral 127.0.0.1 port, in its own thread."""
    scripted = ScriptedServer()
    scripted.start()
    try:
        yield scripted
    finally:
        scripted.stop()
