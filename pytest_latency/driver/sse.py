"""Incremental server-sent-events decoding and OpenAI stream chunk interpretation.

:class:`SSEDecoder` turns raw body bytes, in whatever pieces the socket delivers them,
into event payloads (the joined ``data:`` lines of each event). Each byte is scanned
once: only the new chunk is split, an unfinished line is kept as pieces until its end
arrives. It follows the WHATWG event-stream rules that matter here: lines end in
``\\n``, ``\\r\\n`` or ``\\r`` (also when the pair is split across reads), ``:`` starts a
comment, several ``data:`` lines make one multi-line payload, other fields are ignored,
an empty line dispatches. Leniency: at end of stream a pending payload is dispatched
even without its closing blank line (servers that end on ``data: [DONE]\\n`` exist).

:class:`StreamState` reads one payload at a time, decoding its JSON once, and keeps the
per-request token timeline: first content chunk, gaps between content chunks, chunk
count, reported usage and whether the stream finished (``[DONE]`` or a
``finish_reason``).
"""

from __future__ import annotations

import json
from typing import Any

from pytest_latency.driver.chunk_scan import Shape, fits, plain_answer, shape_of
from pytest_latency.driver.limits import size_text

_BOM = b"\xef\xbb\xbf"
_COLON = 0x3A
DONE = b"[DONE]"


class SSEDecoder:
    """Feed raw bytes, get back the payloads of the events those bytes completed."""

    __slots__ = ("_cr_pending", "_data", "_max_line", "_pending", "_pieces", "_started")

    def __init__(self, max_line_bytes: int = 1024 * 1024) -> None:
        self._max_line = max_line_bytes  # a line (or an event's data) longer is malformed
        self._pieces: list[bytes] = []  # the unfinished last line, as received
        self._pending = 0  # bytes in _pieces
        self._data: bytes | None = None  # payload of the event being built
        self._cr_pending = False  # previous chunk ended in \r: a leading \n is its pair
        self._started = False

    def feed(self, chunk: bytes) -> list[bytes]:
        if not self._started:
            self._started = True
            if chunk.startswith(_BOM):
                chunk = chunk[3:]
        if self._cr_pending:
            self._cr_pending = False
            if chunk[:1] == b"\n":
                chunk = chunk[1:]
        if not chunk:
            return []
        if b"\r" in chunk:
            self._cr_pending = chunk[-1] == 0x0D
            chunk = chunk.replace(b"\r\n", b"\n").replace(b"\r", b"\n")
        lines = chunk.split(b"\n")
        if len(lines) == 1:
            self._keep(chunk)
            return []
        if self._pieces:
            self._pieces.append(lines[0])
            lines[0] = b"".join(self._pieces)
            self._pieces.clear()
            self._pending = 0
        tail = lines.pop()
        if tail:
            self._keep(tail)
        events: list[bytes] = []
        limit = self._max_line
        for line in lines:  # the two common lines inline: a call per line was a cost
            if not line:
                if self._data is not None:
                    events.append(self._data)
                    self._data = None
            elif self._data is None and line.startswith(b"data: ") and len(line) <= limit:
                self._data = line[6:]
            else:
                self._line(line, events)
        return events

    def idle(self, size: int) -> bool:
        """Between events, nothing pending, and a read of ``size`` bytes cannot hold a
        line over the bound: such a read may be taken whole (:func:`.chunk_scan.plain_events`)."""
        return (
            self._data is None
            and not self._pieces
            and not self._cr_pending
            and self._started
            and size <= self._max_line
        )

    def _keep(self, piece: bytes) -> None:
        """Hold an unfinished line; one that never ends must not grow without bound."""
        self._pending += len(piece)
        if self._pending > self._max_line:
            self._pieces.clear()
            self._pending = 0
            raise LineTooLong(f"SSE line over {size_text(self._max_line)} without a newline")
        self._pieces.append(piece)

    def flush(self) -> list[bytes]:
        """End of stream: the payloads still pending (lenient, see the module doc)."""
        events: list[bytes] = []
        if self._pieces:
            self._line(b"".join(self._pieces), events)
            self._pieces.clear()
            self._pending = 0
        self._line(b"", events)
        return events

    def _line(self, line: bytes, events: list[bytes]) -> None:
        if len(line) > self._max_line:
            raise LineTooLong(f"SSE line over {size_text(self._max_line)}")
        if not line:
            if self._data is not None:
                events.append(self._data)
                self._data = None
        elif line[0] != _COLON:
            name, _, value = line.partition(b":")
            if name == b"data":
                if value[:1] == b" ":
                    value = value[1:]
                if self._data is None:
                    self._data = value
                elif len(self._data) + len(value) >= self._max_line:
                    raise LineTooLong(f"SSE event data over {size_text(self._max_line)}")
                else:
                    self._data = self._data + b"\n" + value


