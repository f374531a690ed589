"""Secrets (API keys, tokens) never show: tracebacks with ``pytest -l``, logs, JSON, output.

The end-to-end case runs pytest in a subprocess against a URL server that refuses the
key with 401 and quotes it back in its error body, as OpenAI-style servers do. Container
starts that fail with a token are in tests/containers/test_secret_redaction.py.
"""

from __future__ import annotations

import http.server
import json
import pickle
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _pytest._io.saferepr import saferepr

from pytest_latency.driver import Target
from pytest_latency.secret import Secret, from_environment, redact
from pytest_latency.servers import ServerStartError
from pytest_latency.servers import container as container_module
from pytest_latency.servers._http import discover_model
from pytest_latency.servers.container import ContainerSpec, Listen
from tests.helpers.scripted_server import DONE, Script, ScriptedServer, Step, chat_chunk

FAKE_TOKEN = "hf_FAKE_TOKEN_1234567890"
KEY_VARIABLE = "LATENCY_TEST_API_KEY"


def test_a_secret_shows_as_stars_everywhere_but_reveal() -> None:
    secret = Secret(FAKE_TOKEN, "HF_TOKEN")
    shown = [repr(secret), str(secret), f"{secret}", f"{secret!r}", saferepr(secret)]
    shown += [repr({"HF_TOKEN": secret}), repr(Target("http://127.0.0.1:1", "m", api_key=secret))]
    assert all(FAKE_TOKEN not in text for text in shown), shown
    assert repr(secret) == "Secret('***')" and secret.name == "HF_TOKEN"
    assert secret.reveal() == FAKE_TOKEN
    assert pickle.loads(pickle.dumps(secret)).reveal() == FAKE_TOKEN  # to worker processes


def test_redact_hides_any_stretch_of_eight_or_more_characters() -> None:
    secret = Secret(FAKE_TOKEN)
    quoted = f"key {FAKE_TOKEN[2:10]} and {FAKE_TOKEN[5:20]}; short {FAKE_TOKEN[:7]} stays"
    assert redact(quoted, [secret]) == f"key *** and ***; short {FAKE_TOKEN[:7]} stays"


def test_the_readiness_key_travels_in_an_auth_whose_repr_hides_it() -> None:
    from pytest_latency.servers._http import BearerAuth, bounded_client

    auth = BearerAuth(Secret(FAKE_TOKEN))
    assert FAKE_TOKEN not in repr(auth) and FAKE_TOKEN not in saferepr(auth)
    with bounded_client(1.0, Secret(FAKE_TOKEN)) as client:
        assert "authorization" not in client.headers  # added as each request leaves
        assert FAKE_TOKEN not in repr(vars(client))


def test_redact_hides_whole_values_and_a_cut_off_head() -> None:
    secret = Secret(FAKE_TOKEN)
    assert redact(f"bad key {FAKE_TOKEN}, try again", [secret]) == "bad key ***, try again"
    assert redact(f"bad key {FAKE_TOKEN[:10]}…", [secret]) == "bad key ***…"  # truncated
    assert redact("nothing here", [secret]) == "nothing here"


def test_from_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(KEY_VARIABLE, FAKE_TOKEN)
    secret = from_environment(KEY_VARIABLE)
    assert secret is not None and secret.reveal() == FAKE_TOKEN
    monkeypatch.setenv(KEY_VARIABLE, "")
    assert from_environment(KEY_VARIABLE) is None


class _RefusingContainer:
    """DockerContainer whose start fails the way the SDK does, quoting its environment."""

    def __init__(self) -> None:
        self.env: dict[str, str] = {}
        self.env_at_start: dict[str, str] = {}

    def start(self) -> None:
        self.env_at_start = dict(self.env)
        environment = dict(self.env)  # in the SDK's locals, where `pytest -l` looks
        raise RuntimeError(f"invalid environment {environment}")


def test_a_failed_start_is_redacted_and_carries_no_sdk_frames(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("HF_TOKEN", FAKE_TOKEN)
    spec = ContainerSpec(
        kind="vllm", image="x/y:1", command=(), listen=Listen("127.0.0.1", 9),
        served_model="m", secret_environment=("HF_TOKEN",),
    )  # fmt: skip
    refusing = _RefusingContainer()
    secrets = container_module.secret_environment(spec)
    with pytest.raises(ServerStartError) as failure:
        container_module._start(refusing, spec, secrets)
    assert refusing.env_at_start == {"HF_TOKEN": FAKE_TOKEN}  # revealed for the call
    assert refusing.env == {}  # and only for it
    message = str(failure.value)
    assert "invalid environment {'HF_TOKEN': '***'}" in message and FAKE_TOKEN not in message
    # No cause or context: the SDK's frames (and their locals) are not in the report.
    assert failure.value.__cause__ is None and failure.value.__context__ is None


class _Refuses401(http.server.BaseHTTPRequestHandler):
    def do_GET(self) -> None:
        body = json.dumps({"error": {"message": f"bad key {self.headers['Authorization']}"}})
        self.send_response(401)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body.encode())

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture
def refusing_server() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Refuses401)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        thread.join(timeout=5)


