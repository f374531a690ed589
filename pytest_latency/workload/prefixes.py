"""Shared prefixes (``prefix: {groups, tokens, share}``): which requests start with which.

A ``share`` of the requests start with one of ``groups`` prefixes of exactly ``tokens``
words (one word is one token on the embedded server; real tokenizers differ), like a
system prompt or a retrieved document that many requests repeat. Every prefix begins
with the run's nonce, so two runs (or two ABBA blocks) never share a prefix by
accident: a prefix cache hits only within a run, where the workload asks for it.
"""

from __future__ import annotations

import numpy as np

from pytest_latency.spec.model import Prefix

#: The granularity of ``PlannedRequest.prefix_blocks`` ids (vLLM's default block size).
PREFIX_BLOCK_TOKENS = 16
_PREFIX_STREAM = 3  # the seed's random stream for prefixes (workload/__init__.py has 0-2)
_VOCABULARY = (
    "the", "course", "notes", "cover", "lecture", "slides", "reading", "list", "exam",
    "rules", "grading", "policy", "office", "hours", "lab", "safety", "chapter", "summary",
    "glossary", "of", "terms", "worked", "examples", "and", "exercises", "with", "answers",
    "for", "each", "unit", "week", "project", "guide",
)  # fmt: skip


class PrefixPlanner:
    """Draws each request's prefix group (or none) and builds each group's text, seeded."""

    def __init__(self, prefix: Prefix, seed: int, nonce: str) -> None:
        self.prefix = prefix
        self.seed = seed
        self.nonce = nonce
        self._rng = np.random.default_rng([seed, _PREFIX_STREAM])
        self._texts: dict[int, str] = {}

    def draw(self) -> int | None:
        """The next request's group, or None (one draw per request, whatever the answer)."""
        draw = float(self._rng.random())
        if draw >= self.prefix.share:
            return None
        return min(int(draw / self.prefix.share * self.prefix.groups), self.prefix.groups - 1)

    def text(self, group: int) -> str:
        """Group ``group``'s prefix: exactly ``tokens`` words, starting with the nonce."""
        if group not in self._texts:
            rng = np.random.default_rng([self.seed, _PREFIX_STREAM, group + 1])
            head = f"Context {self.nonce}-g{group}: course material for this study group.".split()
            words = head[: self.prefix.tokens]
            picks = rng.integers(len(_VOCABULARY), size=self.prefix.tokens - len(words))
            words.extend(_VOCABULARY[int(index)] for index in picks)
            self._texts[group] = " ".join(words)
        return self._texts[group]

    def blocks(self, group: int) -> tuple[int, ...]:
        """Ids of the group's full ``PREFIX_BLOCK_TOKENS``-token blocks (equal within a group)."""
        count = self.prefix.tokens // PREFIX_BLOCK_TOKENS
        return tuple(group * 1_000_000 + index for index in range(count))
