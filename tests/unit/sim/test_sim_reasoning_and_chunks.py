"""The embedded server's reasoning phase and multi-token chunks, measured on loopback
against the truth the server's own configuration sets."""

from __future__ import annotations

import numpy as np
import pytest

from pytest_latency.analysis.samples import metric_samples
from pytest_latency.analysis.token_gaps import per_token_gaps
from pytest_latency.driver import Target, run_plan
from pytest_latency.records import RequestRecord, Status
from pytest_latency.sim import SimConfig, SimServer
from pytest_latency.spec.model import Phase, Workload
from pytest_latency.workload import build_plan

STEP_S = 0.01  # one token per engine step: the server's token gap
# The server keeps its steps on an absolute timeline; the client reads each chunk late
# by its loop's wake-up (a few ms on a busy machine): far from the 3x a chunk gap makes.
TOLERANCE_S = 0.015


def config(reasoning_tokens: int = 0, tokens_per_chunk: int = 1) -> SimConfig:
    # One replica and one request at a time: every step is exactly STEP_S.
    return SimConfig(
        replicas=1,
        decode_base_s=STEP_S,
        decode_per_seq_s=0.0,
        prefill_base_s=0.0,
        prefill_per_token_s=0.0,
        reasoning_tokens=reasoning_tokens,
        tokens_per_chunk=tokens_per_chunk,
    )


def drive(sim_config: SimConfig, output_tokens: int, requests: int = 4) -> list[RequestRecord]:
    workload = Workload(
        phases=(Phase("steady", rate=2.0, duration_s=requests / 2.0, arrival="constant"),),
        input_tokens=(10, 10),
        output_tokens=output_tokens,
    )
    with SimServer(sim_config) as sim:
        target = Target(sim.url, "sim-tiny", continuous_usage_stats=True)
        records = run_plan(build_plan(workload), target).records
    assert [record.status for record in records] == [Status.OK] * requests
    return records


def test_a_chunk_gap_is_spread_over_the_chunks_tokens() -> None:
    gaps = per_token_gaps([0.03, 0.02, 0.01], [3, 3, 0, 2])
    # 0.03 over 3 tokens; the 0-token chunk passes 0.02 on to the 2-token chunk with 0.01.
    assert gaps.tolist() == pytest.approx([0.01] * 3 + [0.015] * 2)


def test_the_sim_refuses_a_chunk_of_no_tokens() -> None:
    with pytest.raises(ValueError, match="tokens_per_chunk"):
        SimConfig(tokens_per_chunk=0)


@pytest.mark.slow
def test_a_reasoning_stream_has_its_first_token_first_answer_and_reasoning_tokens() -> None:
    reasoning = 6
    records = drive(config(reasoning_tokens=reasoning), output_tokens=12)
    for record in records:
        assert record.reasoning_tokens == reasoning  # usage.completion_tokens_details
        assert record.ttft_s is not None and record.ttfo_s is not None
        # The first answer token is the (reasoning + 1)-th token: reasoning steps later.
        assert record.ttfo_s - record.ttft_s == pytest.approx(reasoning * STEP_S, abs=TOLERANCE_S)
        assert record.reasoning_s == pytest.approx(reasoning * STEP_S, abs=TOLERANCE_S)
        assert record.output_tokens == 12
    ttfo = metric_samples(records, "ttfo")
    assert np.all(ttfo > metric_samples(records, "ttft"))


@pytest.mark.slow
def test_chunks_of_three_tokens_give_the_servers_token_gap_per_token() -> None:
    records = drive(config(tokens_per_chunk=3), output_tokens=12)
    for record in records:
        assert record.chunk_tokens == [3, 3, 3, 3]
        chunk_gap = float(np.median(record.itl_s))
        assert chunk_gap == pytest.approx(3 * STEP_S, abs=TOLERANCE_S / 2)  # the chunk gap
    itl = metric_samples(records, "itl")  # each request's median gap per token
    assert itl == pytest.approx([STEP_S] * len(records), abs=TOLERANCE_S / 5)
