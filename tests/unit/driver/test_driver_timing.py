"""Measured instants against the truth, request shapes, connection reuse, warm-up.

Truth = the ``perf_counter_ns`` instants at which the scripted server wrote each chunk
(same process, same monotonic clock), mapped to the run's time zero. The driver's
numbers may only be later than the truth by loopback delivery plus event-loop latency
on both sides: a few hundred microseconds on an idle machine. We allow 5 ms (the
brief's bound), which still catches any real mistake (taking the role-only chunk at
50 ms, a relative-sleep drift, timing after JSON parsing of a whole stream...), and a
looser 25 ms against the *nominal* script offsets, which additionally absorb the
server's own sleep jitter. Each bound is widened by the time the client and server
threads were preempted during the run (their run-queue wait, run_queue.py): on a busy
machine a read can be taken tens of milliseconds late for that reason alone, and only
delay the scheduler does not explain counts against the driver.
"""

from __future__ import annotations

import itertools

import anyio
import httpx
import pytest

from pytest_latency.driver import Run, Status, Target, drive, run_plan
from tests.helpers.run_queue import RunQueueWait
from tests.helpers.scripted_server import (
    DONE,
    PROMPT,
    Script,
    ScriptedServer,
    Step,
    chat_chunk,
    plan_at,
    text_chunk,
    usage_chunk,
)

TRUTH_TOLERANCE_S = 0.005
NOMINAL_TOLERANCE_S = 0.025
CONTENT_AT = (0.200, 0.240, 0.280, 0.320, 0.360)

TIMELINE = Script(
    steps=(
        Step(0.050, chat_chunk(role="assistant"), "role"),
        Step(0.100, chat_chunk(""), "empty"),
        *(Step(at, chat_chunk(f"tok{i} "), "content") for i, at in enumerate(CONTENT_AT)),
        Step(0.380, chat_chunk(finish="length"), "finish"),
        Step(0.390, usage_chunk(12), "usage"),
        Step(0.400, DONE, "done"),
    )
)


def drive_run(plan: object, target: Target) -> Run:
    run = Run(plan, target)  # type: ignore[arg-type]
    anyio.run(run.drive)
    return run


def timeline_errors(server: ScriptedServer, run: Run, preempted_s: float) -> dict[str, list[float]]:
    """measured - truth for every TTFT, ITL gap and e2e of the run (seconds)."""
    nominal = NOMINAL_TOLERANCE_S + preempted_s
    exchanges = server.by_trace()
    errors: dict[str, list[float]] = {"ttft": [], "itl": [], "e2e": []}
    for record in run.records:
        assert record.status is Status.OK, record.error
        exchange = exchanges[record.trace_id]
        truth = [(ns - run.started_ns) / 1e9 for ns in exchange.instants("content")]
        done_s = (exchange.instants("done")[0] - run.started_ns) / 1e9
        assert record.first_token_s is not None and record.end_s is not None
        # the role-only (50 ms) and empty (100 ms) chunks are not the first token
        errors["ttft"].append(record.first_token_s - truth[0])
        errors["e2e"].append(record.end_s - done_s)
        gaps = [b - a for a, b in itertools.pairwise(truth)]
        assert len(record.itl_s) == len(gaps) == 4
        errors["itl"] += [got - want for got, want in zip(record.itl_s, gaps, strict=True)]
        assert record.ttft_s == pytest.approx(0.200, abs=nominal)
        assert record.e2e_s == pytest.approx(0.400, abs=nominal)
        assert record.itl_s == pytest.approx([0.04] * 4, abs=nominal)
        assert record.output_tokens == 12 and record.output_tokens_source == "usage"
        lag = record.schedule_lag_s
        assert lag is not None and -0.0005 < lag < 0.02 + preempted_s
    return errors


def test_ttft_itl_e2e_match_the_server_timeline(server: ScriptedServer) -> None:
    server.route("timeline", TIMELINE)
    with RunQueueWait(server.thread_id) as preempted:
        run = drive_run(plan_at([0.0, 0.15, 0.6]), Target(server.url, "timeline"))
    errors = timeline_errors(server, run, preempted.seconds)
    worst = {name: max(abs(error) for error in values) for name, values in errors.items()}
    shown = ", ".join(f"{name} {error * 1e3:.2f}ms" for name, error in worst.items())
    print(f"\nworst |measured - truth|: {shown}; preempted {preempted.seconds * 1e3:.1f}ms")
    assert max(worst.values()) < TRUTH_TOLERANCE_S + preempted.seconds, shown
    # receipt can never precede the write (allowing clock-read jitter)
    assert min(errors["ttft"] + errors["e2e"]) > -0.0005, errors


def test_request_bodies_headers_and_trace_ids(server: ScriptedServer) -> None:
    server.route("shape", Script(steps=(Step(0.0, chat_chunk("x")), Step(0.0, DONE))))
    target = Target(
        server.url,
        "shape",
        headers={"authorization": "Bearer t0ps3cret"},
        extra_body={"min_tokens": 16, "ignore_eos": True},
    )
    result = run_plan(plan_at([0.0]), target)
    (record,) = result.records
    (exchange,) = server.exchanges
    assert exchange.body == {
        "model": "shape",
        "messages": [{"role": "user", "content": PROMPT}],
        "max_tokens": 16,
        "stream": True,
        "stream_options": {"include_usage": True},
        "min_tokens": 16,
        "ignore_eos": True,
    }
    assert exchange.headers["authorization"] == "Bearer t0ps3cret"
    assert exchange.headers["traceparent"] == exchange.headers["traceparent"].lower()
    assert exchange.trace_id == record.trace_id and len(record.trace_id) == 32
    assert record.status is Status.OK and record.output_tokens_source == "chunks"
    assert result.elapsed_s > 0 and result.started_at_unix > 1e9 and result.started_ns > 0
    assert "t0ps3cret" not in repr(record) and PROMPT not in repr(record)


