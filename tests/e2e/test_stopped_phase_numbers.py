"""A phase a stop rule stopped, through pytest on loopback: its numbers are those of the
requests it sent. Read back from the run's own JSON (the truth: every request, sent or
not), the phase's percentiles are the sent requests' (a failed one unbounded), its error
rate is failed / sent, and every planned request is still counted once
(docs/metrics.md, "Requests never sent, and requests cut off")."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest

from pytest_latency.analysis.percentiles import percentile
from tests.helpers.json_schema import assert_valid_run_file

# 2 slots of ~0.6 s (queue of 20) against 40/s: `flood` saturates, `errors` is turned
# away with 429s; both stop early (tests/unit/driver/test_stop_rules.py).
SPEC = """\
server: {kind: sim, options: {replicas: 1, max_batch: 2, max_queue: 20}}
workload:
  seed: 2
  input_tokens: 20
  output_tokens: 20
  timeout: 20s
  phases:
    - {name: flood, rate: 40, duration: 4s, stop: {saturation: 50%, after: 30}}
    - {name: quiet, rate: 1, duration: 6s}
    - {name: errors, rate: 40, duration: 4s, stop: {error_rate: 30%, after: 20}}
objectives:
  - {metric: ttft, p: 50, max: 60s, phase: flood}
  - {metric: error_rate, max: 100%, phase: errors}
"""


def _ttft(request: dict[str, Any]) -> float:
    if request["status"] != "ok":
        return math.inf
    return float(request["first_token_s"] - request["intended_s"])


@pytest.mark.slow
def test_a_stopped_phase_is_judged_on_the_requests_it_sent(pytester: pytest.Pytester) -> None:
    (pytester.path / "stop.slo.yaml").write_text(SPEC)
    # The verdicts are not the point here (a burst decides over episodes): their numbers are.
    result = pytester.runpytest(
        "--latency-json", "latency.json", "--latency-allow-undecidable", "-p", "no:randomly"
    )
    (run,) = assert_valid_run_file(pytester.path / "latency.json")["runs"]
    phases = {phase["name"]: phase for phase in run["phases"]}
    for name in ("flood", "errors"):
        own = [r for r in run["requests"] if r["phase"] == name]
        sent = [r for r in own if r["sent_s"] is not None]
        phase = phases[name]
        assert phase["unsent"] == len(own) - len(sent) > len(own) // 2, name  # stopped early
        assert phase["offered"] == len(own)  # every planned request, once
        assert phase["completed"] + phase["failed"] + phase["unsent"] == phase["offered"]
        assert phase["failed"] == sum(r["status"] != "ok" for r in sent)
        truth = percentile(np.array([_ttft(r) for r in sent]), 50)
        assert math.isfinite(truth), name
        assert phase["percentiles_s"]["ttft"]["p50"] == pytest.approx(truth), name

    flood, errors = run["objectives"]
    flood_sent = [r for r in run["requests"] if r["phase"] == "flood" and r["sent_s"]]
    assert flood["n"] == len(flood_sent)
    sent = [r for r in run["requests"] if r["phase"] == "errors" and r["sent_s"] is not None]
    failed = sum(r["status"] != "ok" for r in sent)
    assert failed > 0 and errors["n"] == len(sent)
    assert errors["estimate_s"] == pytest.approx(failed / len(sent))  # over the sent only
    # A saturation stop is overload, never a way out: the flood's TTFT FAILs on it, with
    # the stop as the reason, though its 60 s limit is far over what was sent (issue 33).
    assert flood["verdict"] == "fail", flood
    assert flood["reason"].startswith("the queue ran away in phase flood: its saturation stop")
    assert errors["verdict"] != "fail"  # a stop for errors is no overload evidence
    result.assert_outcomes(failed=1)
    assert "never sent (not failures)" in result.stdout.str()
