"""The multi-turn and shared-prefix examples against the embedded server, read from JSON."""

import itertools
import shutil
from collections import defaultdict
from pathlib import Path

import pytest

from tests.helpers.json_schema import assert_valid_run_file

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _run(pytester, name):
    shutil.copy(EXAMPLES / name, pytester.path / name)
    result = pytester.runpytest(name, "--latency-json", "latency.json")
    result.assert_outcomes(passed=1)
    (run,) = assert_valid_run_file(pytester.path / "latency.json")["runs"]
    assert {objective["verdict"] for objective in run["objectives"]} == {"pass"}
    return run


@pytest.mark.slow
@pytest.mark.serial
def test_chat_example_turns_grow_and_carry_the_conversation(pytester):
    run = _run(pytester, "chat_sessions.slo.yaml")
    assert run["workload"]["sessions"] == {"turns": [2, 4], "think_time_s": 0.3}
    sessions = defaultdict(list)
    for request in run["requests"]:
        assert request["status"] == "ok"
        # The server counted the questions and the answers the client received.
        assert request["prompt_tokens"] == request["input_tokens"]
        sessions[request["session"]].append(request)
    lengths = defaultdict(list)
    for turns in sessions.values():
        turns.sort(key=lambda request: request["turn"])
        assert [request["turn"] for request in turns] == list(range(len(turns)))
        assert 2 <= len(turns) <= 4
        for earlier, later in itertools.pairwise(turns):
            assert later["input_tokens"] > earlier["input_tokens"] + 16  # answer + question
            assert later["intended_s"] == pytest.approx(earlier["end_s"] + 0.3, abs=1e-6)
            assert later["cached_tokens"] > 0  # the conversation so far was cached
        for request in turns:
            lengths[request["turn"]].append(request["input_tokens"])
    means = [sum(values) / len(values) for _, values in sorted(lengths.items())]
    assert means == sorted(means) and len(means) == 4
    assert {cohort["turn"] for cohort in run["cohorts"]} == {0, 1, 2, 3}


@pytest.mark.slow
@pytest.mark.serial
def test_rag_example_cache_hits_are_a_cohort_of_their_own(pytester):
    run = _run(pytester, "test_rag_prefix.py")
    assert run["workload"]["prefix"] == {"groups": 4, "tokens": 1024, "share": 1.0}
    by_hit = defaultdict(list)
    for cohort in run["cohorts"]:
        by_hit[cohort["cache_hit"]].append(cohort)
    hits, misses = by_hit[True], by_hit[False]
    assert sum(cohort["offered"] for cohort in misses) == 4  # each document's first use
    assert max(c["ttft_p50_s"] for c in hits) < min(c["ttft_p50_s"] for c in misses) / 2
