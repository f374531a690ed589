"""Prompt text of a planned length: counted in words, or in true tokens with a tokenizer.

Without a tokenizer a prompt of N "tokens" is N whitespace-separated words (an estimate:
servers count differently, and the run records what they report). With ``tokenizer:`` a
prompt is cut to exactly N tokens of that tokenizer. Trace lines with ``hash_ids`` get one
fixed text per block id (Mooncake's 512-token blocks), so requests sharing block ids
share that prefix, as in the traced system; the run's nonce heads every block, so two
runs share nothing.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from pytest_latency.records import InputTokenSource
from pytest_latency.workload.prompts import FILLER, make_prompt
from pytest_latency.workload.tokenizer import PromptTokenizer, load_tokenizer

BLOCK_TOKENS = 512  # Mooncake's and AIPerf's block size for hash_ids
_BLOCKS = 7  # random stream of block texts (workload/__init__.py lists the others)


class PromptShaper:
    """Builds and counts prompts for one plan."""

    def __init__(self, seed: int, nonce: str, tokenizer: Path | None = None) -> None:
        self.seed = seed
        self.nonce = nonce
        self._tokenizer: PromptTokenizer | None = (
            load_tokenizer(tokenizer) if tokenizer is not None else None
        )
        self._blocks: dict[int, list[str]] = {}

    @property
    def source(self) -> InputTokenSource:
        """How input lengths are known: ``tokenizer`` (exact) or ``estimate`` (words)."""
        return "estimate" if self._tokenizer is None else "tokenizer"

    def count(self, text: str) -> int:
        if self._tokenizer is None:
            return len(text.split())
        return self._tokenizer.count(text)

    def made_up(self, request_id: int, tokens: int, rng: np.random.Generator) -> tuple[str, int]:
        """A fictional unique prompt of ``tokens`` tokens, and its length."""
        return self._fit(make_prompt(request_id, tokens, rng, self.nonce), tokens)

    def from_blocks(
        self, request_id: int, tokens: int, hash_ids: tuple[int, ...], rng: np.random.Generator
    ) -> tuple[str, int]:
        """The blocks' texts in order, cut to ``tokens``; unique words fill any rest."""
        words: list[str] = []
        for hash_id in hash_ids:
            if len(words) >= tokens:
                break
            words.extend(self._block(hash_id))
        del words[tokens:]
        if len(words) < tokens:
            words.extend(make_prompt(request_id, tokens - len(words), rng, self.nonce).split())
        return self._fit(" ".join(words), tokens)

    def _block(self, hash_id: int) -> list[str]:
        if hash_id not in self._blocks:
            rng = np.random.default_rng([self.seed, _BLOCKS, hash_id])
            picks = rng.integers(len(FILLER), size=BLOCK_TOKENS - 1)
            head = f"block-{self.nonce}-{hash_id}:"
            self._blocks[hash_id] = [head, *(FILLER[int(index)] for index in picks)]
        return self._blocks[hash_id]

    def _fit(self, text: str, tokens: int) -> tuple[str, int]:
        if self._tokenizer is None:
            return text, tokens
        return self._tokenizer.fit(text, tokens)
