"""Shared prefixes and multi-turn sessions: specs, plans, determinism byte for byte."""

from __future__ import annotations

import hashlib
import itertools
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pytest_latency.spec.model import Phase, Prefix, Sessions, SpecError, Workload
from pytest_latency.spec.slo_yaml import SpecFileError, load_slo_file
from pytest_latency.workload import build_plan
from pytest_latency.workload.sessions import session_allowance_s

STEADY = (Phase("steady", rate=10, duration_s=10, arrival="constant"),)


def _digest(workload: Workload, nonce: str | None = None) -> str:
    plan = build_plan(workload, nonce)
    text = repr([(r.id, r.intended_s, r.input_tokens, r.prompt, r.session, r.turn)
                 for r in plan.requests])  # fmt: skip
    return hashlib.sha256(text.encode()).hexdigest()


def test_prefixed_requests_start_with_their_group_and_count_it() -> None:
    workload = Workload(phases=STEADY, seed=3, input_tokens=(20, 30),
                        prefix=Prefix(groups=4, tokens=100, share=0.75))  # fmt: skip
    plan = build_plan(workload)
    prefixed = [r for r in plan.requests if r.prefix_blocks]
    assert 0.6 < len(prefixed) / len(plan.requests) < 0.9  # 100 requests, share 0.75
    groups: dict[tuple[int, ...], set[str]] = {}
    for request in plan.requests:
        words = request.prompt.split()
        assert len(words) == request.input_tokens
        if request.prefix_blocks:
            assert 120 <= request.input_tokens <= 130
            groups.setdefault(request.prefix_blocks, set()).add(" ".join(words[:100]))
        else:
            assert 20 <= request.input_tokens <= 30
            assert words[0] == "Question"
    assert len(groups) == 4 and all(len(texts) == 1 for texts in groups.values())
    assert len({request.prompt for request in plan.requests}) == len(plan.requests)


def test_same_seed_same_plan_byte_for_byte_and_the_nonce_changes_every_prompt() -> None:
    workload = Workload(phases=STEADY, seed=11, prefix=Prefix(groups=2, tokens=50),
                        sessions=Sessions(turns=(1, 4), think_time_s=1.0))  # fmt: skip
    assert _digest(workload) == _digest(workload)
    assert _digest(workload, "b10c") == _digest(workload, "b10c")
    first, other = build_plan(workload), build_plan(workload, "b10c")
    assert [r.input_tokens for r in first.requests] == [r.input_tokens for r in other.requests]
    for one, two in zip(first.requests, other.requests, strict=True):
        assert one.prompt.split()[:2] != two.prompt.split()[:2]  # nothing shared across runs


_DIGEST_SCRIPT = """
import hashlib
from pytest_latency.spec.model import Phase, Prefix, Sessions, Workload
from pytest_latency.workload import build_plan
steady = (Phase("steady", rate=10, duration_s=10, arrival="constant"),)
plan = build_plan(Workload(phases=steady, seed=11, prefix=Prefix(groups=2, tokens=50),
                           sessions=Sessions(turns=(1, 4), think_time_s=1.0)))
text = repr([(r.id, r.intended_s, r.input_tokens, r.prompt, r.session, r.turn)
             for r in plan.requests])
print(hashlib.sha256(text.encode()).hexdigest())
"""


@pytest.mark.slow
def test_the_plan_is_the_same_in_another_process_whatever_its_hash_seed() -> None:
    workload = Workload(phases=STEADY, seed=11, prefix=Prefix(groups=2, tokens=50),
                        sessions=Sessions(turns=(1, 4), think_time_s=1.0))  # fmt: skip
    for hash_seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": hash_seed}
        done = subprocess.run([sys.executable, "-c", _DIGEST_SCRIPT], env=env,
                              capture_output=True, text=True, check=True, timeout=120)  # fmt: skip
        assert done.stdout.strip() == _digest(workload)


def test_sessions_plan_turns_whose_input_grows_by_the_conversation_so_far() -> None:
    workload = Workload(phases=STEADY, seed=5, input_tokens=(10, 20), output_tokens=7,
                        sessions=Sessions(turns=(2, 4), think_time_s=2.0))  # fmt: skip
    plan = build_plan(workload)
    sessions: dict[int, list] = {}
    for request in plan.requests:
        assert request.session is not None
        sessions.setdefault(request.session, []).append(request)
    assert len(sessions) == 100  # phases plan session starts
    counts = {len(turns) for turns in sessions.values()}
    assert counts == {2, 3, 4}
    for turns in sessions.values():
        assert [t.turn for t in turns] == list(range(len(turns)))
        assert [t.id for t in turns] == list(range(turns[0].id, turns[0].id + len(turns)))
        for earlier, later in itertools.pairwise(turns):
            question = len(later.prompt.split())
            assert later.input_tokens == earlier.input_tokens + 7 + question
            assert later.intended_s == pytest.approx(earlier.intended_s + 2.0)
    assert session_allowance_s(workload) == 3 * (30.0 + 2.0)


def test_specs_reject_bad_prefix_and_sessions() -> None:
    with pytest.raises(SpecError, match="prefix share"):
        Prefix(groups=2, tokens=10, share=1.5)
    with pytest.raises(SpecError, match="sessions turns"):
        Sessions(turns=(3, 2))
    with pytest.raises(SpecError, match="think_time"):
        Sessions(turns=(1, 2), think_time_s=-1.0)


YAML = """\
workload:
  seed: 4
  prefix: {groups: 8, tokens: 1000, share: 80%}
  sessions: {turns: [2, 6], think_time: 2s}
  phases:
    - {name: steady, arrival: poisson, rate: 1, duration: 5s}
objectives:
  - {metric: ttft, p: 50, max: 2s}
"""


def test_yaml_spec_reads_prefix_and_sessions(tmp_path: Path) -> None:
    path = tmp_path / "chat.slo.yaml"
    path.write_text(YAML)
    workload = load_slo_file(path).workload
    assert workload.prefix == Prefix(groups=8, tokens=1000, share=0.8)
    assert workload.sessions == Sessions(turns=(2, 6), think_time_s=2.0)
    assert workload.to_json()["sessions"] == {"turns": [2, 6], "think_time_s": 2.0}


@pytest.mark.parametrize(
    ("old", "new", "line", "key", "problem"),
    [
        ("think_time: 2s", "think_time: 2s, rounds: 3", 4, "workload.sessions.rounds", "unknown"),
        ("turns: [2, 6], ", "", 4, "workload.sessions.turns", "missing"),
        ("turns: [2, 6]", "turns: [6, 2]", 4, "workload.sessions.turns", "low <= high"),
        ("share: 80%", "share: 1.5", 3, "workload.prefix.share", "share"),
        ("groups: 8", "groups: zero", 3, "workload.prefix.groups", "whole number"),
    ],
)
def test_yaml_errors_name_line_and_key(
    tmp_path: Path, old: str, new: str, line: int, key: str, problem: str
) -> None:
    path = tmp_path / "bad.slo.yaml"
    path.write_text(YAML.replace(old, new))
    with pytest.raises(SpecFileError) as caught:
        load_slo_file(path)
    assert (caught.value.line, caught.value.key) == (line, key)
    assert problem in caught.value.problem
