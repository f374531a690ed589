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


@pytest.fixture(scope="session", autouse=True)
def written_json_matches_the_schema(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[None]:
    """After the session, every JSON file the plugin wrote in a test folder is checked
    against docs/schema/pytest-latency-1.json (a failure shows as the last test's error)."""
    yield
    from tests.helpers.json_schema import invalid_files

    failures = invalid_files(tmp_path_factory.getbasetemp())
    assert not failures, "files that break the JSON schema:\n" + "\n".join(failures)
