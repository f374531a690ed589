"""The join of client records and server durations, against a scripted known timeline.

The seed lesson's exercise: send at 0 ms, queue entry at 40 ms, queue exit at 240 ms,
first token at the client at 500 ms, final token at 2,000 ms. The server exports only
its queue time (a real OTLP/HTTP exporter, a span parented on the request's traceparent).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, ParentBased
from opentelemetry.trace import SpanKind
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from pytest_latency.analysis.attribution import attribute
from pytest_latency.driver import Target, run_plan
from pytest_latency.telemetry.hub import TelemetryHub, TelemetrySettings
from tests.helpers.run_queue import RunQueueWait
from tests.helpers.scripted_server import (
    DONE,
    Exchange,
    Script,
    ScriptedServer,
    Step,
    chat_chunk,
    plan_at,
)

QUEUE_ENTRY_S, QUEUE_EXIT_S, FIRST_TOKEN_S, LAST_TOKEN_S = 0.040, 0.240, 0.500, 2.000
SEED_TIMELINE = Script(
    steps=(
        Step(0.010, chat_chunk(role="assistant", content=""), "role"),
        Step(FIRST_TOKEN_S, chat_chunk(content="Photo"), "content"),
        Step(1.000, chat_chunk(content="synthesis"), "content"),
        Step(LAST_TOKEN_S, chat_chunk(content=".", finish="stop"), "content"),
        Step(LAST_TOKEN_S, DONE, "done"),
    )
)


@pytest.fixture
def hub() -> Iterator[TelemetryHub]:
    telemetry = TelemetryHub(TelemetrySettings(grace_s=5.0, metrics_interval_s=0))
    try:
        yield telemetry
    finally:
        telemetry.close()


def export_queue_span(exchange: Exchange, traces_url: str) -> None:
    """What a queue-instrumented server sends: one span carrying only its queue time.

    Parent-based sampling, as vLLM (``vllm/tracing/otel.py``) and SGLang
    (``srt/observability/trace.py``) get from the SDK's default: no span at all when the
    request's ``traceparent`` is not sampled. Set here, not read from the environment:
    the test host's ``OTEL_*`` variables are the client's, not the server's.
    """
    provider = TracerProvider(sampler=ParentBased(ALWAYS_ON))
    provider.add_span_processor(SimpleSpanProcessor(OTLPSpanExporter(endpoint=traces_url)))
    context = TraceContextTextMapPropagator().extract(exchange.headers)
    span = provider.get_tracer("scripted").start_span(
        "llm_request", context=context, kind=SpanKind.SERVER
    )
    span.set_attribute("gen_ai.latency.time_in_queue", QUEUE_EXIT_S - QUEUE_ENTRY_S)
    span.end()
    provider.shutdown()


@pytest.mark.slow
def test_seed_exercise_record(server: ScriptedServer, hub: TelemetryHub) -> None:
    server.route("seed", SEED_TIMELINE)
    with RunQueueWait(server.thread_id) as preempted:
        outcome = run_plan(
            plan_at([0.0], timeout_s=5.0), Target(server.url, "seed"), hub.client_spans
        )
    (exchange,) = server.exchanges
    export_queue_span(exchange, hub.receiver.traces_url)
    report = hub.join(outcome.records, expect_spans=True)
    (record,) = outcome.records
    assert report.joined == 1 and report.sources == {"otlp:vllm": 1}
    # Client numbers from the planned send time; 20 ms covers loopback and scheduling
    # noise (the driver's own tests hold it to ~1 ms), plus the time the client and
    # server threads sat preempted during the run on a busy machine.
    tolerance = 0.02 + preempted.seconds
    assert record.ttft_s == pytest.approx(0.5, abs=tolerance)
    assert record.e2e_s == pytest.approx(2.0, abs=tolerance)
    assert record.queue_wait_s == pytest.approx(0.2)  # the server's own measurement
    assert record.prefill_s is None and record.decode_s is None
    assert record.unattributed_s == pytest.approx(0.3, abs=tolerance)
    assert record.after_queue_s == pytest.approx(0.3, abs=tolerance)
    split = attribute(outcome.records)
    assert split.prefill_share is None  # never invented
    assert split.queue_share == pytest.approx(0.2 / record.ttft_s)  # queue / TTFT, exactly
    assert split.queue_share == pytest.approx(0.4, abs=2 * tolerance)
    assert split.unattributed_share == pytest.approx(1 - split.queue_share)


@pytest.mark.slow
def test_seed_exercise_joins_every_span_whatever_the_hosts_otel_sampler(
    server: ScriptedServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A CI host that samples nothing: the client's own sampler must not listen.
    monkeypatch.setenv("OTEL_TRACES_SAMPLER", "traceidratio")
    monkeypatch.setenv("OTEL_TRACES_SAMPLER_ARG", "0")
    telemetry = TelemetryHub(TelemetrySettings(grace_s=5.0, metrics_interval_s=0))
    try:
        server.route("seed", SEED_TIMELINE)
        plan = plan_at([0.0, 0.05, 0.1, 0.15, 0.2, 0.25], timeout_s=5.0)
        outcome = run_plan(plan, Target(server.url, "seed"), telemetry.client_spans)
        for exchange in server.exchanges:
            export_queue_span(exchange, telemetry.receiver.traces_url)
        report = telemetry.join(outcome.records, expect_spans=True)
    finally:
        telemetry.close()
    assert (report.requests, report.joined, report.missing) == (6, 6, 0)
    assert report.span_problem is None
    assert all(record.queue_wait_s == pytest.approx(0.2) for record in outcome.records)


@pytest.mark.slow
def test_spans_arriving_a_second_late_still_join(server: ScriptedServer, hub: TelemetryHub) -> None:
    server.route("seed", SEED_TIMELINE)
    plan = plan_at([0.0, 0.1, 0.2], timeout_s=5.0)
    outcome = run_plan(plan, Target(server.url, "seed"), hub.client_spans)
    traces_url = hub.receiver.traces_url
    late = threading.Timer(
        1.0, lambda: [export_queue_span(e, traces_url) for e in server.exchanges]
    )
    started = time.monotonic()
    late.start()
    report = hub.join(outcome.records, expect_spans=True)
    late.join()
    assert report.joined == 3 and report.missing == 0
    # It waited for the late spans, and no longer than needed (grace is 5 s).
    assert 0.9 <= time.monotonic() - started < 4.0
    assert all(record.queue_wait_s == pytest.approx(0.2) for record in outcome.records)


@pytest.mark.slow
def test_missing_server_data_keeps_nulls_and_is_counted(
    server: ScriptedServer, hub: TelemetryHub
) -> None:
    hub.settings = TelemetrySettings(grace_s=0.5, metrics_interval_s=0)
    server.route("seed", SEED_TIMELINE)
    outcome = run_plan(plan_at([0.0, 0.05], timeout_s=5.0), Target(server.url, "seed"))
    export_queue_span(server.exchanges[0], hub.receiver.traces_url)
    # A span for a trace that is not in the run: counted, ignored.
    stranger = Exchange("x", 0, 0, {"traceparent": "00-" + "ab" * 16 + "-" + "cd" * 8 + "-01"}, {})
    export_queue_span(stranger, hub.receiver.traces_url)
    report = hub.join(outcome.records, expect_spans=True)
    assert (report.requests, report.joined, report.missing) == (2, 1, 1)
    assert report.unknown_traces == 1
    unjoined = [record for record in outcome.records if record.queue_wait_s is None]
    assert len(unjoined) == 1 and unjoined[0].unattributed_s is None


@pytest.mark.slow
def test_server_timing_header_and_llamacpp_timings_join(
    server: ScriptedServer, hub: TelemetryHub
) -> None:
    timings = {"prompt_n": 12, "prompt_ms": 80.0, "predicted_n": 3, "predicted_ms": 1400.0}
    steps = (
        *SEED_TIMELINE.steps[:-2],
        Step(LAST_TOKEN_S, chat_chunk(content=".", finish="stop", timings=timings), "content"),
        Step(LAST_TOKEN_S, DONE, "done"),
    )
    server.route("llama", Script(steps=steps))
    server.route(
        "gateway",
        Script(
            steps=SEED_TIMELINE.steps, headers=(("Server-Timing", "queue;dur=200, prefill;dur=60"),)
        ),
    )
    with RunQueueWait(server.thread_id) as preempted:
        llama = run_plan(plan_at([0.0]), Target(server.url, "llama")).records[0]
        gateway = run_plan(plan_at([0.0]), Target(server.url, "gateway")).records[0]
    hub.join([llama, gateway], expect_spans=False)
    # llama.cpp: prompt_ms is processing after the slot was taken: prefill, no queue wait.
    assert (llama.queue_wait_s, llama.prefill_s, llama.decode_s) == (None, 0.08, 1.4)
    assert llama.server_source == "llamacpp:timings"
    assert llama.unattributed_s == pytest.approx(0.5 - 0.08, abs=0.02 + preempted.seconds)
    assert (gateway.queue_wait_s, gateway.prefill_s) == (pytest.approx(0.2), pytest.approx(0.06))
    assert gateway.server_source == "server-timing"