class StreamError(Exception):
    """The stream cannot be read as an OpenAI completion stream."""


class MalformedStream(StreamError):
    """Bytes that are not what the protocol allows: bad JSON, wrong chunk shape."""


class LineTooLong(MalformedStream):
    """An SSE line (or one event's data) over the configured bound."""


class ErrorEvent(StreamError):
    """The server reported an error inside a 2xx stream (``{"error": ...}``)."""

    def __init__(self, payload: dict[str, Any]) -> None:
        super().__init__("error event in stream")
        self.payload = payload


class StreamState:
    """The token timeline of one streamed response (instants in perf_counter ns).

    A chunk *carries content* when a choice has non-empty ``delta.content`` (or a
    completion's ``text``): an answer token; or non-empty ``delta.reasoning_content`` or
    ``delta.reasoning``: a reasoning token. Both count for the first token and the gaps;
    only the answer counts for the first answer token (TTFO).
    """

    __slots__ = (
        "cached_tokens",
        "chunk_tokens",
        "chunks",
        "done",
        "finish_reason",
        "finished",
        "first_answer_ns",
        "first_ns",
        "first_reasoning_ns",
        "frame",
        "gaps",
        "last_ns",
        "prompt_tokens",
        "reasoning_chunks",
        "reasoning_usage",
        "shape",
        "texts",
        "timings",
        "usage_tokens",
    )

    def __init__(self, gaps: list[float], texts: list[str] | None = None) -> None:
        self.texts = texts  # when given, the answer's text pieces (multi-turn sessions)
        self.first_ns: int | None = None
        self.first_answer_ns: int | None = None
        self.first_reasoning_ns: int | None = None
        self.last_ns = 0
        self.gaps = gaps  # seconds between successive content chunks
        self.chunks = 0  # content-bearing chunks
        self.reasoning_chunks = 0  # of which reasoning only
        # Tokens of each content chunk from the cumulative per-chunk usage; None once a
        # content chunk came without usage (the server does not report it per chunk).
        self.chunk_tokens: list[int] | None = []
        self.usage_tokens: int | None = None
        self.reasoning_usage: int | None = None  # usage.completion_tokens_details
        self.prompt_tokens: int | None = None  # the server's count of the prompt
        self.cached_tokens: int | None = None  # of which served from its prefix cache
        self.timings: dict[str, Any] | None = None  # llama.cpp's per-request ``timings``
        self.finished = False  # a choice reported finish_reason
        self.finish_reason: str | None = None  # the last one reported
        self.done = False  # [DONE] received
        self.shape: Shape | None = None  # the frame of this stream's plain chunks
        # The same frame as SSE lines (``data: `` + prefix, rest), for reads taken whole.
        self.frame: tuple[bytes, bytes] | None = None

    def feed(self, data: bytes, now_ns: int) -> None:
        """Take one event payload received at ``now_ns``; raise StreamError subclasses."""
        if self.done or not data:
            return
        if data == DONE:
            self.done = True
            self.frame = None  # nothing after [DONE] counts
            return
        if self.chunks and self.texts is None and self._plain(data):
            # The hot path: an answer token and nothing else (driver/chunk_scan.py). The
            # first content chunk of every stream is always decoded in full.
            self._content(now_ns, True)
            self.chunk_tokens = None  # a content chunk without usage
            return
        try:
            chunk = json.loads(data)
        except ValueError:
            raise MalformedStream("malformed JSON in a data line") from None
        except RecursionError:  # json recurses per nesting level; this must stay contained
            raise MalformedStream("malformed JSON in a data line (nested too deeply)") from None
        try:
            self._chunk(chunk, now_ns)
        except (AttributeError, TypeError):
            raise MalformedStream("unexpected chunk shape (not an OpenAI stream chunk)") from None

    def _plain(self, data: bytes) -> bool:
        """A plain answer chunk: this stream's frame around new content, or by the scan."""
        shape = self.shape
        if shape is not None and fits(data, shape):
            return True
        if plain_answer(data):
            self.shape = shape = shape_of(data)
            self.frame = None if shape is None else (b"data: " + shape[0], shape[1])
            return True
        return False

    def answers(self, now_ns: int, count: int) -> None:
        """``count`` plain answer chunks of this stream, all received at ``now_ns``
        (:func:`.chunk_scan.plain_events`): what :meth:`feed` does for each of them."""
        gaps = self.gaps
        gaps.append((now_ns - self.last_ns) / 1e9)
        if count > 1:
            gaps.extend([0.0] * (count - 1))
        self.last_ns = now_ns
        self.chunks += count
        if self.first_answer_ns is None:
            self.first_answer_ns = now_ns
        self.chunk_tokens = None

    def _chunk(self, chunk: dict[str, Any], now_ns: int) -> None:
        choices = chunk.get("choices")
        answer = reasoning = False
        if choices:
            for choice in choices:
                delta = choice.get("delta")
                if delta is None:  # completions API
                    if choice.get("text"):
                        answer = True
                elif delta.get("content"):
                    answer = True
                elif delta.get("reasoning_content") or delta.get("reasoning"):
                    reasoning = True
                reason = choice.get("finish_reason")
                if reason is not None:
                    self.finished = True
                    self.finish_reason = reason[:64] if isinstance(reason, str) else None
            if answer and self.texts is not None:
                self._keep_text(choices)
            if answer or reasoning:
                self._content(now_ns, answer)
        elif "error" in chunk or chunk.get("object") == "error":
            raise ErrorEvent(chunk)
        timings = chunk.get("timings")
        if timings and isinstance(timings, dict):
            self.timings = timings
        usage = chunk.get("usage")
        previous = self.usage_tokens or 0
        if usage:
            self._usage(usage)
        if (answer or reasoning) and self.chunk_tokens is not None:
            if usage and self.usage_tokens is not None:
                self.chunk_tokens.append(max(0, self.usage_tokens - previous))
            else:
                self.chunk_tokens = None  # one content chunk without usage: not per chunk

    def _content(self, now_ns: int, answer: bool) -> None:
        if self.first_ns is None:
            self.first_ns = now_ns
        else:
            self.gaps.append((now_ns - self.last_ns) / 1e9)
        self.last_ns = now_ns
        self.chunks += 1
        if answer:
            if self.first_answer_ns is None:
                self.first_answer_ns = now_ns
        else:
            self.reasoning_chunks += 1
            if self.first_reasoning_ns is None:
                self.first_reasoning_ns = now_ns

    def _keep_text(self, choices: list[dict[str, Any]]) -> None:
        assert self.texts is not None
        for choice in choices:
            delta = choice.get("delta")
            text = choice.get("text") if delta is None else delta.get("content")
            if isinstance(text, str):
                self.texts.append(text)

    def _usage(self, usage: dict[str, Any]) -> None:
        tokens = usage.get("completion_tokens")
        if type(tokens) is int:
            self.usage_tokens = tokens
        prompt = usage.get("prompt_tokens")
        if type(prompt) is int:
            self.prompt_tokens = prompt
        # vLLM and OpenAI: usage.prompt_tokens_details.cached_tokens (null when unknown).
        details = usage.get("prompt_tokens_details")
        cached = details.get("cached_tokens") if isinstance(details, dict) else None
        if type(cached) is int:
            self.cached_tokens = cached
        # OpenAI, vLLM: usage.completion_tokens_details.reasoning_tokens.
        details = usage.get("completion_tokens_details")
        reasoning = details.get("reasoning_tokens") if isinstance(details, dict) else None
        if type(reasoning) is int:
            self.reasoning_usage = reasoning
