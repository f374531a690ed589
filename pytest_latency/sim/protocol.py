"""The OpenAI-compatible wire format of the reference server: validation and encoding.

Prompt length is counted deterministically: **one whitespace-separated word is one
token** (chat: the words of every message's text content, in order). Output tokens are
fictional words (`` lorem``, `` ipsum``...), one per engine step. The prompt's words
are also cut into prefix-cache blocks (:mod:`.prefix_cache`).

Output length: exactly ``max_tokens`` (or ``max_completion_tokens``) unless the
request sets ``ignore_eos: false``; then the sequence "meets EOS" at a seeded random
length between ``max(min_tokens, 1)`` and the cap, and finishes with ``stop``.
"""

from __future__ import annotations

import json
import random
import re
import secrets
import time
from dataclasses import dataclass
from typing import Any, Literal

from pytest_latency.sim.config import SimConfig
from pytest_latency.sim.prefix_cache import block_hashes

Api = Literal["chat", "completions"]

WORDS = (
    " lorem", " ipsum", " dolor", " sit", " amet", " consectetur", " adipiscing", " elit",
    " sed", " do", " eiusmod", " tempor", " incididunt", " ut", " labore", " et",
    " dolore", " magna", " aliqua", " enim", " ad", " minim", " veniam", " quis",
    " nostrud", " exercitation", " ullamco", " laboris", " nisi", " aliquip", " ex", " ea",
)  # fmt: skip
_WORD_JSON = tuple(json.dumps(word).encode() for word in WORDS)
_TRACEPARENT = re.compile(r"^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$")
_ROLES = frozenset({"system", "developer", "user", "assistant", "tool"})
DONE = b"data: [DONE]\n\n"


