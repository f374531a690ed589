"""The held-out server of the capacity goal: the embedded server as a slot server of
known capacity, run 6 times faster than real time, and its search.

16 replicas of one slot each, and a one-token answer that holds its slot for one engine
step of 0.1 s (prefill and token), so the server tops out at 160 req/s. (One token: at
these rates the client and server work per stream chunk is what a shared machine can
spare; the capacity is the slots' either way.) The search is the issue's "6-minute
budget, 60 s probes" with every time divided by 6 and every rate multiplied by 6 (10 s
probes, a 60 s budget, TTFT p90 <= 500 ms for 3 s): the same requests per probe, the
same queues, statistically the same search. ``tests/e2e/test_capacity.py`` runs it live
on loopback; ``tests/unit/analysis/test_capacity_held_out.py`` in virtual time with the
same engine (``simulate()``), where the truth is where the objective flips.
"""

from __future__ import annotations

import math

import numpy as np

from pytest_latency.records import RequestRecord, Status
from pytest_latency.sim.config import SimConfig
from pytest_latency.spec.model import Phase, Workload
from tests.helpers.virtual_capacity import virtual_records as serve_virtually

SPEEDUP = 6.0
SLOT_OPTIONS = {
    "replicas": 16, "max_batch": 1, "decode_base_s": 0.1 / SPEEDUP, "decode_per_seq_s": 0.0,
    "prefill_base_s": 0.5 / SPEEDUP, "prefill_per_token_s": 0.0, "prefix_cache_blocks": 0,
}  # fmt: skip
SLOTS = SimConfig(**SLOT_OPTIONS)  # type: ignore[arg-type]
CAPACITY_RPS = 16 / (0.6 / SPEEDUP)  # 16 slots, 0.1 s a request: 160/s
OUTPUT_TOKENS, LIMIT_S = 1, 3.0 / SPEEDUP
WARMUP_S, PROBE_S, BUDGET_S = 1.0, 60.0 / SPEEDUP, 360.0 / SPEEDUP
RATES = (48.0, 360.0)  # the search's range: its first probe at 131/s, 82% of the capacity
SEEDS = 12


def virtual_records(workload: Workload) -> list[RequestRecord]:
    """The workload's requests served by the held-out server in virtual time."""
    records = serve_virtually(workload, SLOTS)
    for record in records:
        if record.status is Status.OK:
            record.output_tokens = OUTPUT_TOKENS
    return records


def serve(phases: list[tuple[str, float, float]], seed: int) -> list[RequestRecord]:
    """Phases (name, rate, seconds) of the search's workload, served in virtual time."""
    named = tuple(Phase(name, rate, seconds) for name, rate, seconds in phases)
    workload = Workload(phases=named, seed=seed, input_tokens=(20, 20), output_tokens=OUTPUT_TOKENS)
    return virtual_records(workload)


def good_fraction(rate: float) -> float:
    """Mean share of probe requests with TTFT <= the limit in a probe as the search runs
    it (a 1 s warm-up, then 10 s, from an empty queue), over seeded arrivals, virtual time."""
    shares = []
    for seed in range(SEEDS):
        records = serve([("warmup", rate, WARMUP_S), ("probe", rate, PROBE_S)], seed)
        ttfts = np.array([
            math.inf if record.ttft_s is None else record.ttft_s
            for record in records
            if record.phase == "probe"
        ])  # fmt: skip
        shares.append(float(np.mean(ttfts <= LIMIT_S)))
    return float(np.mean(shares))


def flip_rate(low: float = 80.0, high: float = 320.0) -> float:
    """Where the probe's attainment(ttft <= 500 ms) crosses 90%, to 1% (about 162/s, just
    over the capacity: a 10 s probe 1% over it has not built a queue of 500 ms yet)."""
    while high / low > 1.01:
        middle = math.sqrt(low * high)
        low, high = (middle, high) if good_fraction(middle) >= 0.9 else (low, middle)
    return math.sqrt(low * high)
