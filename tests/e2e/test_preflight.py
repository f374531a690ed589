"""Preflight before time zero, over real HTTP on loopback: a server that is not ready is an
ERROR saying what failed, never a run of failed requests judged as a latency FAIL."""

import json
import re
import socket
import textwrap
import threading
import time

import pytest

from pytest_latency.errors import ServerNotReady, ServerStartError
from pytest_latency.servers.preflight import check_ready
from tests.helpers.scripted_server import DONE, Script, ScriptedServer, Step, chat_chunk, text_chunk

ONE_TOKEN = Script(
    steps=(
        Step(0.0, chat_chunk("Hi", role="assistant")),
        Step(0.0, chat_chunk(finish="stop")),
        Step(0.0, DONE),
    )
)


def _not_found(message: str) -> Script:
    body = json.dumps({"error": {"message": message}}).encode()
    return Script(steps=(Step(0.0, body),), status=404, content_type="application/json")


def _spec(url: str, model: str | None = None) -> str:
    named = f", model: {model}" if model else ""
    # 20 requests: enough to decide an error rate under 50% (8 are needed at 99%).
    return textwrap.dedent(
        f"""\
        server: {{url: "{url}"{named}}}
        workload:
          output_tokens: 4
          input_tokens: 5
          timeout: 2s
          phases: [{{name: steady, arrival: constant, rate: 20, duration: 1s}}]
        objectives:
          - {{metric: error_rate, max: 50%}}
        """
    )


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _runs(pytester: pytest.Pytester) -> list[dict[str, object]]:
    runs: list[dict[str, object]] = json.loads((pytester.path / "out.json").read_text())["runs"]
    return runs


@pytest.mark.slow
@pytest.mark.parametrize("model", [None, "m"])
def test_a_closed_port_is_an_error_saying_connection_refused(pytester, model):
    # Without a model this used to be a traceback from the model discovery with a hint to
    # pass --latency-model, which would not have helped.
    url = f"http://127.0.0.1:{_closed_port()}"
    pytester.makefile(".slo.yaml", dead=_spec(url, model))
    result = pytester.runpytest("--latency-json", "out.json")
    result.assert_outcomes(errors=1)
    text = result.stdout.str()
    assert f"server not ready: connection refused at {url}" in text
    assert "Traceback" not in text and "FAIL" not in text and "--latency-model" not in text
    assert _runs(pytester) == []  # nothing was measured


@pytest.mark.slow
def test_the_fixture_reports_a_closed_port_as_an_error_too(pytester):
    url = f"http://127.0.0.1:{_closed_port()}"
    pytester.makepyfile(
        f"""
        from pytest_latency import Phase, ServerSpec, objective

        def test_dead(latency):
            result = latency.run(
                Phase("steady", rate=20, duration_s=1, arrival="constant"),
                server=ServerSpec(kind="url", url="{url}"),
            )
            result.assert_slo(objective("error_rate", max="50%"))
        """
    )
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    text = result.stdout.str()
    assert f"ServerNotReady: server not ready: connection refused at {url}" in text
    assert "preflight.py" not in text and "session.py" not in text  # the user's line only


@pytest.mark.slow
def test_a_model_the_server_does_not_list_is_an_error_listing_what_it_has(pytester, server):
    server.models = ["a", "b"]
    pytester.makefile(".slo.yaml", wrong=_spec(server.url, "x"))
    result = pytester.runpytest("--latency-json", "out.json")
    result.assert_outcomes(errors=1)
    assert "server not ready: model 'x' not in /v1/models (listed: a, b)" in result.stdout.str()
    assert server.exchanges == [] and _runs(pytester) == []  # no request was sent


@pytest.mark.slow
def test_without_a_model_the_first_listed_is_used(pytester, server):
    server.models = ["tiny", "other"]
    server.route("tiny", ONE_TOKEN)
    pytester.makefile(".slo.yaml", first=_spec(server.url))
    result = pytester.runpytest("--latency-json", "out.json")
    result.assert_outcomes(passed=1)
    assert {exchange.model for exchange in server.exchanges} == {"tiny"}
    # The preflight's one-token request, then the 20 of the plan.
    assert len(server.exchanges) == 21 and server.exchanges[0].body["max_tokens"] == 1
    (run,) = _runs(pytester)
    assert run["server"]["model"] == "tiny"  # type: ignore[index]


