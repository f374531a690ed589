"""Retrieval-augmented answers share long prefixes: the server's prefix cache decides TTFT.

Every question comes with one of four course documents of 1024 tokens, retrieved
ahead of it, so after the first of each, every prompt starts with a document the
server has already seen. A cache hit skips most of the prefill: its first token comes
several times sooner than a miss's (what the server reported in ``cached_tokens``
tells them apart). The TTFT objective holds only thanks to the cache: with the
embedded server's cache off (``SimConfig(prefix_cache_blocks=0)``) its p50 is ~150 ms.
"""

import statistics

from pytest_latency import Phase, Prefix, objective

RAG = Phase("rag", rate=25, duration_s=10, arrival="constant")
OPTIONS = {
    "input_tokens": (32, 96),  # the question, after the retrieved document
    # Every prompt starts with one of 4 documents; each prompt's own part is unique.
    "output_tokens": 16,
    "prefix": Prefix(groups=4, tokens=1024, share=1.0),
    "seed": 3,
    "warmup_requests": 2,
}
OBJECTIVES = (objective("ttft", p=50, max="100ms"),)


def test_rag_prefix_cache_hits_answer_sooner(latency):
    result = latency.run(RAG, **OPTIONS)
    result.assert_slo(*OBJECTIVES)
    hits = [r.ttft_s for r in result.records if r.ok and r.cached_tokens]
    misses = [
        r.ttft_s
        for r in result.records
        if r.ok and r.cached_tokens == 0 and r.input_tokens > 1024  # a document, not yet cached
    ]
    assert len(hits) > 60 and misses, "the plan retrieves every document at least once"
    speedup = statistics.median(misses) / statistics.median(hits)
    # The embedded server's model: ~150 ms for 1100 uncached tokens, ~45 ms for ~70.
    assert speedup > 2.0, f"cache hits only {speedup:.1f}x faster than misses"
