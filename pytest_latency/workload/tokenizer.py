"""True token counts from a local Hugging Face tokenizer (``tokenizer: PATH``).

The folder holds the model's ``tokenizer.json``; it is read by the ``tokenizers`` package
(``pip install 'pytest-latency[tokenizer]'``). Nothing is ever downloaded. Counts are of
the prompt text alone, without special tokens: the server's chat template adds its own.
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING

from pytest_latency.errors import SpecError

if TYPE_CHECKING:
    from tokenizers import Tokenizer

TOKENIZER_FILE = "tokenizer.json"
_FIT_TRIES = 8  # re-encoding a cut text may merge differently: nudge the cut this often


class PromptTokenizer:
    """Counts tokens and cuts texts to an exact number of tokens."""

    def __init__(self, tokenizer: Tokenizer) -> None:
        self._tokenizer = tokenizer

    def count(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)

    def fit(self, text: str, tokens: int) -> tuple[str, int]:
        """The longest start of ``text`` of exactly ``tokens`` tokens, and its true count.

        ``text`` must hold at least ``tokens`` tokens. When no cut re-encodes to exactly
        ``tokens`` (rare: merges across the cut), the closest is returned with its count.
        """
        ids = self._tokenizer.encode(text, add_special_tokens=False).ids
        best: tuple[str, int] | None = None
        cut = min(tokens, len(ids))
        for _ in range(_FIT_TRIES):
            candidate = self._tokenizer.decode(ids[:cut])
            count = self.count(candidate)
            if best is None or abs(count - tokens) < abs(best[1] - tokens):
                best = (candidate, count)
            if count == tokens or cut <= 1:
                break
            cut += 1 if count < tokens else -1
        assert best is not None
        return best


@lru_cache(maxsize=4)
def load_tokenizer(folder: Path) -> PromptTokenizer:
    """The tokenizer in ``folder`` (cached: a plan is built for the power check and the run)."""
    try:
        from tokenizers import Tokenizer
    except ImportError:  # an optional extra
        raise SpecError(
            "tokenizer: needs the tokenizers package: pip install 'pytest-latency[tokenizer]'"
        ) from None
    path = folder / TOKENIZER_FILE if folder.is_dir() else folder
    try:
        return PromptTokenizer(Tokenizer.from_file(str(path)))
    except Exception as error:  # the Rust side raises a plain Exception for any bad file
        raise SpecError(f"tokenizer: cannot load {path}: {error}") from None