def test_model_discovery_refused_with_401_hides_the_key(refusing_server: str) -> None:
    with pytest.raises(ServerStartError) as failure:
        discover_model(refusing_server, api_key=Secret(FAKE_TOKEN))
    assert "401" in str(failure.value) and FAKE_TOKEN not in str(failure.value)
    assert failure.value.__cause__ is None and failure.value.__context__ is None


ONE_TOKEN = Script(
    steps=(Step(0.0, chat_chunk("Hi", role="assistant")), Step(0.0, chat_chunk(finish="stop")),
           Step(0.0, DONE)),
)  # fmt: skip

SPEC = """\
server: {{url: "{url}", model: guarded, api: chat}}
workload:
  seed: 1
  input_tokens: 5
  output_tokens: 4
  timeout: 5s
  phases: [{{name: steady, arrival: constant, rate: 10, duration: 1s}}]
objectives:
  - {{metric: ttft, p: 50, max: 1s}}
"""


@pytest.mark.slow
def test_a_url_server_refusing_the_key_never_sees_it_printed(
    pytester: pytest.Pytester, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    refusal = json.dumps({"error": {"message": f"Incorrect API key provided: {FAKE_TOKEN}"}})
    refused = Script(status=401, content_type="application/json",
                     steps=(Step(0.0, refusal.encode()),))  # fmt: skip
    # The preflight's test request (the first) is answered; the run's are refused, so
    # the refusals, which quote the key, land in records.
    server.route("guarded", lambda index: ONE_TOKEN if index == 0 else refused)
    server.models = ["guarded"]
    monkeypatch.setenv(KEY_VARIABLE, FAKE_TOKEN)
    spec = pytester.path / "guarded.slo.yaml"
    spec.write_text(textwrap.dedent(SPEC.format(url=server.url)))
    result = pytester.runpytest_subprocess(
        "-l", "--tb=long", "-rA", "--log-level=DEBUG", "-p", "no:randomly",
        "--latency-api-key-env", KEY_VARIABLE, "--latency-json", "run.json",
        "--latency-html", "run.html", "--latency-markdown", "run.md", "--junitxml", "junit.xml",
        spec.name,
    )  # fmt: skip
    output = "\n".join(result.outlines + result.errlines)
    result.assert_outcomes(errors=1)  # 401 on every request: an infrastructure error
    assert "— missing or wrong credentials?" in " ".join(output.split())  # wrapped
    # Every report carries the refusals' text, and none of them the key.
    for name in ("run.html", "run.md", "junit.xml"):
        text = (pytester.path / name).read_text()
        assert "HTTP 401" in text and FAKE_TOKEN not in text, name
    # The key was sent, and refused, on every request.
    assert server.exchanges and all(
        exchange.headers["authorization"] == f"Bearer {FAKE_TOKEN}" for exchange in server.exchanges
    )
    assert FAKE_TOKEN not in output
    report = Path(pytester.path / "run.json").read_text()
    assert FAKE_TOKEN not in report
    (run,) = json.loads(report)["runs"]
    assert len(run["requests"]) == 10
    assert run["server"]["api_key_env"] == KEY_VARIABLE  # which variable, not its value
    errors = {request["error"] for request in run["requests"]}
    assert errors == {"HTTP 401: Incorrect API key provided: ***"}


@pytest.mark.slow
def test_an_unset_key_variable_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("--latency-api-key-env", "NO_SUCH_VARIABLE_SET")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--latency-api-key-env NO_SUCH_VARIABLE_SET*not set*"])


@pytest.mark.slow
def test_a_key_refused_at_the_preflight_is_an_error_that_hides_it(
    pytester: pytest.Pytester, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The server quotes the key, and a stretch from its middle (as some gateways do).
    message = f"Incorrect API key provided: {FAKE_TOKEN} (near '{FAKE_TOKEN[3:14]}')"
    refusal = json.dumps({"error": {"message": message}})
    server.route("guarded", Script(status=401, content_type="application/json",
                                   steps=(Step(0.0, refusal.encode()),)))  # fmt: skip
    server.models = ["guarded"]
    monkeypatch.setenv(KEY_VARIABLE, FAKE_TOKEN)
    spec = pytester.path / "guarded.slo.yaml"
    spec.write_text(textwrap.dedent(SPEC.format(url=server.url)))
    result = pytester.runpytest_subprocess(
        "-l", "--fulltrace", "--tb=long", "-rA", "--log-level=DEBUG", "-p", "no:randomly",
        "--latency-api-key-env", KEY_VARIABLE, "--junitxml", "junit.xml", spec.name,
    )  # fmt: skip
    result.assert_outcomes(errors=1)
    output = "\n".join(result.outlines + result.errlines)
    assert "server not ready" in output and "HTTP 401" in output and "***" in output
    junit = (pytester.path / "junit.xml").read_text()
    assert "server not ready" in junit
    # No stretch of 8 characters of the key, anywhere: not in -l's locals, not in JUnit.
    for start in range(len(FAKE_TOKEN) - 7):
        stretch = FAKE_TOKEN[start : start + 8]
        assert stretch not in output and stretch not in junit, stretch
    assert server.exchanges[0].headers["authorization"] == f"Bearer {FAKE_TOKEN}"
