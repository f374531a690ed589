"""The OTLP receiver listens from the session's start when ``--latency-otlp-receiver`` is
given, so a server the user started and pointed there loses no span during the run."""

from __future__ import annotations

import json
import socket
from collections.abc import Iterator

import pytest

from pytest_latency.plugin.session import LatencySession
from tests.helpers.latency_options import options as _options
from tests.helpers.otlp_helpers import VLLM_ATTRS, make_request, make_span, new_trace_id, post
from tests.helpers.span_exporting_server import MODEL, SpanExportingServer

GRACE_S = 30  # far beyond the run: a join that returns before it did not wait it out
SPEC = """\
workload:
  seed: 5
  input_tokens: 5
  output_tokens: 3
  timeout: 10s
  phases: [{name: steady, arrival: constant, rate: 10, duration: 1s}]  # 10: a p50 needs 9 (99.5%)
objectives:
  - {metric: queue_wait, p: 50, max: 1s}
"""


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.fixture
def receiver_port() -> int:
    return free_port()


@pytest.fixture
def span_server(receiver_port: int) -> Iterator[SpanExportingServer]:
    server = SpanExportingServer(f"http://127.0.0.1:{receiver_port}/v1/traces")
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.mark.slow
def test_url_server_spans_sent_during_the_run_all_join(
    pytester: pytest.Pytester, span_server: SpanExportingServer, receiver_port: int
) -> None:
    pytester.makefile(".slo.yaml", exporting=SPEC)
    result = pytester.runpytest(
        "--latency-server", span_server.url,
        "--latency-model", MODEL,
        "--latency-otlp-receiver", f"127.0.0.1:{receiver_port}",
        "--latency-otlp-grace", f"{GRACE_S}s",
        "--latency-metrics-interval", "0",
        "--latency-json", "run.json",
        # About the spans, not the verdict: ten correlated requests leave the p50 undecided.
        "--latency-inconclusive", "warn",
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    (run,) = json.loads((pytester.path / "run.json").read_text())["runs"]
    requests = run["requests"]
    assert len(requests) == 10 and all(r["status"] == "ok" for r in requests)
    # Every span the server sent before answering was taken: nothing was refused.
    assert span_server.exports == dict.fromkeys(span_server.exports, "HTTP 200")
    assert {r["trace_id"] for r in requests} <= span_server.exports.keys()
    # Each request got the queue wait its own trace carried.
    for r in requests:
        assert r["queue_wait_s"] == pytest.approx(span_server.queue_wait_s[r["trace_id"]])
        assert r["server_source"] == "otlp:vllm"
    joined = run["server_timings"]
    assert (joined["requests"], joined["joined"], joined["missing"]) == (10, 10, 0)
    assert joined["receiver"] == f"http://127.0.0.1:{receiver_port}/v1/traces"
    assert joined["waited_s"] < GRACE_S  # returned when the spans were in, not at the grace


@pytest.mark.slow
def test_a_receiver_port_in_use_is_a_usage_error_at_configure(pytester: pytest.Pytester) -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        pytester.makepyfile("def test_never_reached():\n    raise AssertionError\n")
        result = pytester.runpytest("--latency-otlp-receiver", f"127.0.0.1:{port}")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    errors = result.stderr.str()
    assert f"--latency-otlp-receiver: cannot listen on 127.0.0.1:{port}" in errors
    assert "Traceback" not in errors and "test_never_reached" not in result.stdout.str()


@pytest.mark.slow
def test_the_session_listens_as_soon_as_it_exists(receiver_port: int) -> None:
    # No server started and no run: a span posted now is accepted and kept for the join.
    session = LatencySession(_options(otlp_receiver=f"127.0.0.1:{receiver_port}"))
    try:
        trace_id = new_trace_id()
        body = make_request([make_span(trace_id, "llm_request", VLLM_ATTRS)]).SerializeToString()
        status, _, _ = post(f"http://127.0.0.1:{receiver_port}/v1/traces", body)
        assert status == 200
        timings = session.telemetry.receiver.timings([trace_id], grace_s=GRACE_S)
        assert timings[trace_id].queue_wait_s == VLLM_ATTRS["gen_ai.latency.time_in_queue"]
    finally:
        session.close()
