"""A steady phase over its server's capacity, through pytest on loopback: the test FAILs
on the runaway queue, never passes.

Before, the embedded server at 2.3x its capacity (30 req/s against one replica of 8
slots, about 13 req/s) gave a TTFT p95 of 23 s against a 1 s limit with bounds 0..inf
(effective n 4): INCONCLUSIVE, and the test passed with a warning.
"""

from __future__ import annotations

import json

import pytest

pytestmark = pytest.mark.slow  # 15 s of load and its queue's drain (about 35 s idle)

SPEC = """\
server: {kind: sim, options: {replicas: 1, max_batch: 8}}
workload:
  seed: 3
  input_tokens: 20
  output_tokens: 20
  timeout: 60s
  phases: [{name: steady, arrival: poisson, rate: 30, duration: 15s}]
objectives:
  - {metric: ttft, p: 95, max: 1s}
  - {metric: attainment, ttft: 1s, min: 90%}
"""


def test_a_steady_phase_over_capacity_fails_on_its_runaway_queue(pytester: pytest.Pytester):
    pytester.makefile(".slo.yaml", overload=SPEC)
    result = pytester.runpytest_subprocess("-p", "no:randomly", "--latency-json", "run.json")
    result.assert_outcomes(failed=1)
    text = " ".join(result.stdout.str().split())
    assert "FAILED overload.slo.yaml::overload - ttft p95" in text
    # The runaway rule, or the bounds themselves now that sectioning decides far over.
    assert "(the queue ran away; bounds" in text or "> 1s (bounds" in text
    if "(the queue ran away; bounds" in text:  # the rule decided: its evidence is shown
        assert "the queue ran away in phase steady: requests in flight grew" in text
    (run,) = json.loads((pytester.path / "run.json").read_text())["runs"]
    verdicts = {objective["verdict"] for objective in run["objectives"]}
    assert verdicts == {"fail"}, run["objectives"]
