"""Multi-turn sessions on the embedded server: history, pacing, failures, workers."""

from __future__ import annotations

import dataclasses
import itertools

import pytest

from pytest_latency.driver import Target, run_plan
from pytest_latency.driver.workers import partition
from pytest_latency.records import RequestRecord, Status
from pytest_latency.sim import SimConfig, SimServer
from pytest_latency.spec.model import Phase, Sessions, Workload
from pytest_latency.workload import build_plan

FAST = SimConfig(decode_base_s=0.002, decode_per_seq_s=0.0, prefill_base_s=0.0,
                 prefill_per_token_s=0.0)  # fmt: skip


def _workload(turns: tuple[int, int], max_tokens: int = 5, rate: float = 10) -> Workload:
    return Workload(
        phases=(Phase("chat", rate=rate, duration_s=0.5, arrival="constant"),),
        seed=2,
        input_tokens=(10, 10),
        output_tokens=max_tokens,
        timeout_s=10.0,
        sessions=Sessions(turns=turns, think_time_s=0.05),
    )


def _by_session(records: list[RequestRecord]) -> dict[int, list[RequestRecord]]:
    sessions: dict[int, list[RequestRecord]] = {}
    for record in sorted(records, key=lambda record: (record.session or 0, record.turn or 0)):
        assert record.session is not None
        sessions.setdefault(record.session, []).append(record)
    return sessions


@pytest.mark.slow
def test_turns_carry_the_conversation_and_follow_the_answer_after_the_think_time() -> None:
    plan = build_plan(_workload(turns=(3, 3)))
    with SimServer(FAST) as server:
        result = run_plan(plan, Target(server.url, "sim-tiny"))
    planned = {request.id: request for request in plan.requests}
    sessions = _by_session(result.records)
    assert len(sessions) == 5 and all(len(turns) == 3 for turns in sessions.values())
    for turns in sessions.values():
        assert [record.turn for record in turns] == [0, 1, 2]
        for record in turns:
            assert record.status is Status.OK, record.error
            # The server counted what the plan said: questions and the answers received.
            assert record.prompt_tokens == record.input_tokens == planned[record.id].input_tokens
        assert [record.input_tokens for record in turns] == [10, 25, 40]  # grows as planned
        for earlier, later in itertools.pairwise(turns):
            assert earlier.end_s is not None and later.sent_s is not None
            assert later.intended_s == pytest.approx(earlier.end_s + 0.05, abs=1e-6)
            assert later.sent_s >= later.intended_s
        # Turn 2 starts with turn 1's whole prompt (25 words): its one full block is cached.
        assert [record.cached_tokens for record in turns] == [0, 0, 16]


@pytest.mark.slow
def test_a_failed_turn_ends_its_session_with_cancelled_records_saying_so() -> None:
    plan = build_plan(_workload(turns=(4, 4)))  # prompts 10, 25, 40, 55 tokens; 5 output
    with SimServer(dataclasses.replace(FAST, max_model_len=40)) as server:
        result = run_plan(plan, Target(server.url, "sim-tiny"))
    assert len(result.records) == len(plan.requests)  # one record per offered request
    for turns in _by_session(result.records).values():
        assert [record.status for record in turns] == [
            Status.OK, Status.OK, Status.HTTP_ERROR, Status.CANCELLED,
        ]  # fmt: skip
        last = turns[3]
        assert last.sent_s is None and last.error is not None
        assert last.error.startswith("session ended: turn 2 ended http_error")


def test_workers_keep_each_session_whole() -> None:
    plan = build_plan(_workload(turns=(2, 5), rate=40))
    parts = partition(plan, 3)
    owners: dict[int, int] = {}
    for index, part in enumerate(parts):
        for request in part.requests:
            assert request.session is not None
            assert owners.setdefault(request.session, index) == index
    assert sorted(r.id for part in parts for r in part.requests) == [r.id for r in plan.requests]
    assert len({len(part.requests) for part in parts}) > 0 and len(parts) == 3


@pytest.mark.slow
def test_sessions_run_whole_across_worker_processes() -> None:
    plan = build_plan(_workload(turns=(2, 3)))
    with SimServer(FAST) as server:
        result = run_plan(plan, Target(server.url, "sim-tiny"), workers=2)
    assert len(result.records) == len(plan.requests)
    for turns in _by_session(result.records).values():
        assert all(record.status is Status.OK for record in turns), [r.error for r in turns]
        for earlier, later in itertools.pairwise(turns):
            assert earlier.end_s is not None
            assert later.intended_s == pytest.approx(earlier.end_s + 0.05, abs=1e-6)
            assert later.prompt_tokens == later.input_tokens
