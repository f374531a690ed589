"""The reasoning-model example against the embedded server's reasoning mode, from JSON."""

import shutil
from pathlib import Path

import pytest

from tests.helpers.json_schema import assert_valid_run_file

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "reasoning_model.slo.yaml"
REASONING_TOKENS = 24  # the example's server option


@pytest.mark.slow
@pytest.mark.serial
def test_reasoning_example_decides_its_answer_start_objectives(pytester):
    shutil.copy(EXAMPLE, pytester.path / EXAMPLE.name)
    result = pytester.runpytest(EXAMPLE.name, "--latency-json", "latency.json")
    result.assert_outcomes(passed=1)
    (run,) = assert_valid_run_file(pytester.path / "latency.json")["runs"]
    assert {o["metric"]: o["verdict"] for o in run["objectives"]} == {
        "ttft": "pass",
        "ttfo": "pass",
        "reasoning": "pass",
    }
    for request in run["requests"]:
        assert request["status"] == "ok"
        assert request["reasoning_tokens"] == REASONING_TOKENS  # the server's usage
        # The answer starts after the reasoning: 24 engine steps of ~30 ms.
        assert request["ttfo_s"] - request["ttft_s"] == pytest.approx(
            request["reasoning_s"], abs=1e-6
        )
        assert 0.5 < request["reasoning_s"] < 1.5
    (phase,) = run["phases"]
    assert phase["throughput"]["requests_per_s"] > 0
