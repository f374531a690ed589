"""Prompts drawn from the user's dataset, deterministically by seed.

Entries are dealt in a seeded shuffled order, without replacement until the dataset is
used up, then in a fresh shuffle: a run repeats a prompt only when it sends more
requests than the dataset holds (a repeated prompt may hit the server's prefix cache).
"""

from __future__ import annotations

import numpy as np

from pytest_latency.spec.prompts import DatasetPrompt, PromptSource


class DatasetSampler:
    """Deals the dataset's prompts in a seeded order."""

    def __init__(self, source: PromptSource, rng: np.random.Generator) -> None:
        self._prompts = source.prompts
        self._rng = rng
        self._order: list[int] = []

    def next(self) -> DatasetPrompt:
        if not self._order:
            self._order = [int(index) for index in self._rng.permutation(len(self._prompts))]
            self._order.reverse()  # pop() from the end deals the permutation in order
        return self._prompts[self._order.pop()]


def output_tokens(entry: DatasetPrompt, cap: int) -> int:
    """The entry's output length from the data, capped by the workload's output_tokens."""
    return cap if entry.output_tokens is None else min(entry.output_tokens, cap)
