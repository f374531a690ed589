"""Must show (issue 36 item 3): on the embedded server with ``scheduling: priority``, a
spike over capacity leaves the premium class's TTFT p95 under half of batch's, and a
per-class objective decides."""

from __future__ import annotations

import pytest

from tests.helpers.json_schema import assert_valid_run_file

# One replica of 12 slots at ~40 ms a step: an 8-token answer holds a slot ~0.36 s, so
# capacity is ~33 req/s. The spike offers 50 req/s for 6 s: premium (30%, 15 req/s) fills
# under half of the slots; batch (70%, 35 req/s) gets what is left and queues for
# seconds. Long steps and short answers keep the server's own CPU low.
SPEC = """\
server:
  kind: sim
  options: {scheduling: priority, replicas: 1, max_batch: 12, decode_base_s: 0.04,
            decode_per_seq_s: 0.0002, prefill_per_token_s: 0.00001}
workload:
  seed: 11
  input_tokens: [20, 40]
  output_tokens: 8
  timeout: 60s
  classes:
    - {name: premium, share: 30, priority: 0, headers: {x-priority: high}}
    - {name: batch, share: 70, priority: 10}
  phases: [{name: spike, arrival: poisson, rate: 50, duration: 6s}]
objectives:
  - {metric: ttft, p: 50, max: 1s, class: premium}
  - {metric: ttft, p: 50, max: 1s, class: batch}
"""


@pytest.mark.slow
def test_premium_ttft_is_held_while_batch_absorbs_the_spike(
    pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makefile(".slo.yaml", classes=SPEC)
    # A starved machine stalls the generator for up to a second or two: that is not the
    # subject here (it would make the run invalid), the classes are.
    monkeypatch.setenv("PYTEST_ADDOPTS", "--latency-max-lag=3s")
    result = pytester.runpytest("--latency-json=run.json", "--latency-metrics-interval=0")
    result.assert_outcomes(failed=1)  # batch's objective fails: it absorbed the spike
    (run,) = assert_valid_run_file(pytester.path / "run.json")["runs"]
    classes = {row["name"]: row for row in run["classes"]}
    premium = classes["premium"]["percentiles_s"]["ttft"]["p95"]
    batch = classes["batch"]["percentiles_s"]["ttft"]["p95"]
    assert premium is not None and batch is not None and premium < batch / 2, (premium, batch)
    assert {r["class"] for r in run["requests"]} == {"premium", "batch"}
    verdicts = {(o["metric"], o["class"]): o["verdict"] for o in run["objectives"]}
    assert verdicts[("ttft", "batch")] == "fail"  # the runaway queue: decided, whatever the load
    # Premium's TTFT passes on a quiet machine (estimate ~85 ms against 1 s). On a starved
    # one, stalls of half a second hit client and server at once; they correlate premium's
    # TTFTs, which the bounds pay for honestly, and the verdict may stay undecided, never
    # fail.
    assert verdicts[("ttft", "premium")] in ("pass", "inconclusive")
    assert "class premium (30%, priority 0)" in result.stdout.str()
