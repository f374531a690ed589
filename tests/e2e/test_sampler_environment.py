"""A test host's OpenTelemetry sampler cannot empty the join (issue 27).

The embedded server, like vLLM and SGLang, exports a span only for a request whose
``traceparent`` is sampled; the client samples every request whatever ``OTEL_*`` says.
"""

import json

import pytest

SPEC = """\
server: {kind: sim, options: {decode_base_s: 0.003, decode_per_seq_s: 0.0001}}
workload:
  seed: 5
  input_tokens: 20
  output_tokens: 4
  timeout: 10s
  phases:
    - {name: steady, arrival: constant, rate: 10, duration: 1.5s}
objectives:
  - {metric: error_rate, max: 100%}
"""


@pytest.mark.slow
def test_every_request_joins_its_server_span_whatever_the_hosts_sampler(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "traceidratio")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER_ARG", "0")
    pytester.makefile(".slo.yaml", sampled=SPEC)
    result = pytester.runpytest("--latency-json", "out.json", "-p", "no:randomly")
    result.assert_outcomes(passed=1)
    (run,) = json.loads((pytester.path / "out.json").read_text())["runs"]
    join = run["server_timings"]
    assert (join["requests"], join["joined"], join["missing"]) == (15, 15, 0)
    assert all(r["server_source"] == "otlp:vllm" for r in run["requests"])
    assert all(r["queue_wait_s"] is not None for r in run["requests"])
    assert "WARNING: " not in result.stdout.str()


@pytest.mark.slow
def test_a_server_whose_spans_never_come_is_named_in_the_summary(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The embedded server runs in this process: with the SDK disabled it exports no
    # span (as vLLM would), while the client still sends sampled traceparents.
    monkeypatch.setenv("OTEL_SDK_DISABLED", "true")
    pytester.makefile(".slo.yaml", sampled=SPEC)
    result = pytester.runpytest(
        "--latency-json", "out.json", "-p", "no:randomly", "--latency-otlp-grace", "0.5s"
    )
    result.assert_outcomes(passed=1)
    (run,) = json.loads((pytester.path / "out.json").read_text())["runs"]
    assert all(len(r["trace_id"]) == 32 and int(r["trace_id"], 16) for r in run["requests"])
    # Its Server-Timing header still gives queue waits; the summary says spans are absent.
    assert {r["server_source"] for r in run["requests"]} == {"server-timing"}
    result.stdout.fnmatch_lines(
        ["*WARNING: no server spans arrived for any of the 15 completed requests*"]
    )
    assert "queue waits come from server-timing instead" in result.stdout.str()
