"""A URL server that goes away mid-run, through pytest on loopback: the test ERRORs (a spec
file) or fails (a Python test) headed by the infrastructure line, never passes, and
``judge`` on its JSON exits 1.

Before this, 150 planned requests against a server killed mid-run came out
``INCONCLUSIVE (bounds 0%..100%, effective n=4)`` for a 5% error-rate limit, and the
test passed.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator

import pytest

from tests.helpers.scripted_server import DONE, Script, ScriptedServer, Step, chat_chunk

pytestmark = pytest.mark.slow  # each runs 150 requests in an inner pytest (5-20 s busy)

ANSWERED_BEFORE_THE_KILL = 60  # run requests answered before the server goes away
INNER_TIMEOUT_S = 180  # bounds the inner pytest on a busy machine (about 10 s idle)
FOUR_TOKENS = Script(
    steps=(
        Step(0.0, chat_chunk("Hi", role="assistant")),
        *(Step(0.005 * i, chat_chunk(" there")) for i in range(1, 4)),
        Step(0.02, chat_chunk(finish="stop")),
        Step(0.02, DONE),
    )
)
HANG = Script(status=None)  # accept, read the request, never answer
# 150 requests at 30/s: enough to decide a 5% error rate (125 needed at 99%).
SPEC = """\
server: {{url: "{url}", model: m}}
workload:
  output_tokens: 4
  input_tokens: 5
  timeout: 5s
  phases: [{{name: steady, arrival: constant, rate: 30, duration: 5s}}]
objectives:
  - {{metric: error_rate, max: 5%}}
  - {{metric: ttft, p: 95, max: 2s}}
"""
HEADLINE = re.compile(
    r"infrastructure: (\d+) of 150 requests failed with connection refused.*?, from request"
    r" #(\d+) \(\S+\) to the end of the run — the server went away\?"
)


@pytest.fixture
def dying_server() -> Iterator[ScriptedServer]:
    """A server stopped (connections refused from then on) once it has answered the
    preflight's request and :data:`ANSWERED_BEFORE_THE_KILL` of the run's."""
    server = ScriptedServer()
    server.models = ["m"]
    enough = threading.Event()

    def script(index: int) -> Script:
        if index == ANSWERED_BEFORE_THE_KILL:  # index 0 is the preflight's request
            enough.set()
        return FOUR_TOKENS

    server.route("m", script)
    server.start()

    def stop_when_enough_were_answered() -> None:
        if enough.wait(timeout=INNER_TIMEOUT_S):
            server.stop()

    stopper = threading.Thread(target=stop_when_enough_were_answered, daemon=True)
    stopper.start()
    yield server
    enough.set()  # a run that never got there: stop the server anyway
    stopper.join(timeout=10)


def _flat(result: pytest.RunResult) -> str:
    return " ".join(result.stdout.str().split())  # messages wrap at the terminal width


def test_a_spec_file_whose_server_is_killed_mid_run_errors_with_the_headline(
    pytester: pytest.Pytester, dying_server: ScriptedServer
) -> None:
    spec = pytester.makefile(".slo.yaml", dying=SPEC.format(url=dying_server.url))
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "--latency-json", "run.json", timeout=INNER_TIMEOUT_S
    )
    result.assert_outcomes(errors=1)
    text = _flat(result)
    found = HEADLINE.search(text)
    assert found is not None, text
    assert int(found.group(1)) >= 150 - ANSWERED_BEFORE_THE_KILL - 5  # a few in flight
    assert int(found.group(2)) >= ANSWERED_BEFORE_THE_KILL - 5
    assert "ERROR dying.slo.yaml::dying - Failed: infrastructure:" in text  # short summary
    assert "the last request answered before them: #" in text
    assert "passed" not in text.split("short test summary info")[-1]
    (run,) = json.loads((pytester.path / "run.json").read_text())["runs"]
    assert run["outcome"] == "error"
    assert {objective["verdict"] for objective in run["objectives"]} == {"invalid"}
    judged = subprocess.run(
        [sys.executable, "-m", "pytest_latency", "judge", "run.json", "--objectives", str(spec)],
        capture_output=True, text=True, cwd=pytester.path, timeout=120, check=False,
    )  # fmt: skip
    assert judged.returncode == 1, judged.stdout + judged.stderr
    assert "0 pass, 0 fail, 0 inconclusive, 2 invalid" in judged.stdout


def test_a_python_test_whose_server_is_killed_mid_run_fails_with_the_headline(
    pytester: pytest.Pytester, dying_server: ScriptedServer
) -> None:
    pytester.makepyfile(
        textwrap.dedent(
            f"""

            from pytest_latency import LatencyInfrastructureError, Phase, ServerSpec, objective

            def test_dying(latency):
                result = latency.run(
                    Phase("steady", rate=30, duration_s=5, arrival="constant"),
                    server=ServerSpec(kind="url", url="{dying_server.url}", model="m"),
                    input_tokens=(5, 5), output_tokens=4,
                )
                result.assert_slo(objective("error_rate", max="5%"))
            """
        )
    )
    result = pytester.runpytest_subprocess("-p", "no:randomly", timeout=INNER_TIMEOUT_S)
    result.assert_outcomes(failed=1)
    text = _flat(result)
    assert HEADLINE.search(text) is not None, text
    assert "LatencyInfrastructureError: infrastructure: " in text  # catchable as LatencyRunInvalid


@pytest.fixture
def hanging_server() -> Iterator[ScriptedServer]:
    """A server that answers the preflight's request and :data:`ANSWERED_BEFORE_THE_KILL`
    of the run's, then accepts every request and never answers (a hung server): each
    times out."""
    server = ScriptedServer()
    server.models = ["m"]
    server.route("m", lambda index: FOUR_TOKENS if index <= ANSWERED_BEFORE_THE_KILL else HANG)
    server.start()
    yield server
    server.stop()


def test_a_spec_file_whose_server_hangs_mid_run_errors_instead_of_passing(
    pytester: pytest.Pytester, hanging_server: ScriptedServer
) -> None:
    """Before, 90 of 150 requests timing out came out INCONCLUSIVE (bounds 0..inf,
    effective n 5) for both latency objectives and the test passed with warnings."""
    spec = SPEC.format(url=hanging_server.url).replace("  - {metric: error_rate, max: 5%}\n", "")
    pytester.makefile(".slo.yaml", hung=spec.replace("timeout: 5s", "timeout: 2s"))
    result = pytester.runpytest_subprocess(
        "-p", "no:randomly", "--latency-json", "run.json", timeout=INNER_TIMEOUT_S
    )
    result.assert_outcomes(errors=1)
    text = _flat(result)
    found = re.search(
        r"infrastructure: (\d+) of 150 requests failed with no complete response within 2s"
        r".*?, from request #(\d+) \(\S+\) to the end of the run — the server stopped"
        r" answering: hung, or so overloaded that no request finished within the timeout",
        text,
    )
    assert found is not None, text
    assert int(found.group(1)) >= 150 - ANSWERED_BEFORE_THE_KILL - 5  # a few in flight
    assert "passed" not in text.split("short test summary info")[-1]
    (run,) = json.loads((pytester.path / "run.json").read_text())["runs"]
    assert {objective["verdict"] for objective in run["objectives"]} == {"invalid"}
