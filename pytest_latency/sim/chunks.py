"""How a stream groups its tokens into SSE chunks: reasoning first, several per chunk.

With ``SimConfig.reasoning_tokens = R`` the first R output tokens of a chat answer (at
most all but one) are reasoning, sent as ``delta.reasoning_content`` as vLLM's
reasoning parsers do; the rest is the answer (``delta.content``). With
``tokens_per_chunk = K`` a chunk goes out once K tokens exist (and at the end of the
reasoning, and of the answer), as speculative decoding or a stream interval sends them.
A client that asks for ``stream_options.continuous_usage_stats`` gets the cumulative
``usage`` on every chunk, from which it can tell tokens per chunk. Engine steps, and so
the token cadence, are unchanged: a chunk of K tokens follows the previous one by K steps.
"""

from __future__ import annotations

from pytest_latency.sim.config import SimConfig
from pytest_latency.sim.protocol import Encoder, GenRequest, usage


def reasoning_of(config: SimConfig, gen: GenRequest) -> int:
    """Reasoning tokens of this answer: chat only, and never all of it."""
    if gen.api != "chat":
        return 0
    return max(0, min(config.reasoning_tokens, gen.target_tokens - 1))


class StreamChunks:
    """Turns a stream's token events into chunk bytes."""

    def __init__(self, config: SimConfig, gen: GenRequest, encoder: Encoder) -> None:
        self.encoder = encoder
        self.gen = gen
        self.reasoning = reasoning_of(config, gen)
        self.per_chunk = config.tokens_per_chunk
        # One token per plain chunk: the template path, fast enough for thousands a second.
        self.plain = self.reasoning == 0 and self.per_chunk == 1 and not gen.continuous_usage
        self._pending: list[int] = []

    def token(self, index: int) -> bytes:
        """Bytes to send now that token ``index`` (1-based) exists; empty while a chunk fills."""
        if self.plain:
            return self.encoder.token_chunk(index)
        self._pending.append(index)
        if len(self._pending) >= self.per_chunk or index == self.reasoning:
            return self.flush()
        return b""

    def flush(self) -> bytes:
        """The tokens not yet sent, as one chunk (at the end of the stream)."""
        if not self._pending:
            return b""
        indexes, self._pending = self._pending, []
        text = "".join(self.encoder.word(index) for index in indexes)
        so_far = None
        if self.gen.continuous_usage:
            so_far = usage(self.gen.prompt_tokens, indexes[-1])
        return self.encoder.text_chunk(text, indexes[-1] <= self.reasoning, so_far)
