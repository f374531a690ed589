"""Preflight before time zero, over real HTTP on loopback: a server that is not ready is an
ERROR saying what failed, never a run of failed requests judged as a latency FAIL."""

import json
import re
import socket
import textwrap
import threading
import time

import pytest

from pytest_latency.analysis.infrastructure import infrastructure_headline
from pytest_latency.errors import ServerNotReady, ServerStartError
from pytest_latency.records import RequestRecord, Status
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
def test_a_run_failing_on_one_infrastructure_error_says_so_before_the_objectives(pytester, server):
    # The preflight's request is answered; then the model is gone for every request.
    server.models = ["m"]
    server.route("m", lambda index: ONE_TOKEN if index == 0 else _not_found("model unloaded"))
    pytester.makefile(".slo.yaml", unloaded=_spec(server.url, "m"))
    result = pytester.runpytest()
    result.assert_outcomes(failed=1)
    text = " ".join(result.stdout.str().split())  # the failure text wraps at the width
    headline = (
        "infrastructure: 20 of 20 requests failed with HTTP 404: model unloaded"
        " — a wrong model name or URL?"
    )
    assert headline in text
    assert text.index(headline) < text.index("FAIL error_rate")


@pytest.mark.slow
def test_a_server_that_dies_mid_run_heads_the_failure_with_it(pytester):
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
    result.assert_outcomes(failed=1)
    text = " ".join(result.stdout.str().split())  # the failure text wraps at the width
    headline = re.search(r"infrastructure: (\d+) of 40 requests failed with (.*?\?)", text)
    assert headline is not None, text
    assert int(headline.group(1)) >= 20
    assert headline.group(2) == "connection refused — the server went away?"
    assert text.index("infrastructure:") < text.index("FAIL error_rate")


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


def _failed(count: int, status: Status, error: str) -> list[RequestRecord]:
    records = []
    for index in range(count):
        record = RequestRecord(id=index, phase="steady", intended_s=index / 10, input_tokens=5)
        record.status, record.error = status, error
        records.append(record)
    return records


def test_the_headline_names_the_dominant_error_and_only_an_infrastructure_one():
    refused = _failed(40, Status.CONNECTION_ERROR, "ConnectError: [Errno 111] Connection refused")
    ok = _failed(2, Status.OK, "")
    assert infrastructure_headline(refused + ok) == (
        "infrastructure: 40 of 42 requests failed with connection refused — the server went away?"
    )
    # The hot path's wording of the same refusal.
    hot = _failed(3, Status.CONNECTION_ERROR, "ConnectError: [Errno 111] Connect call failed")
    assert infrastructure_headline(hot) == (
        "infrastructure: 3 of 3 requests failed with connection refused — the server went away?"
    )
    # Under half of the run: the objectives speak for themselves.
    assert infrastructure_headline(refused[:20] + _failed(22, Status.OK, "")) is None
    # Rejections and timeouts are the server's answer under load: latency, not setup.
    assert infrastructure_headline(_failed(40, Status.REJECTED, "HTTP 429")) is None
    assert infrastructure_headline(_failed(40, Status.TIMEOUT, "timeout")) is None
    # Two different errors, neither half the run (together they are).
    mixed = (
        _failed(12, Status.HTTP_ERROR, "HTTP 401: bad token")
        + _failed(12, Status.HTTP_ERROR, "HTTP 500: boom")
        + _failed(6, Status.OK, "")
    )
    assert infrastructure_headline(mixed) is None
    assert infrastructure_headline(_failed(30, Status.HTTP_ERROR, "HTTP 401: bad token")) == (
        "infrastructure: 30 of 30 requests failed with HTTP 401: bad token"
        " — missing or wrong credentials?"
    )
