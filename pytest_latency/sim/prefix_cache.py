"""A block-level LRU prefix cache, as vLLM's automatic prefix caching works.

A prompt is cut into blocks of ``block_tokens`` tokens (words, in the reference
server). Each full block is identified by a hash chained over every block before it,
so a block matches only when the whole prompt up to its end matches. A request's
cached tokens are its leading blocks already in the cache; prefill then costs only
the rest. As in vLLM, the last prompt token is always computed (it yields the first
output token), so at most ``(prompt_tokens - 1) // block_tokens`` blocks can hit.

The cache holds ``capacity`` blocks and evicts the least recently used. Counters are
in tokens, like vLLM's ``prefix_cache_queries`` and ``prefix_cache_hits``.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from collections.abc import Sequence

DEFAULT_BLOCK_TOKENS = 16
DEFAULT_CAPACITY_BLOCKS = 16_384  # 262k tokens: far more than a test's distinct prefixes


def block_hashes(words: Sequence[str], block_tokens: int = DEFAULT_BLOCK_TOKENS) -> tuple[int, ...]:
    """Chained hashes of the prompt's cacheable full blocks (never the last token).

    Stable across processes (blake2b, not Python's salted ``hash``), so a plan and a
    server agree on them, and ``simulate`` runs are reproducible.
    """
    cacheable = max(0, len(words) - 1) // block_tokens
    hashes: list[int] = []
    previous = b""
    for index in range(cacheable):
        block = " ".join(words[index * block_tokens : (index + 1) * block_tokens])
        digest = hashlib.blake2b(previous + block.encode(), digest_size=8).digest()
        hashes.append(int.from_bytes(digest, "big"))
        previous = digest
    return tuple(hashes)


class PrefixCache:
    """LRU over block hashes; ``capacity`` 0 disables it (nothing ever hits)."""

    def __init__(
        self, capacity: int = DEFAULT_CAPACITY_BLOCKS, block_tokens: int = DEFAULT_BLOCK_TOKENS
    ) -> None:
        if capacity < 0 or block_tokens < 1:
            raise ValueError("a prefix cache needs capacity >= 0 and block_tokens >= 1")
        self.capacity = capacity
        self.block_tokens = block_tokens
        self._blocks: OrderedDict[int, None] = OrderedDict()
        self.queried_tokens = 0
        self.hit_tokens = 0

    def __len__(self) -> int:
        return len(self._blocks)

    def lookup(self, prompt_tokens: int, blocks: Sequence[int]) -> int:
        """Cached tokens of a prompt with these block hashes; counts the query."""
        self.queried_tokens += prompt_tokens
        hits = 0
        for block in blocks:
            if block not in self._blocks:
                break
            self._blocks.move_to_end(block)  # used again: most recent
            hits += 1
        cached = hits * self.block_tokens
        self.hit_tokens += cached
        return cached

    def insert(self, blocks: Sequence[int]) -> None:
        """Keep a prefilled prompt's blocks, evicting the least recently used."""
        if not self.capacity:
            return
        for block in blocks:
            self._blocks[block] = None
            self._blocks.move_to_end(block)
        while len(self._blocks) > self.capacity:
            self._blocks.popitem(last=False)

    @property
    def hit_rate(self) -> float:
        """Hit tokens over queried tokens (0 before any query)."""
        return self.hit_tokens / self.queried_tokens if self.queried_tokens else 0.0