def test_completions_api_counts_text_chunks(server: ScriptedServer) -> None:
    steps = [Step(0.02, text_chunk(""), "empty")]  # empty text is not a token
    steps += [Step(0.05 + 0.02 * i, text_chunk(f"w{i}"), "content") for i in range(6)]
    server.route("comp", Script(steps=(*steps, Step(0.2, DONE, "done"))))
    run = drive_run(plan_at([0.0]), Target(server.url, "comp", api="completions"))
    (record,) = run.records
    (exchange,) = server.exchanges
    assert exchange.body["prompt"] == PROMPT and "messages" not in exchange.body
    assert exchange.body["stream"] is True and exchange.body["max_tokens"] == 16
    assert record.status is Status.OK
    assert record.output_tokens == 6 and record.output_tokens_source == "chunks"
    first = (exchange.instants("content")[0] - run.started_ns) / 1e9
    assert record.first_token_s == pytest.approx(first, abs=TRUTH_TOLERANCE_S)
    assert len(record.itl_s) == 5


def test_sse_split_across_tcp_writes_crlf_comments(server: ScriptedServer) -> None:
    first = chat_chunk("a").replace(b"\n", b"\r\n")
    steps = (
        Step(0.00, b": keep-alive comment\r\n\r\n"),
        Step(0.01, chat_chunk(role="assistant")),
        Step(0.02, first[:17]),  # the first content event, cut inside its JSON ...
        Step(0.04, first[17:-3]),  # ... and between the \r and \n of its data line
        Step(0.06, first[-3:], "first-complete"),  # "\n\r\n": the blank line ends it
        Step(0.08, b'data: {"choices": [{"delta":\ndata:  {"content": "b"}}]}\n'),  # 2 lines
        Step(0.10, b": comment inside\n\n", "second-complete"),
        Step(0.12, chat_chunk("c") + b"data: [DO", "third"),
        Step(0.14, b"NE]\n\n"),
    )
    server.route("split", Script(steps=steps))
    with RunQueueWait(server.thread_id) as preempted:
        run = drive_run(plan_at([0.0]), Target(server.url, "split"))
    tolerance = TRUTH_TOLERANCE_S + preempted.seconds
    (record,) = run.records
    (exchange,) = server.exchanges
    assert record.status is Status.OK, record.error
    assert record.output_tokens == 3 and record.output_tokens_source == "chunks"

    def at(label: str) -> float:
        return (exchange.instants(label)[0] - run.started_ns) / 1e9

    # an event counts when its blank line arrives, not when its first bytes do
    assert record.first_token_s == pytest.approx(at("first-complete"), abs=tolerance)
    second, third = at("second-complete"), at("third")
    assert record.itl_s == pytest.approx(
        [second - at("first-complete"), third - second], abs=tolerance
    )


def test_warm_connections_are_reused_and_warmup_not_recorded(server: ScriptedServer) -> None:
    script = Script(steps=(Step(0.01, chat_chunk("x")), Step(0.02, DONE)))
    server.route("reuse", script)
    times = [0.0, 0.1, 0.2, 0.3]
    run = drive_run(plan_at(times, warmup=2), Target(server.url, "reuse"))
    assert [record.id for record in run.records] == [0, 1, 2, 3]
    assert all(record.status is Status.OK for record in run.records)
    assert server.gets == len(times)  # one warm-up ping per connection, at most 8
    warm = [e for e in server.exchanges if e.arrival_ns < run.started_ns]
    assert len(warm) == 2 and len(server.exchanges) == 2 + len(times)
    # bodies are read to the end after [DONE], so every request rode a warm connection
    assert server.connections == len(times)


def test_environment_proxies_are_ignored(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name in ("HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.setenv(name, "http://127.0.0.1:9")  # discard port: would fail
    server.route("proxy", Script(steps=(Step(0.0, chat_chunk("x")), Step(0.0, DONE))))
    (record,) = run_plan(plan_at([0.0]), Target(server.url, "proxy")).records
    assert record.status is Status.OK, record.error


def test_callers_client_is_used_and_left_open(server: ScriptedServer) -> None:
    server.route("own", Script(steps=(Step(0.0, chat_chunk("x")), Step(0.0, DONE))))
    plan = plan_at([0.0, 0.05])

    async def main() -> tuple[list[Status], bool]:
        async with httpx.AsyncClient(trust_env=False) as client:
            result = await drive(plan, Target(server.url, "own"), client=client)
            return [record.status for record in result.records], client.is_closed

    statuses, closed = anyio.run(main)
    assert statuses == [Status.OK, Status.OK] and not closed
    run = drive_run(plan, Target(server.url, "own"))
    with pytest.raises(RuntimeError, match="once"):
        anyio.run(run.drive)
    with pytest.raises(ValueError, match="base_url"):
        Target("127.0.0.1:8000", "m")