class RequestError(Exception):
    """An invalid request: the gateway answers ``status`` with an OpenAI error body."""

    def __init__(self, message: str, status: int = 400, code: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.code = code


@dataclass(frozen=True, slots=True)
class GenRequest:
    """A validated generation request, reduced to what the engine and encoder need."""

    api: Api
    stream: bool
    include_usage: bool
    prompt_tokens: int
    max_tokens: int
    target_tokens: int
    blocks: tuple[int, ...] = ()  # prefix-cache block hashes (none when the cache is off)
    # ``stream_options.continuous_usage_stats`` (vLLM): usage on every chunk.
    continuous_usage: bool = False
    priority: int = 0  # vLLM's request field: lower is served first (scheduling: priority)


def error_body(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def parse_traceparent(header: str | None) -> str | None:
    """The trace id of a valid W3C ``traceparent`` header, else None."""
    if not header:
        return None
    match = _TRACEPARENT.match(header.strip())
    if match is None or match.group(1) == "ff":
        return None
    trace_id, parent_id = match.group(2), match.group(3)
    if trace_id == "0" * 32 or parent_id == "0" * 16:
        return None
    return trace_id


def response_id(api: Api, request_id: int) -> str:
    """The response's ``id`` (``chatcmpl-simN`` / ``cmpl-simN``), also the span's request id."""
    return f"{'chatcmpl' if api == 'chat' else 'cmpl'}-sim{request_id}"


def new_trace_id() -> str:
    """A fresh trace id for requests that arrive without one (the gateway creates it)."""
    return secrets.token_hex(16)


def parse_request(body: object, api: Api, config: SimConfig, ordinal: int) -> GenRequest:
    """Validate a request body; ``ordinal`` seeds its early-stop length."""
    if not isinstance(body, dict):
        raise RequestError("the request body must be a JSON object")
    model = body.get("model", config.model)
    if not isinstance(model, str):
        raise RequestError("'model' must be a string")
    if model != config.model:
        raise RequestError(f"The model `{model}` does not exist.", 404, "model_not_found")
    words = _chat_prompt_words(body) if api == "chat" else _completion_prompt_words(body)
    prompt_tokens = len(words)
    max_tokens = _max_tokens(body, config)
    min_tokens = _int_field(body, "min_tokens", 0, minimum=0)
    if min_tokens > max_tokens:
        raise RequestError(f"'min_tokens' ({min_tokens}) must not exceed max_tokens ({max_tokens})")
    if prompt_tokens + max_tokens > config.max_model_len:
        raise RequestError(
            f"prompt ({prompt_tokens} tokens) plus max_tokens ({max_tokens}) exceeds the "
            f"model's context length {config.max_model_len}"
        )
    if _int_field(body, "n", 1, minimum=1) != 1:
        raise RequestError("'n' must be 1: the reference server returns one choice")
    stream = _bool_field(body, "stream", False)
    include_usage = _stream_options(body, stream)
    target = max_tokens
    if not _bool_field(body, "ignore_eos", True):
        target = random.Random(config.seed * 1_000_003 + ordinal).randint(
            max(min_tokens, 1), max_tokens
        )
    blocks = block_hashes(words, config.prefix_block_tokens) if config.prefix_cache_blocks else ()
    continuous = stream and _continuous_usage(body)
    priority = _int_field(body, "priority", 0, minimum=-(2**63))
    if priority and config.scheduling != "priority":  # vLLM refuses it the same way
        raise RequestError(
            f"Got priority {priority} but priority scheduling is not enabled"
            " (start the server with scheduling: priority)"
        )
    return GenRequest(
        api, stream, include_usage, prompt_tokens, max_tokens, target, blocks, continuous,
        priority,
    )  # fmt: skip


def _chat_prompt_words(body: dict[str, Any]) -> list[str]:
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError("'messages' must be a non-empty array")
    words: list[str] = []
    for index, message in enumerate(messages):
        if not isinstance(message, dict) or message.get("role") not in _ROLES:
            raise RequestError(f"messages[{index}] must be an object with a valid 'role'")
        words += _content_words(message.get("content"), index)
    return words


def _content_words(content: object, index: int) -> list[str]:
    if content is None:
        return []
    if isinstance(content, str):
        return content.split()
    if isinstance(content, list):
        words: list[str] = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text":
                raise RequestError(f"messages[{index}].content parts must be text parts")
            text = part.get("text")
            if not isinstance(text, str):
                raise RequestError(f"messages[{index}].content text must be a string")
            words += text.split()
        return words
    raise RequestError(f"messages[{index}].content must be a string or an array of text parts")


def _completion_prompt_words(body: dict[str, Any]) -> list[str]:
    prompt = body.get("prompt")
    if not isinstance(prompt, str):
        raise RequestError("'prompt' must be a string")
    return prompt.split()


def _max_tokens(body: dict[str, Any], config: SimConfig) -> int:
    key = "max_completion_tokens" if body.get("max_completion_tokens") is not None else "max_tokens"
    return _int_field(body, key, config.default_max_tokens, minimum=1)


def _int_field(body: dict[str, Any], key: str, default: int, minimum: int) -> int:
    value = body.get(key)
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise RequestError(f"'{key}' must be an integer")
    if value < minimum:
        raise RequestError(f"'{key}' must be >= {minimum}, got {value}")
    return value


def _bool_field(body: dict[str, Any], key: str, default: bool) -> bool:
    value = body.get(key)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise RequestError(f"'{key}' must be a boolean")
    return value


def _stream_options(body: dict[str, Any], stream: bool) -> bool:
    options = body.get("stream_options")
    if options is None:
        return False
    if not stream:
        raise RequestError("'stream_options' is only allowed when 'stream' is true")
    if not isinstance(options, dict):
        raise RequestError("'stream_options' must be an object")
    return _bool_field(options, "include_usage", False)


def _continuous_usage(body: dict[str, Any]) -> bool:
    options = body.get("stream_options")  # validated by _stream_options
    return isinstance(options, dict) and _bool_field(options, "continuous_usage_stats", False)


class Encoder:
    """Builds one request's response bytes; chunk bytes are spliced from templates
    because the server writes thousands of chunks a second."""

    def __init__(self, api: Api, model: str, request_id: int) -> None:
        self.api = api
        self._id = response_id(api, request_id)
        self._word_offset = request_id * 7
        self._created = int(time.time())
        self._model = model
        head = {
            "id": self._id,
            "object": self._object(stream=True),
            "created": self._created,
            "model": model,
        }
        prefix = b"data: " + json.dumps(head)[:-1].encode()
        if api == "chat":
            self._token_head = prefix + b', "choices": [{"index": 0, "delta": {"content": '
            self._token_tail = b'}, "logprobs": null, "finish_reason": null}]}\n\n'
        else:
            self._token_head = prefix + b', "choices": [{"index": 0, "text": '
            self._token_tail = b', "logprobs": null, "finish_reason": null}]}\n\n'

    def _object(self, stream: bool) -> str:
        if self.api == "completions":
            return "text_completion"
        return "chat.completion.chunk" if stream else "chat.completion"

    def word(self, index: int) -> str:
        """The text of output token ``index`` (1-based)."""
        return WORDS[(self._word_offset + index) % len(WORDS)]

    def token_chunk(self, index: int) -> bytes:
        word = _WORD_JSON[(self._word_offset + index) % len(WORDS)]
        return self._token_head + word + self._token_tail

    def role_chunk(self) -> bytes:
        return self._sse(self._choice({"role": "assistant", "content": ""}, None))

    def finish_chunk(self, reason: str) -> bytes:
        return self._sse(self._choice({} if self.api == "chat" else "", reason))

    def usage_chunk(
        self,
        prompt_tokens: int,
        completion_tokens: int,
        cached_tokens: int | None = None,
        reasoning_tokens: int = 0,
    ) -> bytes:
        chunk = self._head(stream=True)
        chunk["choices"] = []
        chunk["usage"] = usage(prompt_tokens, completion_tokens, cached_tokens, reasoning_tokens)
        return b"data: " + json.dumps(chunk).encode() + b"\n\n"

    def text_chunk(
        self, text: str, reasoning: bool, chunk_usage: dict[str, object] | None
    ) -> bytes:
        """A chunk of several tokens, of reasoning (chat: ``delta.reasoning_content``) or
        of the answer, with ``usage`` so far when the client asked for it on every chunk."""
        delta: object = {"reasoning_content" if reasoning else "content": text}
        chunk = self._choice(delta if self.api == "chat" else text, None)
        if chunk_usage is not None:
            chunk["usage"] = chunk_usage
        return self._sse(chunk)

    def completion(
        self,
        prompt_tokens: int,
        completion_tokens: int,
        reason: str,
        cached_tokens: int | None = None,
    ) -> dict[str, Any]:
        """The non-streaming response body."""
        text = "".join(self.word(i) for i in range(1, completion_tokens + 1))
        choice: dict[str, Any] = {"index": 0, "logprobs": None, "finish_reason": reason}
        if self.api == "chat":
            choice["message"] = {"role": "assistant", "content": text}
        else:
            choice["text"] = text
        body = self._head(stream=False)
        body["choices"] = [choice]
        body["usage"] = usage(prompt_tokens, completion_tokens, cached_tokens)
        return body

    def _head(self, stream: bool) -> dict[str, Any]:
        return {
            "id": self._id,
            "object": self._object(stream),
            "created": self._created,
            "model": self._model,
        }

    def _choice(self, delta: object, reason: str | None) -> dict[str, Any]:
        key = "delta" if self.api == "chat" else "text"
        choice = {"index": 0, key: delta, "logprobs": None, "finish_reason": reason}
        chunk = self._head(stream=True)
        chunk["choices"] = [choice]
        return chunk

    @staticmethod
    def _sse(chunk: dict[str, Any]) -> bytes:
        return b"data: " + json.dumps(chunk).encode() + b"\n\n"


def usage(
    prompt_tokens: int,
    completion_tokens: int,
    cached_tokens: int | None = None,
    reasoning_tokens: int = 0,
) -> dict[str, object]:
    """OpenAI ``usage``; with the prefix cache on, ``prompt_tokens_details.cached_tokens``
    as vLLM and OpenAI report it; with reasoning, ``completion_tokens_details.
    reasoning_tokens`` (counted in ``completion_tokens``, as OpenAI does)."""
    body: dict[str, object] = {
        "prompt_tokens": prompt_tokens,
        "completion_tokens": completion_tokens,
        "total_tokens": prompt_tokens + completion_tokens,
    }
    if cached_tokens is not None:
        body["prompt_tokens_details"] = {"cached_tokens": cached_tokens}
    if reasoning_tokens:
        body["completion_tokens_details"] = {"reasoning_tokens": reasoning_tokens}
    return body
