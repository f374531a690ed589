"""The reference server's prefix cache: block LRU, prefill cost, usage and /metrics."""

from __future__ import annotations

import json

import httpx
import pytest

from pytest_latency.sim import Arrival, SimConfig, SimServer, simulate
from pytest_latency.sim.prefix_cache import PrefixCache, block_hashes

SHARED = [f"context{i}" for i in range(64)]  # four blocks of 16 words


def test_blocks_chain_so_only_a_whole_matching_prefix_hits() -> None:
    first = block_hashes([*SHARED, "a", "question"])
    again = block_hashes([*SHARED, "other", "words"])
    assert first == again and len(first) == 4
    changed = block_hashes(["x", *SHARED[1:], "a"])
    assert not set(changed) & set(first)  # one word differs in block 0: nothing matches
    # The last token is always computed: 17 words make one block, 16 make none.
    assert len(block_hashes(SHARED[:17])) == 1 and block_hashes(SHARED[:16]) == ()


def test_lru_evicts_the_least_recently_used_block() -> None:
    cache = PrefixCache(capacity=2, block_tokens=16)
    cache.insert((1, 2))
    assert cache.lookup(40, (1,)) == 16  # block 1 used again: block 2 is now the oldest
    cache.insert((3,))
    assert cache.lookup(40, (2,)) == 0
    assert cache.lookup(40, (1, 3)) == 32
    assert (cache.queried_tokens, cache.hit_tokens) == (120, 48)
    assert PrefixCache(capacity=0).lookup(40, (1,)) == 0


def test_prefill_costs_only_uncached_tokens_in_virtual_time() -> None:
    config = SimConfig(replicas=1, decode_base_s=0.01, decode_per_seq_s=0.0,
                       prefill_base_s=0.0, prefill_per_token_s=0.001)  # fmt: skip
    blocks = block_hashes(SHARED + ["q"] * 36)  # 100 words: (100 - 1) // 16 = 6 blocks
    cold, warm = simulate(config, [Arrival(0.0, 100, 1, blocks), Arrival(1.0, 100, 1, blocks)])
    assert (cold.cached_tokens, warm.cached_tokens) == (0, 96)
    assert cold.ttft_s == pytest.approx(0.01 + 0.1)
    assert warm.ttft_s == pytest.approx(0.01 + 0.004)
    off = simulate(SimConfig(replicas=1, prefix_cache_blocks=0), [Arrival(0, 100, 1, blocks)] * 2)
    assert [result.cached_tokens for result in off] == [0, 0]


def test_usage_and_metrics_report_cached_tokens() -> None:
    prompt = " ".join([*SHARED, "why?"])
    body = {"messages": [{"role": "user", "content": prompt}], "max_tokens": 2, "stream": True,
            "stream_options": {"include_usage": True}}  # fmt: skip
    fast = SimConfig(decode_base_s=0.002, decode_per_seq_s=0.0, prefill_base_s=0.0,
                     prefill_per_token_s=0.0)  # fmt: skip
    with SimServer(fast) as server, httpx.Client(base_url=server.url, trust_env=False) as client:
        usages = []
        for _ in range(2):  # one after the other: the second finds the first's blocks
            lines = client.post("/v1/chat/completions", json=body).text.splitlines()
            chunks = [json.loads(line[6:]) for line in lines if line.startswith("data: {")]
            usages.append(next(chunk["usage"] for chunk in chunks if chunk.get("usage")))
        metrics = client.get("/metrics").text
    assert [u["prompt_tokens_details"]["cached_tokens"] for u in usages] == [0, 64]
    assert usages[1]["prompt_tokens"] == 65
    assert "sim:prefix_cache_queries_total 130" in metrics
    assert "sim:prefix_cache_hits_total 64" in metrics
    assert f"sim:prefix_cache_hit_rate {64 / 130}" in metrics


def test_with_the_cache_off_usage_has_no_cached_tokens() -> None:
    with SimServer(SimConfig(prefix_cache_blocks=0)) as server:
        reply = httpx.post(
            server.url + "/v1/completions", json={"prompt": "a b c", "max_tokens": 1},
            trust_env=False,
        )  # fmt: skip
    assert "prompt_tokens_details" not in reply.json()["usage"]
