"""A tiny word-level Hugging Face tokenizer, written to a folder as a real one would be.

Digits and punctuation are tokens of their own, so a prompt's token count differs from
its word count (``Question 7-3:`` is one word... of five tokens), as with real tokenizers.
"""

from __future__ import annotations

import string
from pathlib import Path

from pytest_latency.workload.prompts import _TOPICS, FILLER


def write_tiny_tokenizer(folder: Path) -> Path:
    """``folder/tokenizer.json``, covering every word the made-up prompts use."""
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = {"[UNK]", "Question", "help", "me", "understand", "block"}
    words |= set(FILLER) | {word for topic in _TOPICS for word in topic.split()}
    words |= set(string.ascii_letters) | set(string.digits) | set(string.punctuation)
    vocab = {word: index for index, word in enumerate(sorted(words))}
    tokenizer = Tokenizer(models.WordLevel(vocab=vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Sequence(
        [pre_tokenizers.Whitespace(), pre_tokenizers.Digits(individual_digits=True)]
    )
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(folder / "tokenizer.json"))
    return folder
