"""Plans from files: the same seed gives the same plan and prompts byte for byte; datasets
are dealt deterministically; a tokenizer makes prompts of exact token length."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from pytest_latency.spec.model import Phase, Workload
from pytest_latency.spec.prompts import prompt_dataset
from pytest_latency.spec.trace import trace_phase
from pytest_latency.workload import build_plan
from pytest_latency.workload.tokenizer import load_tokenizer
from tests.helpers.tiny_tokenizer import write_tiny_tokenizer


def _trace(tmp_path: Path, count: int = 40) -> Path:
    path = tmp_path / "trace.jsonl"
    lines = [
        {"timestamp": 37 * i, "input_length": 20 + i % 7, "output_length": 3,
         "hash_ids": [i % 3, 100 + i]}
        for i in range(count)
    ]  # fmt: skip
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def _dataset(tmp_path: Path, count: int = 5) -> Path:
    path = tmp_path / "prompts.txt"
    path.write_text("".join(f"prompt number {i} about rivers\n" for i in range(count)))
    return path


def _prompts(workload: Workload) -> bytes:
    plan = build_plan(workload)
    return b"\x00".join(
        json.dumps([r.id, r.intended_s, r.input_tokens, r.output_tokens, r.prompt]).encode()
        for r in plan.requests
    )


def test_same_seed_same_plan_and_prompts_byte_for_byte(tmp_path: Path) -> None:
    phases = (
        Phase("steady", rate=20, duration_s=2),
        trace_phase(_trace(tmp_path)),
    )
    workload = Workload(phases=phases, seed=11, prompts=None)
    with_data = Workload(phases=phases[:1], seed=11, prompts=prompt_dataset(_dataset(tmp_path)))
    tokenized = Workload(phases=phases, seed=11, tokenizer=write_tiny_tokenizer(tmp_path / "tok"))
    for one in (workload, with_data, tokenized):
        assert build_plan(one) == build_plan(one)
        assert _prompts(one) == _prompts(dataclasses.replace(one))
        assert _prompts(one) != _prompts(dataclasses.replace(one, seed=12))


def test_trace_prompts_share_their_blocks_and_nothing_across_seeds(tmp_path: Path) -> None:
    phase = trace_phase(_trace(tmp_path, count=4))
    first = build_plan(Workload(phases=(phase,), seed=1)).requests
    again = build_plan(Workload(phases=(phase,), seed=2)).requests
    # Requests 0 and 3 both start with block 0 (their input is shorter than one block).
    assert first[0].prompt.split()[:20] == first[3].prompt.split()[:20]
    assert first[0].prefix_blocks == (0, 100) and first[0].input_tokens_source == "estimate"
    assert first[0].prompt.split()[0] != again[0].prompt.split()[0]


def test_dataset_is_dealt_in_a_seeded_order_without_early_repeats(tmp_path: Path) -> None:
    source = prompt_dataset(_dataset(tmp_path, count=5))
    workload = Workload(
        phases=(Phase("steady", rate=10, duration_s=1, arrival="constant"),),
        seed=3,
        prompts=source,
        output_tokens=4,
    )
    prompts = [r.prompt for r in build_plan(workload).requests]
    assert len(prompts) == 10
    assert len(set(prompts[:5])) == 5 and set(prompts[5:]) == set(prompts[:5])
    other = [r.prompt for r in build_plan(dataclasses.replace(workload, seed=4)).requests]
    assert other != prompts
    assert {r.input_tokens for r in build_plan(workload).requests} == {5}  # words
    assert {r.output_tokens for r in build_plan(workload).requests} == {4}


def test_dataset_output_lengths_are_capped_by_output_tokens(tmp_path: Path) -> None:
    path = tmp_path / "chat.jsonl"
    rows = [{"messages": [{"role": "user", "content": "hi"}], "max_tokens": n} for n in (2, 50)]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    workload = Workload(
        phases=(Phase("steady", rate=2, duration_s=1, arrival="constant"),),
        prompts=prompt_dataset(path, "openai-chat"),
        output_tokens=10,
    )
    assert sorted(r.output_tokens for r in build_plan(workload).requests) == [2, 10]


def test_a_tokenizer_makes_prompts_of_exact_token_length(tmp_path: Path) -> None:
    folder = write_tiny_tokenizer(tmp_path / "tok")
    tokenizer = load_tokenizer(folder)
    phases = (Phase("steady", rate=20, duration_s=2), trace_phase(_trace(tmp_path)))
    plan = build_plan(Workload(phases=phases, seed=5, input_tokens=(30, 60), tokenizer=folder))
    for request in plan.requests:
        assert tokenizer.count(request.prompt) == request.input_tokens
        assert request.input_tokens_source == "tokenizer"
    steady = [r for r in plan.requests if r.phase == "steady"]
    assert all(30 <= r.input_tokens <= 60 for r in steady)
    # Without the tokenizer, the planned length in words is only an estimate of tokens.
    words = build_plan(Workload(phases=phases, seed=5, input_tokens=(30, 60))).requests
    assert any(tokenizer.count(r.prompt) != r.input_tokens for r in words)
    assert {r.input_tokens_source for r in words} == {"estimate"}
    replay = [r for r in plan.requests if r.phase == "replay"]
    assert [r.input_tokens for r in replay] == [20 + i % 7 for i in range(40)]


def test_a_missing_tokenizer_is_a_spec_error(tmp_path: Path) -> None:
    from pytest_latency.spec.model import SpecError

    workload = Workload(phases=(Phase("s", rate=1, duration_s=1),), tokenizer=tmp_path)
    with pytest.raises(SpecError, match="tokenizer: cannot load"):
        build_plan(workload)


def test_prefixes_head_dataset_prompts_and_tokenizers_count_them(tmp_path: Path) -> None:
    from pytest_latency.spec.model import Prefix

    folder = write_tiny_tokenizer(tmp_path / "tok")
    workload = Workload(
        phases=(Phase("steady", rate=10, duration_s=1, arrival="constant"),),
        prompts=prompt_dataset(_dataset(tmp_path)),
        prefix=Prefix(groups=1, tokens=20, share=1.0),
        tokenizer=folder,
    )
    tokenizer = load_tokenizer(folder)
    for request in build_plan(workload).requests:
        assert request.prompt.startswith("Context ") and request.prefix_blocks
        assert tokenizer.count(request.prompt) == request.input_tokens


def test_sessions_do_not_mix_with_traces_or_datasets(tmp_path: Path) -> None:
    from pytest_latency.spec.model import Sessions, SpecError

    sessions = Sessions(turns=(2, 3), think_time_s=0.1)
    with pytest.raises(SpecError, match="not with prompts: or trace phases"):
        Workload(phases=(trace_phase(_trace(tmp_path)),), sessions=sessions)
    with pytest.raises(SpecError, match="not with prompts: or trace phases"):
        Workload(
            phases=(Phase("steady", rate=1, duration_s=1),),
            sessions=sessions,
            prompts=prompt_dataset(_dataset(tmp_path)),
        )


def test_a_fresh_nonce_changes_trace_block_texts(tmp_path: Path) -> None:
    workload = Workload(phases=(trace_phase(_trace(tmp_path, count=3)),), seed=1)
    first = build_plan(workload, nonce="aa").requests[0].prompt
    assert first.startswith("block-aa-0:")
    assert build_plan(workload, nonce="bb").requests[0].prompt != first
