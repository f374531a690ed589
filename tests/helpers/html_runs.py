"""Runs for the HTML report's tests: the lesson's request, and simulated steady+burst load.

The simulated run plays Poisson arrivals through the reference server's engine in
virtual time (no sockets), so its queue waits and token times are the engine's own,
then adds a known client overhead (2 ms) and a few failures with hostile error texts.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from pytest_latency.analysis.result import LatencyResult
from pytest_latency.records import RequestRecord, Status
from pytest_latency.servers.base import ServerInfo
from pytest_latency.sim.config import SimConfig
from pytest_latency.sim.engine import State
from pytest_latency.sim.virtual import Arrival, SimResult, simulate
from pytest_latency.spec.model import Objective, Phase, Workload

HOSTILE = "<script>alert(1)</script>"
CLIENT_OVERHEAD_S = 0.002


def lesson_record(identifier: int = 0, phase: str = "steady") -> RequestRecord:
    """The lesson's exercise: send 0, queue 40 -> 240 ms, first token 500 ms, end 2,000 ms."""
    return RequestRecord(
        id=identifier,
        phase=phase,
        intended_s=0.0,
        input_tokens=300,
        max_tokens=200,
        trace_id="4bf92f3577b34da6a3ce929d0e0e4736",
        sent_s=0.0,
        first_token_s=0.5,
        end_s=2.0,
        itl_s=np.full(199, 1.5 / 199),
        status=Status.OK,
        http_status=200,
        output_tokens=200,
        queue_wait_s=0.2,
        server_source="otlp:vllm",
    )


def simulated_records(
    phases: Sequence[Phase], seed: int = 7, failures_every: int = 97, phase_names: bool = True
) -> list[RequestRecord]:
    """Poisson arrivals per phase through the engine; every ``failures_every``-th fails."""
    rng = np.random.default_rng(seed)
    arrivals: list[tuple[str, Arrival]] = []
    start = 0.0
    for phase in phases:
        at = start + rng.exponential(1.0 / phase.rate)
        while at < start + phase.duration_s:
            tokens = int(rng.integers(200, 401))
            arrivals.append((phase.name, Arrival(at, tokens, 64)))
            at += rng.exponential(1.0 / phase.rate)
        start += phase.duration_s
    results = simulate(SimConfig(), [arrival for _, arrival in arrivals])
    records = []
    for index, ((name, arrival), result) in enumerate(zip(arrivals, results, strict=True)):
        record = _record(index, name if phase_names else "steady", arrival, result)
        if failures_every and index % failures_every == failures_every - 1:
            record.status, record.http_status = Status.HTTP_ERROR, 500
            record.error = f"HTTP 500: {HOSTILE} upstream <b>failed</b>"
            record.first_token_s, record.itl_s = None, np.empty(0)
        records.append(record)
    return records


def _record(index: int, phase: str, arrival: Arrival, result: SimResult) -> RequestRecord:
    sent = arrival.at_s + 0.0004
    record = RequestRecord(
        id=index,
        phase=phase,
        intended_s=arrival.at_s,
        input_tokens=arrival.prompt_tokens,
        max_tokens=arrival.output_tokens,
        trace_id=f"{index + 1:032x}",
        sent_s=sent,
        output_tokens_source="usage",
    )
    ttft, e2e = result.ttft_s, result.e2e_s
    if result.outcome is State.OK and ttft is not None and e2e is not None:
        record.status, record.http_status = Status.OK, 200
        record.first_token_s = sent + ttft + CLIENT_OVERHEAD_S
        record.end_s = sent + e2e + CLIENT_OVERHEAD_S
        record.itl_s = np.asarray(result.itl_s, dtype=np.float64)
        record.output_tokens = arrival.output_tokens
        record.queue_wait_s = result.queue_wait_s
        record.prefill_s = max(ttft - (record.queue_wait_s or 0.0) - 0.001, 0.0)
        record.server_source = "otlp:vllm"
    else:
        record.status, record.http_status, record.error = Status.REJECTED, 503, "queue full"
        record.end_s = sent + 0.001
    return record


def make_result(
    records: list[RequestRecord],
    phases: Sequence[Phase],
    objectives: Sequence[Objective] = (),
    *,
    test: str = "tests/test_serving.py::test_chat",
    model: str = "tiny",
    trace_url: str | None = "https://traces.example/trace/{trace_id}",
    baseline: list[list[RequestRecord]] | None = None,
) -> LatencyResult:
    """A finished run with ``objectives`` decided on ``records``."""
    result = LatencyResult(
        test=test,
        server=ServerInfo(kind="url", url="http://127.0.0.1:8000", model=model),
        workload=Workload(phases=tuple(phases), output_tokens=64),
        records=records,
        started_at_unix=1_760_000_000.0,
        elapsed_s=sum(phase.duration_s for phase in phases),
        trace_url_template=trace_url,
        baseline_runs=baseline,
    )
    if objectives:
        result.evaluate(objectives)
    return result