@pytest.mark.slow
def test_a_404_on_the_test_request_is_an_error_with_the_body(pytester, server):
    server.models = ["m"]
    server.route("m", _not_found("no such route"))
    pytester.makefile(".slo.yaml", gone=_spec(server.url, "m"))
    result = pytester.runpytest()
    result.assert_outcomes(errors=1)
    assert (
        f"server not ready: test request (POST {server.url}/v1/chat/completions) got HTTP 404:"
        ' {"error": {"message": "no such route"}}'
    ) in result.stdout.str()
    assert len(server.exchanges) == 1  # only the test request


@pytest.mark.slow
def test_a_run_failing_on_one_infrastructure_error_is_an_error_headed_by_it(pytester, server):
    # The preflight's request is answered; then the model is gone for every request.
    server.models = ["m"]
    server.route("m", lambda index: ONE_TOKEN if index == 0 else _not_found("model unloaded"))
    pytester.makefile(".slo.yaml", unloaded=_spec(server.url, "m"))
    result = pytester.runpytest("--latency-json", "out.json")
    result.assert_outcomes(errors=1)
    text = " ".join(result.stdout.str().split())  # the failure text wraps at the width
    headline = (
        "infrastructure: 20 of 20 requests failed with HTTP 404: model unloaded"
        " — a wrong model name or URL?"
    )
    error_section = text.index("ERROR at setup of latency spec unloaded")
    assert error_section < text.index(headline) < text.index("latency summary")
    assert "INVALID error_rate <= 50%" in text and "FAIL" not in text
    (run,) = _runs(pytester)
    assert run["outcome"] == "error"
    assert [(o["verdict"], o["reason"]) for o in run["objectives"]] == [("invalid", headline)]


@pytest.mark.slow
def test_a_server_that_dies_mid_run_is_an_error_headed_by_it(pytester):
    dying = ScriptedServer()
    dying.models = ["m"]
    dying.route("m", ONE_TOKEN)
    dying.start()

    def stop_once_the_run_is_under_way() -> None:
        deadline = time.monotonic() + 60
        # The preflight's request, then four of the run's: polls for an event.
        while len(dying.exchanges) < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        dying.stop()

    stopper = threading.Thread(target=stop_once_the_run_is_under_way, daemon=True)
    stopper.start()
    try:
        spec = _spec(dying.url, "m").replace("duration: 1s", "duration: 2s")  # 40 requests
        pytester.makefile(".slo.yaml", dying=spec)
        result = pytester.runpytest()
    finally:
        stopper.join(timeout=60)
    result.assert_outcomes(errors=1)
    text = " ".join(result.stdout.str().split())  # the failure text wraps at the width
    headline = re.search(
        r"infrastructure: (\d+) of 40 requests failed with connection refused, from request"
        r" #(\d+) \(\S+\) to the end of the run — the server went away\?",
        text,
    )
    assert headline is not None, text
    assert int(headline.group(1)) >= 20 and int(headline.group(2)) >= 4
    assert "INVALID error_rate" in text and "FAIL" not in text


def test_check_ready_returns_the_model_and_raises_a_server_start_error(server):
    server.models = ["m"]
    server.route("m", ONE_TOKEN)
    assert check_ready(server.url, None) == "m"
    assert check_ready(server.url, "m", api="chat") == "m"
    with pytest.raises(ServerNotReady, match=r"^server not ready: model 'n' not in") as raised:
        check_ready(server.url, "n")
    assert isinstance(raised.value, ServerStartError)  # caught where start errors are


def test_the_completions_api_gets_a_prompt_and_a_non_stream_answer_is_refused(server):
    server.models = ["text", "json"]
    server.route("text", Script(steps=(Step(0.0, text_chunk("Hi", finish="length")),)))
    server.route("json", Script(steps=(Step(0.0, b'{"choices": []}'),), content_type="a/json"))
    assert check_ready(server.url, "text", api="completions") == "text"
    (exchange,) = server.exchanges
    assert exchange.body["prompt"] and exchange.body["max_tokens"] == 1
    assert exchange.headers["traceparent"].endswith("-00")  # unsampled: no server span
    with pytest.raises(ServerNotReady, match="got HTTP 200 but no stream event"):
        check_ready(server.url, "json")


def test_a_server_that_lists_no_model_needs_one_named(server):
    with pytest.raises(ServerNotReady, match="lists no model; pass one with --latency-model"):
        check_ready(server.url, None)
