"""Inter-token gaps per token where the server said how many tokens each chunk held.

A record's ``itl_s`` are the gaps between successive content chunks. When a chunk holds
several tokens (speculative decoding, stream intervals), counting its gap as one
token's overstates the gap per token by that many times. Where ``chunk_tokens`` is
known (the server's usage on every chunk), the gap before a chunk of k tokens becomes k
gaps of (gap / k): the per-token pace the reader saw, the same total time. A chunk the
usage gave no token (0) passes its gap on to the next chunk that has tokens. Without
``chunk_tokens`` the chunk gaps are used as they are (one token per chunk assumed, and
the record says so: ``chunk_tokens`` is null).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pytest_latency.records import RequestRecord


def per_token_gaps(
    chunk_gaps: Sequence[float] | np.ndarray, chunk_tokens: Sequence[int]
) -> np.ndarray:
    """Gaps per token: the gap before chunk i+1 spread over its ``chunk_tokens[i + 1]``."""
    gaps: list[float] = []
    carried = 0.0
    for gap, tokens in zip(chunk_gaps, chunk_tokens[1:], strict=False):
        carried += float(gap)
        if tokens > 0:
            gaps.extend([carried / tokens] * tokens)
            carried = 0.0
    return np.asarray(gaps, dtype=np.float64)


def token_gaps(record: RequestRecord) -> Sequence[float] | np.ndarray:
    """The record's gaps per token where known, else its chunk gaps."""
    tokens = record.chunk_tokens
    if tokens is None or len(tokens) != len(record.itl_s) + 1:
        return record.itl_s
    return per_token_gaps(record.itl_s, tokens)
