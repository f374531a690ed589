"""Shared prefixes on the embedded server: TTFT falls by the factor its model predicts.

The same plan (4 prefixes of 1024 words, a short question each) runs against the
embedded server with its prefix cache on and off; the virtual-time model predicts both
from the very same prompts. A hit skips ~1024 of ~1120 prefill tokens: the model's
factor on TTFT p50 is ~3.4x at this load, and the live factor must match it.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from pytest_latency.analysis.cohorts import summarise_cohorts
from pytest_latency.driver import Target, run_plan
from pytest_latency.records import RequestRecord
from pytest_latency.sim import Arrival, SimConfig, SimServer, simulate
from pytest_latency.sim.prefix_cache import block_hashes
from pytest_latency.spec.model import Phase, Prefix, Workload
from pytest_latency.workload import Plan, build_plan

WORKLOAD = Workload(
    phases=(Phase("rag", rate=10, duration_s=3, arrival="constant"),),
    seed=21,
    input_tokens=(64, 128),
    output_tokens=16,
    timeout_s=20.0,
    warmup_requests=2,  # a fresh server's first requests pay for warming up its code paths
    prefix=Prefix(groups=4, tokens=1024, share=1.0),
)
ON, OFF = SimConfig(), SimConfig(prefix_cache_blocks=0)  # the default calibration


def _modelled_p50(config: SimConfig, plan: Plan) -> float:
    arrivals = [
        Arrival(r.intended_s, r.input_tokens, r.output_tokens, block_hashes(r.prompt.split()))
        for r in plan.requests
    ]
    return float(np.median([result.ttft_s for result in simulate(config, arrivals)]))


def _live(config: SimConfig, plan: Plan) -> list[RequestRecord]:
    with SimServer(config) as server:
        return run_plan(plan, Target(server.url, config.model)).records


@pytest.mark.slow
def test_shared_prefix_ttft_p50_drops_by_the_modelled_factor() -> None:
    plan = build_plan(WORKLOAD, nonce="5eed")
    cold, hot = _live(OFF, plan), _live(ON, plan)
    assert all(record.ok for record in hot + cold)
    assert [r.cached_tokens for r in hot].count(0) == 4  # each group's first request misses
    assert {r.cached_tokens for r in hot} == {0, 1024} and {r.cached_tokens for r in cold} == {None}
    live_on = float(np.median([r.ttft_s for r in hot]))
    live_off = float(np.median([r.ttft_s for r in cold]))
    model_on, model_off = _modelled_p50(ON, plan), _modelled_p50(OFF, plan)
    factor, modelled = live_off / live_on, model_off / model_on
    live = f"{live_off * 1e3:.1f} -> {live_on * 1e3:.1f} ms: {factor:.2f}x"
    model = f"{model_off * 1e3:.1f} -> {model_on * 1e3:.1f} ms: {modelled:.2f}x"
    print(f"TTFT p50 cache off -> on, live {live} (model {model})")
    assert modelled > 2.5
    # Live adds loopback HTTP and event-loop wake-ups (a few ms) to every TTFT, which
    # shrinks the factor a little; 20% covers that on a busy machine.
    assert abs(factor / modelled - 1.0) < 0.2
    # The cache-hit cohort carries the drop; the misses look like the cache-off run.
    rows = {row.cache_hit: row for row in summarise_cohorts(hot)}
    assert rows[True].offered == len(plan.requests) - 4
    assert rows[True].ttft_p50_s < rows[False].ttft_p50_s / 2
    assert dataclasses.replace(ON, prefix_cache_blocks=0) == OFF
