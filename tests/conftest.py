import subprocess
from collections.abc import Iterator
from multiprocessing.process import BaseProcess
from typing import Any, NoReturn

import pytest

from pytest_latency.telemetry.receiver import OtlpReceiver
from pytest_latency.telemetry.receiver_thread import ThreadReceiver
from tests.helpers.otlp_helpers import ReceiverKind
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


SLOW_CHILD = (
    "this test starts a child process ({what}): mark it @pytest.mark.slow. The fast tier"
    " (pytest -m 'not slow', docs/architecture.md \"Tests\") runs in-process only; a child"
    " Python costs a second or more on a busy two-core machine"
)


@pytest.fixture(autouse=True)
def fast_tests_start_no_child_process(
    request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Keep the fast tier fast: a test not marked ``slow`` that starts a child process
    (an inner pytest run, the CLI, the embedded server's process, driver workers) fails
    at once, saying to mark it. Every way the suite starts one goes through these two."""
    if request.node.get_closest_marker("slow") is not None:
        return

    def refuse_popen(self: subprocess.Popen[Any], args: Any, *rest: Any) -> NoReturn:
        raise AssertionError(SLOW_CHILD.format(what=f"subprocess {args!r}"[:200]))

    def refuse_process(self: BaseProcess) -> NoReturn:
        raise AssertionError(SLOW_CHILD.format(what=f"multiprocessing {self.name}"))

    monkeypatch.setattr(subprocess.Popen, "_execute_child", refuse_popen)
    monkeypatch.setattr(BaseProcess, "start", refuse_process)


@pytest.fixture
def receiver_in_this_process(monkeypatch: pytest.MonkeyPatch) -> None:
    """A session's OTLP receiver serves in a thread of this process (its engine, the same
    HTTP handler and store), not in its own process: for fast tests of the session that
    need its receiver's URL or a join, not the process split (tests/unit/telemetry/
    test_receiver_process.py tests that)."""
    from pytest_latency.telemetry import receiver
    from pytest_latency.telemetry.receiver_thread import ThreadReceiver

    monkeypatch.setattr(receiver, "OtlpReceiver", ThreadReceiver)


@pytest.fixture(
    params=[
        pytest.param(OtlpReceiver, id="process", marks=pytest.mark.slow),
        pytest.param(ThreadReceiver, id="thread"),
    ]
)
def receiver_kind(request: pytest.FixtureRequest) -> ReceiverKind:
    """Each receiver in turn: in its own process (slow: it starts one), and its engine in
    a thread of this process (the same handler, caps and store)."""
    found: ReceiverKind = request.param
    return found
