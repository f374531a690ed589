"""Fictional prompts of a target length, in the voice of the seed's student assistant.

Length is counted in whitespace-separated words. Real tokenizers split differently
(roughly 1.3 tokens per English word for llama-style vocabularies); servers report the
true prompt token count in ``usage``, and the embedded server counts one token per word.
Each prompt starts with the run's nonce (by default the seed in hex; a fresh random one
for every run the plugin drives) and its request number, so no two requests of a run,
nor of two runs (ABBA blocks), share a cacheable prefix unless the workload asks.
"""

from __future__ import annotations

import numpy as np

_TOPICS = (
    "photosynthesis",
    "the water cycle",
    "fractions",
    "the French revolution",
    "plate tectonics",
    "binary search",
    "supply and demand",
    "cell division",
    "the Pythagorean theorem",
    "poetry meter",
    "volcanoes",
    "electric circuits",
)
FILLER = (
    "please",
    "explain",
    "step",
    "by",
    "step",
    "with",
    "a",
    "short",
    "example",
    "for",
    "a",
    "first",
    "year",
    "student",
    "who",
    "missed",
    "the",
    "webinar",
    "and",
    "wants",
    "clear",
    "notes",
    "about",
    "the",
    "main",
    "idea",
    "common",
    "mistakes",
    "and",
    "practice",
)


def make_prompt(
    request_id: int, tokens: int, rng: np.random.Generator, nonce: int | str = 0
) -> str:
    """A fictional question of exactly ``tokens`` words (at least 1); an int ``nonce`` (a
    seed) is written in hex."""
    topic = _TOPICS[int(rng.integers(len(_TOPICS)))]
    tag = f"{nonce:x}" if isinstance(nonce, int) else nonce
    head = f"Question {tag}-{request_id}: help me understand {topic}.".split()
    words = head[:tokens]
    remaining = tokens - len(words)
    if remaining > 0:
        picks = rng.integers(len(FILLER), size=remaining)
        words.extend(FILLER[int(index)] for index in picks)
    return " ".join(words)
