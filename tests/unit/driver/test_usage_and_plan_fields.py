"""The server's usage counts and the plan's session fields reach every record."""

from __future__ import annotations

import dataclasses
import json

import pytest

from pytest_latency.driver import Target, run_plan
from pytest_latency.driver.sse import StreamState
from pytest_latency.records import Status, record_from_dict, record_to_dict
from tests.helpers.scripted_server import DONE, Script, ScriptedServer, Step, chat_chunk, plan_at
from tests.helpers.scripted_server import sse as sse_event


def usage(body: dict[str, object]) -> bytes:
    return json.dumps({"choices": [], "usage": body}).encode()


def test_usage_prompt_and_cached_tokens_are_read() -> None:
    state = StreamState([])
    state.feed(
        usage(
            {
                "prompt_tokens": 1200,
                "completion_tokens": 5,
                "prompt_tokens_details": {"cached_tokens": 1024},
            }
        ),
        0,
    )
    assert (state.prompt_tokens, state.cached_tokens, state.usage_tokens) == (1200, 1024, 5)


@pytest.mark.parametrize(
    "details",
    [None, {}, {"cached_tokens": None}, {"cached_tokens": "12"}, ["odd"], {"cached_tokens": True}],
)
def test_odd_or_missing_cache_details_leave_cached_tokens_unknown(details: object) -> None:
    state = StreamState([])
    state.feed(usage({"prompt_tokens": 9, "prompt_tokens_details": details}), 0)
    assert state.prompt_tokens == 9 and state.cached_tokens is None  # and no stream error


def test_records_carry_usage_and_plan_fields_through_the_codec(server: ScriptedServer) -> None:
    tail = sse_event(
        {
            "choices": [],
            "usage": {
                "prompt_tokens": 40,
                "completion_tokens": 1,
                "prompt_tokens_details": {"cached_tokens": 32},
            },
        }
    )
    server.route(
        "cached", Script(steps=(Step(0.0, chat_chunk("Hi", finish="stop") + tail + DONE),))
    )
    plan = plan_at([0.0, 0.01])
    first, second = plan.requests
    plan = dataclasses.replace(
        plan,
        requests=(
            dataclasses.replace(first, session=3, turn=1, input_tokens_source="tokenizer"),
            second,
        ),
    )
    records = run_plan(plan, Target(server.url, "cached")).records
    assert [record.status for record in records] == [Status.OK, Status.OK]
    assert [(r.prompt_tokens, r.cached_tokens) for r in records] == [(40, 32), (40, 32)]
    assert [(r.session, r.turn, r.input_tokens_source) for r in records] == [
        (3, 1, "tokenizer"),
        (None, None, "estimate"),
    ]
    for record in records:
        again = record_from_dict(json.loads(json.dumps(record_to_dict(record))))
        assert (again.session, again.turn, again.input_tokens_source) == (
            record.session,
            record.turn,
            record.input_tokens_source,
        )
        assert (again.prompt_tokens, again.cached_tokens) == (40, 32)


def test_an_older_row_without_the_fields_reads_as_an_estimate_with_nulls() -> None:
    row = {"id": 1, "phase": "steady", "intended_s": 0.0, "input_tokens": 5, "status": "ok"}
    record = record_from_dict(row)
    assert record.input_tokens_source == "estimate"
    assert (record.prompt_tokens, record.cached_tokens, record.session, record.turn) == (
        (None,) * 4
    )
    with pytest.raises(ValueError, match="input_tokens_source must be tokenizer or estimate"):
        record_from_dict({**row, "input_tokens_source": "guess"})
    with pytest.raises(ValueError, match="session must be an integer"):
        record_from_dict({**row, "session": "a"})
