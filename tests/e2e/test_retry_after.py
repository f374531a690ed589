"""Must show (issue 36 item 4): a server answering 429 with ``Retry-After: 1`` to a third of
first attempts gives, with ``retry: {max: 2}``, every request ok, ``attempts`` 2 where it
was retried, and their TTFT at least 1 s; the summary shows the retries."""

from __future__ import annotations

import pytest

from tests.helpers.json_schema import assert_valid_run_file
from tests.helpers.retry_server import rejecting
from tests.helpers.scripted_server import ScriptedServer

SPEC = """\
server: {{url: "{url}", model: m}}
workload:
  seed: 4
  input_tokens: [10, 20]
  output_tokens: 4
  retry: {{max: 2}}
  phases: [{{name: steady, arrival: poisson, rate: 12, duration: 1.5s}}]
objectives:
  - {{metric: error_rate, max: 1%}}
"""


@pytest.mark.slow
def test_retry_after_one_second_to_a_third_of_first_attempts(
    pytester: pytest.Pytester, server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    server.models = ["m"]
    server.route("m", rejecting(server, 3, (("Retry-After", "1"),)))
    pytester.makefile(".slo.yaml", retried=SPEC.format(url=server.url))
    monkeypatch.setenv("PYTEST_ADDOPTS", "--latency-max-lag=1s")
    result = pytester.runpytest(
        "--latency-json=run.json", "--latency-metrics-interval=0",
        "--latency-allow-undecidable", "--latency-inconclusive=warn",
    )  # fmt: skip
    result.assert_outcomes(passed=1)
    (run,) = assert_valid_run_file(pytester.path / "run.json")["runs"]
    requests = run["requests"]
    assert len(requests) > 6 and {r["status"] for r in requests} == {"ok"}
    retried = [r for r in requests if r["attempts"] == 2]
    assert len(retried) == (len(requests) + 2) // 3  # the 1st, 4th, 7th... first attempts
    assert {r["attempts"] for r in requests} == {1, 2}
    for request in retried:
        assert request["ttft_s"] >= 1.0 and request["retry_after_s"] == 1.0
    (phase,) = run["phases"]
    assert phase["retries"] == {
        "retried": len(retried), "retries": len(retried),
        "wait_s": pytest.approx(len(retried)), "failed_after_retries": 0,
    }  # fmt: skip
    assert run["workload"]["retry"]["max"] == 2
    assert f"retried {len(retried)} rejected requests {len(retried)} times" in result.stdout.str()
