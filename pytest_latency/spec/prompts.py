"""User prompt datasets (``prompts: {file: data.jsonl, format: sharegpt|openai-chat|text}``).

Formats (docs/workloads.md "Your own prompts"):

- ``sharegpt``: JSON Lines, or one JSON array, of ``{"conversations": [{"from": "human",
  "value": ...}, {"from": "gpt", "value": ...}]}``; the prompt is the first human turn and
  the output length the reply after it, where there is one.
- ``openai-chat``: JSON Lines of ``{"messages": [{"role": "user", "content": ...}, ...]}``
  with an optional ``max_tokens``; the prompt is the first user message, the output
  length ``max_tokens`` or the assistant's reply after that message.
- ``text``: one prompt per line; blank lines are skipped.

Only the prompt text and an output length are kept per entry; a reply's length is
counted in words (whitespace-separated). Conversations with no human turn are skipped
(ShareGPT dumps have some); a dataset with no usable prompt is an error.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal, get_args

from pytest_latency.spec.files import (
    MAX_TOKENS,
    DataFileError,
    DigestingReader,
    json_line,
    whole_number,
)

PromptFormat = Literal["sharegpt", "openai-chat", "text"]
PROMPT_FORMATS: tuple[str, ...] = get_args(PromptFormat)
_HUMAN, _MODEL = ("human", "user"), ("gpt", "assistant", "chatgpt", "bard", "model")


@dataclass(frozen=True, slots=True)
class DatasetPrompt:
    """One usable entry: the prompt, its output length from the data (None: none given)."""

    text: str
    output_tokens: int | None
    line: int


@dataclass(frozen=True, slots=True)
class PromptSource:
    """A dataset's usable prompts, with the file's name and digest for the fingerprint."""

    file: str
    format: PromptFormat
    sha256: str
    prompts: tuple[DatasetPrompt, ...] = field(repr=False)

    def to_json(self) -> dict[str, object]:
        return {
            "file": self.file,
            "format": self.format,
            "sha256": self.sha256,
            "prompts": len(self.prompts),
        }


def _words(text: str) -> int:
    return len(text.split())


def _text(path: Path, line: int, key: str, value: object) -> str:
    if not isinstance(value, str):
        raise DataFileError(path, line, key, f"must be text, got {type(value).__name__}")
    return value


def _turns(path: Path, line: int, record: dict[str, object], key: str) -> list[object]:
    turns = record.get(key)
    if not isinstance(turns, list):
        raise DataFileError(path, line, key, "missing, or not a list of messages")
    return turns


def _sharegpt(path: Path, line: int, record: dict[str, object]) -> DatasetPrompt | None:
    turns = _turns(path, line, record, "conversations")
    for index, turn in enumerate(turns):
        key = f"conversations[{index}]"
        if not isinstance(turn, dict) or "from" not in turn or "value" not in turn:
            raise DataFileError(path, line, key, 'expected {"from": ..., "value": ...}')
        if turn["from"] in _HUMAN:
            prompt = _text(path, line, f"{key}.value", turn["value"])
            reply = turns[index + 1] if index + 1 < len(turns) else None
            output = None
            if isinstance(reply, dict) and reply.get("from") in _MODEL:
                output = _words(_text(path, line, f"{key}.value", reply.get("value"))) or None
            return DatasetPrompt(prompt, output, line) if prompt.strip() else None
    return None


def _openai_chat(path: Path, line: int, record: dict[str, object]) -> DatasetPrompt | None:
    messages = _turns(path, line, record, "messages")
    output = None
    if "max_tokens" in record:
        output = whole_number(path, line, "max_tokens", record["max_tokens"], 1, MAX_TOKENS)
    for index, message in enumerate(messages):
        key = f"messages[{index}]"
        if not isinstance(message, dict) or "role" not in message:
            raise DataFileError(path, line, key, 'expected {"role": ..., "content": ...}')
        if message["role"] == "user":
            prompt = _text(path, line, f"{key}.content", message.get("content"))
            reply = messages[index + 1] if index + 1 < len(messages) else None
            if output is None and isinstance(reply, dict) and reply.get("role") == "assistant":
                output = _words(_text(path, line, f"{key}.content", reply.get("content"))) or None
            return DatasetPrompt(prompt, output, line) if prompt.strip() else None
    return None


def _json_array(path: Path, text: str) -> Iterator[tuple[int, dict[str, object]]]:
    """The objects of one JSON array, each with the line it starts on."""
    decoder = json.JSONDecoder()
    position = text.index("[") + 1
    while True:
        while position < len(text) and text[position] in " \t\r\n,":
            position += 1
        line = text.count("\n", 0, position) + 1
        if position >= len(text):
            raise DataFileError(path, line, "(json)", "the array is not closed with ]")
        if text[position] == "]":
            return
        try:
            value, position = decoder.raw_decode(text, position)
        except ValueError as error:
            raise DataFileError(path, line, "(json)", f"not valid JSON ({error})") from None
        if not isinstance(value, dict):
            raise DataFileError(path, line, "(json)", "expected an object in the array")
        yield line, value


def _records(path: Path, reader: DigestingReader) -> Iterator[tuple[int, dict[str, object]]]:
    lines = reader.lines()
    for number, text in lines:
        if not text.strip():
            continue
        if text.lstrip().startswith("["):  # one JSON array: it has to be read whole
            rest = "".join(more for _, more in lines)
            yield from _json_array(path, "\n" * (number - 1) + text + rest)
            return
        yield number, json_line(path, number, text)


def load_prompts(path: Path, format: str, *, name: str = "") -> PromptSource:
    """Read a dataset; DataFileError names the file, line and key of a bad entry."""
    if format not in PROMPT_FORMATS:
        raise ValueError(f"format must be one of {', '.join(PROMPT_FORMATS)}, got {format!r}")
    reader = DigestingReader(path)
    entries: list[DatasetPrompt | None]
    if format == "text":
        entries = [
            DatasetPrompt(text.rstrip("\r\n"), None, number)
            for number, text in reader.lines()
            if text.strip()
        ]
    else:
        parse = _sharegpt if format == "sharegpt" else _openai_chat
        entries = [parse(path, number, record) for number, record in _records(path, reader)]
    prompts = tuple(entry for entry in entries if entry is not None)
    if not prompts:
        raise DataFileError(path, 1, "(file)", f"no usable prompt in this {format} dataset")
    return PromptSource(name or path.name, format, reader.sha256, prompts)  # type: ignore[arg-type]


def prompt_dataset(file: str | Path, format: str = "text") -> PromptSource:
    """Prompts from your own dataset, for ``Workload(prompts=...)``; read once, now."""
    return load_prompts(Path(file), format)
