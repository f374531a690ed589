"""End to end on loopback: client spans and histograms reach an OTLP/HTTP collector in the
GenAI conventions' names, and the run's JSON says where it ran (issue 36, items 1 and 2)."""

from __future__ import annotations

import pytest

from tests.helpers.json_schema import assert_valid_run_file
from tests.helpers.otlp_collector import attributes, otlp_collector

SPEC = """\
server: {kind: sim, options: {decode_base_s: 0.003, decode_per_seq_s: 0.0001}}
workload:
  seed: 3
  input_tokens: [20, 40]
  output_tokens: 6
  phases: [{name: steady, arrival: poisson, rate: 20, duration: 1s}]
objectives:
  - {metric: error_rate, max: 50%}
"""


@pytest.mark.slow
def test_one_chat_span_and_one_duration_point_per_completed_request(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makefile(".slo.yaml", genai=SPEC)
    with otlp_collector() as (url, collected):
        monkeypatch.setenv("PYTEST_ADDOPTS", "--latency-max-lag=1s")
        result = pytester.runpytest(
            f"--latency-otlp-endpoint={url}/v1/traces",
            "--latency-json=run.json",
            "-p",
            "no:randomly",
        )
    result.assert_outcomes(passed=1)
    (run,) = assert_valid_run_file(pytester.path / "run.json")["runs"]
    completed = sum(1 for request in run["requests"] if request["status"] == "ok")
    assert completed == run["phases"][0]["completed"] > 5
    model = run["server"]["model"]
    chat = [span for span in collected.spans if span.name == f"chat {model}"]
    assert len(chat) == len({span.span_id for span in chat}) == completed
    assert {span.trace_id.hex() for span in chat} == {r["trace_id"] for r in run["requests"]}
    found = attributes(chat[0].attributes)
    assert found["gen_ai.operation.name"] == "chat"
    assert found["gen_ai.request.model"] == model
    assert isinstance(found["gen_ai.usage.input_tokens"], int)
    assert found["gen_ai.usage.output_tokens"] == 6
    assert collected.histogram_count("gen_ai.client.operation.duration") == completed
    assert collected.histogram_count("gen_ai.client.operation.time_to_first_chunk") == completed
    points = collected.histogram_points("gen_ai.client.operation.duration")
    assert {attributes(p.attributes)["pytest_latency.phase"] for p in points} == {"steady"}
    environment = run["environment"]
    assert environment["server"]["version"].startswith("pytest-latency-sim ")
    assert (
        environment["host"]["cpus"] >= 1 and environment["python"] and environment["plugin_version"]
    )
