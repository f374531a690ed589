"""A token given to a container never shows: not in ``pytest -l`` tracebacks, logs or JSON.

The fake token reaches the container through ``HF_TOKEN`` (passed by name, like the GPU
kinds do). Two ways a start fails: the Docker SDK refuses the container (its frames
hold the environment in their locals), and the server starts, prints the token, and
exits (its log lines go into the error).
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.e2e.containers.conftest import require_image

pytestmark = [pytest.mark.container, pytest.mark.slow]
IMAGE = "pytest-latency/sim:local"
FAKE_TOKEN = "hf_FAKE_TOKEN_1234567890"

CONFTEST = """
from pytest_latency.servers.container import ContainerSpec, listen_for
from pytest_latency.servers.kinds import ServerKind


class ShellSpec(ContainerSpec):
    '''The sim image running a shell line instead of the server.'''

    def docker_kwargs(self):
        return {**super().docker_kwargs(), "entrypoint": ["sh", "-c", self.command[0]]}


def bad_size(spec):
    return ContainerSpec(
        kind="badsize", image="IMAGE", command=(), listen=listen_for("host", 8000),
        served_model="m", secret_environment=("HF_TOKEN",), shm_size="not-a-size",
        startup_timeout_s=30,
    )


def prints_token(spec):
    return ShellSpec(
        kind="printer", image="IMAGE",
        command=("echo starting with token=$HF_TOKEN; exit 3",),
        listen=listen_for("host", 8000), served_model="m",
        secret_environment=("HF_TOKEN",), startup_timeout_s=30,
    )


KINDS = {"badsize": ServerKind("badsize", bad_size), "printer": ServerKind("printer", prints_token)}


def pytest_latency_server_kind(name):
    return KINDS.get(name)
""".replace("IMAGE", IMAGE)

TEST = """
from pytest_latency import steady

def test_run(latency):
    latency.run(steady(rate=2, duration_s=1), output_tokens=4, seed=1)
"""


@pytest.mark.usefixtures("no_leftovers")
@pytest.mark.parametrize(
    ("kind", "evidence"),
    [
        ("badsize", "cannot start"),  # refused by the Docker SDK
        ("printer", "starting with token=***"),  # the server's own log line, redacted
    ],
)
def test_a_failed_container_start_never_shows_the_token(
    pytester: pytest.Pytester,
    docker_client: Any,
    monkeypatch: pytest.MonkeyPatch,
    kind: str,
    evidence: str,
) -> None:
    require_image(docker_client, IMAGE)
    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    pytester.makeconftest(CONFTEST)
    pytester.makepyfile(TEST)
    result = pytester.runpytest_subprocess(
        "-l", "--tb=long", "-rA", "--log-level=DEBUG", "-p", "no:randomly",
        f"--latency-server={kind}", "--latency-json", "run.json",
    )  # fmt: skip
    output = "\n".join(result.outlines + result.errlines)
    result.assert_outcomes(errors=1)  # a server that cannot start errors the test
    assert evidence in output, output
    assert FAKE_TOKEN not in output
    report = (pytester.path / "run.json").read_text()
    assert json.loads(report)["runs"] == [] and FAKE_TOKEN not in report
