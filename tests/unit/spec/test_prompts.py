"""Prompt datasets: sharegpt (JSON Lines or one array), openai-chat, text; errors at file:line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_latency.spec.files import DataFileError
from pytest_latency.spec.prompts import load_prompts

BAD_VALUE = '{"conversations": [{"from": "human", "value": 3}]}\n'
ZERO_MAX = '{"messages": [{"role": "user", "content": "x"}], "max_tokens": 0}\n'
SHAREGPT = [
    {
        "id": "a",
        "conversations": [
            {"from": "human", "value": "How do tides work?"},
            {"from": "gpt", "value": "The moon pulls the sea."},
        ],
    },
    {"id": "b", "conversations": [{"from": "gpt", "value": "no human turn: skipped"}]},
    {"id": "c", "conversations": [{"from": "human", "value": "Name three rivers."}]},
]


def test_sharegpt_lines_keep_the_first_human_turn_and_the_reply_length(tmp_path: Path) -> None:
    path = tmp_path / "chats.jsonl"
    path.write_text("".join(json.dumps(item) + "\n" for item in SHAREGPT))
    source = load_prompts(path, "sharegpt")
    assert [(p.text, p.output_tokens, p.line) for p in source.prompts] == [
        ("How do tides work?", 5, 1),
        ("Name three rivers.", None, 3),
    ]
    assert source.to_json()["prompts"] == 2 and len(str(source.sha256)) == 64


def test_a_sharegpt_array_gives_each_entry_its_line(tmp_path: Path) -> None:
    path = tmp_path / "chats.json"
    path.write_text("[\n" + ",\n".join(json.dumps(item) for item in SHAREGPT) + "\n]\n")
    assert [p.line for p in load_prompts(path, "sharegpt").prompts] == [2, 4]
    path.write_text('[\n{"conversations": []},\n{"conversations": 5}\n]')
    with pytest.raises(DataFileError, match=r"chats.json:3: conversations: missing"):
        load_prompts(path, "sharegpt")


def test_openai_chat_takes_max_tokens_or_the_reply(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    rows = [
        {"messages": [{"role": "system", "content": "Be brief."},
                      {"role": "user", "content": "Why is the sky blue?"}], "max_tokens": 30},
        {"messages": [{"role": "user", "content": "Hi"},
                      {"role": "assistant", "content": "Hello there"}]},
    ]  # fmt: skip
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    source = load_prompts(path, "openai-chat")
    assert [(p.text, p.output_tokens) for p in source.prompts] == [
        ("Why is the sky blue?", 30),
        ("Hi", 2),
    ]


def test_text_is_one_prompt_per_line(tmp_path: Path) -> None:
    path = tmp_path / "prompts.txt"
    path.write_text("first prompt\n\n  \nsecond prompt\n")
    assert [(p.text, p.line) for p in load_prompts(path, "text").prompts] == [
        ("first prompt", 1),
        ("second prompt", 4),
    ]


@pytest.mark.parametrize(
    ("format", "text", "where"),
    [
        ("sharegpt", '{"conversations": [{"from": "human"}]}\n', ":1: conversations[0]: expected"),
        ("sharegpt", BAD_VALUE, ":1: conversations[0].value: "),
        ("sharegpt", '{"id": 1}\n', ":1: conversations: missing"),
        ("openai-chat", '{"messages": []}\n' + ZERO_MAX, ":2: max_tokens: must be a whole number"),
        ("openai-chat", "{broken\n", ":1: (json): not valid JSON"),
        ("text", "\n\n", ":1: (file): no usable prompt"),
    ],
)  # fmt: skip
def test_bad_entries_name_file_line_and_key(
    tmp_path: Path, format: str, text: str, where: str
) -> None:
    path = tmp_path / "data.jsonl"
    path.write_text(text)
    with pytest.raises(DataFileError) as caught:
        load_prompts(path, format)
    assert str(caught.value).startswith(str(path) + where), str(caught.value)


def test_unknown_format_and_missing_file(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="format must be one of"):
        load_prompts(tmp_path / "x", "alpaca")
    with pytest.raises(DataFileError, match="no such file"):
        load_prompts(tmp_path / "absent.jsonl", "text")
