"""Diagnosis rules on synthetic runs of known shape: each fires on its shape, stays silent
on a matched counterexample, and never fires without the data it needs."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest

from pytest_latency.analysis.diagnosis import (
    RULES,
    Finding,
    diagnose,
    findings_to_json,
    format_findings,
)
from pytest_latency.records import RequestRecord, Status
from pytest_latency.spec.model import Phase, Workload
from pytest_latency.telemetry.prometheus import MetricsSeries


def record(
    n: int,
    phase: str,
    t: float,
    *,
    ttft: float,
    itl: float | list[float] = 0.03,
    gaps: int = 49,
    queue: float | None = None,
    prefill: float | None = None,
    decode: float | None = None,
    input_tokens: int = 300,
    output_tokens: int | None = None,
    status: Status = Status.OK,
) -> RequestRecord:
    itl_s = list(itl) if isinstance(itl, list) else [itl] * gaps
    first = t + ttft
    return RequestRecord(
        id=n,
        phase=phase,
        intended_s=t,
        input_tokens=input_tokens,
        sent_s=t + 0.001,
        first_token_s=first,
        end_s=first + sum(itl_s),
        itl_s=itl_s,
        status=status,
        output_tokens=len(itl_s) + 1 if output_tokens is None else output_tokens,
        queue_wait_s=queue,
        prefill_s=prefill,
        decode_s=decode,
    )


def workload(*phases: tuple[str, float, float], warmup: int = 0, cap: int = 200) -> Workload:
    return Workload(
        phases=tuple(Phase(name, rate, duration) for name, rate, duration in phases),
        warmup_requests=warmup,
        output_tokens=cap,
    )


def rules(findings: list[Finding]) -> list[str]:
    return [finding.rule for finding in findings]


def strip_server(records: list[RequestRecord]) -> list[RequestRecord]:
    return [
        dataclasses.replace(r, queue_wait_s=None, prefill_s=None, decode_s=None) for r in records
    ]


# --- the seed's traffic spike ------------------------------------------------------------

SPIKE = workload(("steady", 5, 20), ("burst", 25, 5))


def spike(
    *,
    burst_itl: float = 0.031,
    burst_queue_top: float = 2.8,
    per_phase: tuple[int, int] = (100, 125),
) -> list[RequestRecord]:
    """Steady 5 req/s (queue p95 0.1 s, ITL 30 ms), burst 25 req/s (queue p95 2.8 s, ITL 31 ms).

    200-token outputs, inputs 200-400 tokens, prefill 0.5 s flat, 0.1 s unattributed; the
    server reports queue wait, prefill and decode.
    """
    out: list[RequestRecord] = []
    for i in range(per_phase[0]):
        queue = 0.1 if i % 10 == 0 else 0.02  # p95 exactly 0.1 s
        out.append(_spike_request(len(out), "steady", i * 0.2, queue, 0.030, i))
    for i in range(per_phase[1]):
        queue = 0.2 + (burst_queue_top - 0.2) * min(1.0, i / 100)  # builds up, p95 = top
        out.append(_spike_request(len(out), "burst", 20 + i * 0.04, queue, burst_itl, i))
    return out


def _spike_request(n: int, phase: str, t: float, queue: float, itl: float, i: int) -> RequestRecord:
    gap = itl + (i % 5 - 2) * 2e-4  # symmetric jitter: the phase median stays at ``itl``
    return record(
        n, phase, t, ttft=queue + 0.5 + 0.1, itl=gap, gaps=199, queue=queue, prefill=0.5,
        decode=199 * gap, input_tokens=200 + (i * 37) % 201, output_tokens=200,
    )  # fmt: skip


def test_spike_fires_queueing_alone_and_names_the_seed_numbers() -> None:
    findings = diagnose(spike(), SPIKE)
    assert rules(findings) == ["queueing"]
    finding = findings[0]
    assert "ready capacity or scheduling delay before generation" in finding.hypothesis
    for number in ("2.8s", "100ms", "burst", "steady", "31ms", "30ms", "server-reported"):
        assert number in finding.evidence, number
    assert "ready capacity" in finding.check and "successful throughput" in finding.check
    assert 0.0 < finding.strength <= 1.0


def test_spike_without_server_data_uses_the_labelled_client_proxy() -> None:
    findings = diagnose(strip_server(spike()), SPIKE)
    assert rules(findings) == ["queueing"]
    evidence = findings[0].evidence
    assert evidence.startswith("queue wait not reported; TTFT rose while ITL stayed flat")
    assert "server-reported" not in evidence and "p95 TTFT" in evidence
    assert findings[0].strength < diagnose(spike(), SPIKE)[0].strength


def _gauges(steady: float, burst: float) -> MetricsSeries:
    t_s = [float(t) for t in range(25)]
    waiting: list[float | None] = [steady if t < 20 else burst for t in t_s]
    return MetricsSeries("vllm", t_s, waiting, [1.0] * 25, {}, scrapes=25, failures=0,
                         last_error=None)  # fmt: skip


def test_waiting_gauge_corroborates_the_proxy() -> None:
    records = strip_server(spike())
    bare = diagnose(records, SPIKE)[0]
    corroborated = diagnose(records, SPIKE, server_metrics=_gauges(0, 40))[0]
    assert corroborated.rule == "queueing"
    assert "waiting gauge max 40 in burst vs 0 in steady" in corroborated.evidence
    assert corroborated.strength > bare.strength


def test_waiting_gauge_without_a_queue_is_named_as_a_counterexample() -> None:
    finding = diagnose(strip_server(spike()), SPIKE, server_metrics=_gauges(0, 0))[0]
    assert finding.rule == "queueing"
    assert "no queue seen" in finding.evidence
    assert finding.strength < diagnose(strip_server(spike()), SPIKE)[0].strength


@pytest.mark.parametrize(
    "records",
    [
        pytest.param(spike(burst_queue_top=0.1), id="queue-flat"),
        pytest.param(spike(burst_itl=0.045), id="itl-rose-too"),
        pytest.param(spike(per_phase=(15, 15)), id="too-few-per-phase"),
        pytest.param(spike()[:100], id="one-phase-only"),
    ],
)
def test_queueing_stays_silent_without_its_evidence(records: list[RequestRecord]) -> None:
    assert "queueing" not in rules(diagnose(records, SPIKE))


def test_server_queue_wait_overrules_the_client_proxy() -> None:
    # TTFT rises in the burst, but the server says requests did not wait: not queueing.
    records = [
        dataclasses.replace(r, queue_wait_s=0.02) if r.phase == "burst" else r for r in spike()
    ]
    assert "queueing" not in rules(diagnose(records, SPIKE))


def test_proxy_is_silent_when_the_input_mix_changed() -> None:
    records = [
        dataclasses.replace(r, input_tokens=r.input_tokens * 4) if r.phase == "burst" else r
        for r in strip_server(spike())
    ]
    assert "queueing" not in rules(diagnose(records, SPIKE))


# --- cold start ---------------------------------------------------------------------------

IDLE = workload(("trickle", 1, 70))


def idle_run(
    *, resumed_ttft: float, before: int = 40, first_ttft: float = 0.3
) -> list[RequestRecord]:
    """1 req/s, then 12 s with nothing in flight, then traffic resumes."""
    out = [record(0, "trickle", 0.0, ttft=first_ttft, gaps=10)]
    out += [record(i, "trickle", float(i), ttft=0.3, gaps=10) for i in range(1, before)]
    resume = before - 1 + 12.0
    out.append(record(before, "trickle", resume, ttft=resumed_ttft, gaps=10))
    out += [record(before + i, "trickle", resume + i, ttft=0.3, gaps=10) for i in range(1, 10)]
    return out


def test_cold_start_fires_after_an_idle_gap() -> None:
    findings = [f for f in diagnose(idle_run(resumed_ttft=3.0), IDLE) if f.rule == "cold_start"]
    assert len(findings) == 1
    evidence = findings[0].evidence
    assert "idle gaps up to" in evidence and "3s" in evidence and "300ms" in evidence
    assert "warm capacity" in findings[0].check and "idle spend" in findings[0].check


@pytest.mark.parametrize(
    "records",
    [
        pytest.param(idle_run(resumed_ttft=0.3), id="resumed-fast"),
        pytest.param(idle_run(resumed_ttft=3.0, before=5), id="too-few-others"),
    ],
)
def test_cold_start_silent_without_its_evidence(records: list[RequestRecord]) -> None:
    assert "cold_start" not in rules(diagnose(records, IDLE))


def test_slow_first_request_is_cold_only_without_warmup() -> None:
    records = idle_run(resumed_ttft=0.3, first_ttft=2.0)
    found = [f for f in diagnose(records, IDLE) if f.rule == "cold_start"]
    assert len(found) == 1 and "first request" in found[0].evidence
    warmed = workload(("trickle", 1, 70), warmup=2)
    assert "cold_start" not in rules(diagnose(records, warmed))


# --- long context -------------------------------------------------------------------------

CONTEXT = workload(("steady", 2, 30))


def context_run(
    n: int = 60, *, low: int = 100, high: int = 4000, related: bool = True
) -> list[RequestRecord]:
    rng = np.random.default_rng(3)
    out: list[RequestRecord] = []
    for i in range(n):
        tokens = low + (high - low) * i // max(1, n - 1)
        prefill = 0.05 + tokens * 1e-4 if related else float(rng.uniform(0.05, 0.45))
        out.append(record(i, "steady", i * 0.5, ttft=0.01 + prefill + 0.02, gaps=10,
                          queue=0.01, prefill=prefill, input_tokens=tokens))  # fmt: skip
    return out


def test_long_context_fires_on_server_prefill() -> None:
    findings = [f for f in diagnose(context_run(), CONTEXT) if f.rule == "long_context"]
    assert len(findings) == 1
    assert findings[0].evidence.startswith("server prefill median")
    assert "rho 1.00" in findings[0].evidence and "n=60" in findings[0].evidence
    assert "irrelevant context" in findings[0].check


def test_long_context_without_server_data_labels_the_client_ttft() -> None:
    findings = [f for f in diagnose(strip_server(context_run()), CONTEXT)]
    found = [f for f in findings if f.rule == "long_context"]
    assert len(found) == 1 and found[0].evidence.startswith("client TTFT")
    assert found[0].strength < diagnose(context_run(), CONTEXT)[0].strength


@pytest.mark.parametrize(
    "records",
    [
        pytest.param(context_run(related=False), id="prefill-unrelated"),
        pytest.param(context_run(low=300, high=400), id="narrow-input-spread"),
        pytest.param(context_run(n=25), id="too-few"),
    ],
)
def test_long_context_silent_without_its_evidence(records: list[RequestRecord]) -> None:
    assert "long_context" not in rules(diagnose(records, CONTEXT))


# --- batching -----------------------------------------------------------------------------

BATCH = workload(("quiet", 1, 120), ("busy", 20, 10))


def batch_run(*, busy_itl: float = 0.04, quiet: int = 120) -> list[RequestRecord]:
    """Quiet: 1 req/s, 1 s decodes (about 1 in flight); busy: 20 req/s, about 40 in flight."""
    out = [
        record(i, "quiet", float(i), ttft=0.2, itl=0.02 + (i % 3 - 1) * 1e-4) for i in range(quiet)
    ]
    out += [
        record(quiet + i, "busy", quiet + i * 0.05, ttft=0.2, itl=busy_itl + (i % 3 - 1) * 1e-4)
        for i in range(200)
    ]
    return out


def test_batching_fires_when_itl_grows_with_concurrency() -> None:
    findings = diagnose(batch_run(), BATCH)
    assert rules(findings) == ["batching"]
    evidence = findings[0].evidence
    assert "busiest quarter" in evidence and "40ms" in evidence and "20ms" in evidence
    assert "batching" in findings[0].check and "per-user latency" in findings[0].check


@pytest.mark.parametrize(
    "records",
    [
        pytest.param(batch_run(busy_itl=0.02), id="itl-flat"),
        pytest.param(batch_run()[:25], id="too-few"),
    ],
)
def test_batching_silent_without_its_evidence(records: list[RequestRecord]) -> None:
    assert "batching" not in rules(diagnose(records, BATCH))


# --- long outputs -------------------------------------------------------------------------

OUTPUTS = workload(("steady", 1, 30), cap=512)


def output_run(tokens: int, n: int = 30) -> list[RequestRecord]:
    return [record(i, "steady", i * 1.0, ttft=0.3, gaps=tokens - 1) for i in range(n)]


def test_long_outputs_fire_when_generation_dominates() -> None:
    findings = diagnose(output_run(512), OUTPUTS)
    found = [f for f in findings if f.rule == "long_outputs"]
    assert len(found) == 1
    assert "512 tokens" in found[0].evidence and "98%" in found[0].evidence
    assert "ignore_eos" in found[0].evidence  # the cap, not the model, set their length
    assert "output limit" in found[0].check and "task success" in found[0].check


@pytest.mark.parametrize(
    "records",
    [
        pytest.param(output_run(200), id="short-outputs"),
        pytest.param(output_run(512, n=10), id="too-few"),
    ],
)
def test_long_outputs_silent_without_their_evidence(records: list[RequestRecord]) -> None:
    assert "long_outputs" not in rules(diagnose(records, OUTPUTS))


# --- delivery -----------------------------------------------------------------------------


def delivery_run(client_extra: float, *, decode: bool = True, n: int = 30) -> list[RequestRecord]:
    """Server: queue 0.05 + prefill 0.15 + decode 0.5 = 0.7 s; the client sees more."""
    out: list[RequestRecord] = []
    for i in range(n):
        r = record(i, "steady", float(i), ttft=0.2 + client_extra / 2, itl=0.5 / 49, queue=0.05,
                   prefill=0.15, decode=0.5 if decode else None)  # fmt: skip
        out.append(dataclasses.replace(r, end_s=(r.end_s or 0.0) + client_extra / 2))
    return out


def test_delivery_fires_when_the_client_is_slow_and_the_server_fast() -> None:
    found = [f for f in diagnose(delivery_run(2.0), OUTPUTS) if f.rule == "delivery"]
    assert len(found) == 1
    assert "outside the server-reported" in found[0].evidence and "700ms" in found[0].evidence
    assert "buffering" in found[0].check


@pytest.mark.parametrize(
    "records",
    [
        pytest.param(delivery_run(0.05), id="client-matches-server"),
        pytest.param(delivery_run(2.0, decode=False), id="decode-not-reported"),
        pytest.param(strip_server(delivery_run(2.0)), id="no-server-data"),
        pytest.param(delivery_run(2.0, n=10), id="too-few"),
    ],
)
def test_delivery_silent_without_its_evidence(records: list[RequestRecord]) -> None:
    assert "delivery" not in rules(diagnose(records, OUTPUTS))


# --- no data, failures, output formats ---------------------------------------------------


def test_nothing_fires_without_data_and_only_the_errors_rule_without_a_completed_request() -> None:
    assert diagnose([], SPIKE) == []
    failed = [
        RequestRecord(id=i, phase="steady", intended_s=i * 0.2, input_tokens=300,
                      status=Status.TIMEOUT) for i in range(200)
    ]  # fmt: skip
    assert rules(diagnose(failed, SPIKE)) == ["errors"]  # the latency rules need ok requests


def test_formats_and_order() -> None:
    records = spike() + [
        dataclasses.replace(r, id=r.id + 10_000, phase="late", intended_s=r.intended_s + 100)
        for r in output_run(512)
    ]
    findings = diagnose(records, SPIKE)
    assert [f.strength for f in findings] == sorted((f.strength for f in findings), reverse=True)
    assert set(rules(findings)) <= set(RULES)
    lines = format_findings(findings)
    for line, finding in zip(lines, findings, strict=True):
        assert line == (
            f"{finding.hypothesis.rstrip('.')} — {finding.evidence}; next: {finding.check}"
        )
    data = findings_to_json(findings)
    assert json.loads(json.dumps(data)) == data
    assert data[0].keys() == {"rule", "hypothesis", "evidence", "check", "strength"}
    assert diagnose(records, SPIKE) == findings  # deterministic


@pytest.mark.slow
def test_hundred_thousand_records_are_diagnosed_the_same_every_time() -> None:
    # Its speed (about 0.2 s of CPU here) is measured in benchmarks/bench_analysis.py,
    # not asserted: a timed unit test fails on a busy machine, not on slow code.
    rng = np.random.default_rng(11)
    starts = np.sort(rng.uniform(0, 1000, 100_000))
    ttfts = 0.2 + rng.exponential(0.1, starts.size)
    records = [
        record(i, "steady" if t < 800 else "burst", float(t), ttft=float(ttfts[i]),
               itl=0.03 + (i % 7) * 1e-4, gaps=20, queue=0.01, prefill=0.1, decode=0.6,
               input_tokens=200 + i % 200)
        for i, t in enumerate(starts)
    ]  # fmt: skip
    wl = workload(("steady", 100, 800), ("burst", 100, 200))
    findings = diagnose(records, wl)
    assert diagnose(records, wl) == findings
    assert rules(findings) == []  # one steady server, no shape of a bottleneck in it


# --- stall --------------------------------------------------------------------------------

STALLED = workload(("steady", 10, 20))


def stalled_run(*, stall_s: float = 3.0, at: float = 8.0) -> list[RequestRecord]:
    """10 req/s, TTFT 100 ms, 5 gaps of 10 ms; the server delivers nothing from ``at`` for
    ``stall_s``: the requests sent before its end get their first token when it ends."""
    out = []
    for i in range(200):
        t = i / 10
        first = max(t + 0.1, at + stall_s + 0.001 * (i % 7)) if t < at + stall_s else t + 0.1
        if t + 0.15 < at:  # done before the stall
            first = t + 0.1
        out.append(record(i, "steady", t, ttft=first - t, itl=0.01, gaps=5))
    return out


def test_a_stall_is_named_with_its_silence_and_its_waiters() -> None:
    findings = diagnose(stalled_run(), STALLED)
    (found,) = [f for f in findings if f.rule == "stall"]
    # The last event before it: request 78's last byte at 7.95 s; the first after: 11.00 s.
    assert "for 3.05s, from 7.95s to 11.00s" in found.evidence, found.evidence
    assert "while 31 requests waited (16 of them through at least half of it)" in found.evidence
    assert "31 of them got their first token within 305ms of its end" in found.evidence
    assert "vs median 100ms of the other 169" in found.evidence
    assert "GC or allocator pause" in found.check
    assert "cold_start" not in rules(findings)  # the first request is not the story


@pytest.mark.parametrize(
    ("records", "plan"),
    [
        # A queue builds and drains gradually (the seed's spike): no silence.
        pytest.param(spike(), SPIKE, id="growing-queue"),
        # Nothing in flight for 12 s: idle, not stalled.
        pytest.param(idle_run(resumed_ttft=0.3), IDLE, id="idle"),
        # Under 5 median TTFTs (and 0.5 s): the usual spacing of a slow server.
        pytest.param(stalled_run(stall_s=0.4), STALLED, id="short"),
        # 1 req/s of 6 s streams: first tokens and ends 1 s apart, tokens every 30 ms.
        pytest.param(
            [record(i, "steady", float(i), ttft=0.1, itl=0.03, gaps=200) for i in range(30)],
            workload(("steady", 1, 30)),
            id="streaming-across",
        ),
    ],
)
def test_a_stall_stays_silent_without_its_evidence(
    records: list[RequestRecord], plan: Workload
) -> None:
    assert "stall" not in rules(diagnose(records, plan))


def test_a_first_request_a_few_milliseconds_slow_is_a_connection_not_a_cold_start() -> None:
    """1.1 ms against a 0.37 ms median (3x) is a connection being set up."""
    records = [record(i, "trickle", float(i), ttft=0.00037, gaps=10) for i in range(40)]
    records[0] = record(0, "trickle", 0.0, ttft=0.0011, gaps=10)
    assert "cold_start" not in rules(diagnose(records, IDLE))
    records[0] = record(0, "trickle", 0.0, ttft=0.05, gaps=10)  # 50 ms: a cold replica
    assert "cold_start" in rules(diagnose(records, IDLE))


def test_requests_cut_off_mid_answer_are_failures_and_never_sent_ones_are_not() -> None:
    """The errors rule counts what the verdicts count: a request the run cancelled after
    sending it failed (the server had it); one never sent was never offered."""
    from pytest_latency.analysis.diagnosis_errors import failures

    records = [record(i, "steady", i * 0.1, ttft=0.1, gaps=5) for i in range(40)]
    for r in records[30:]:  # cut off mid-answer by the run's deadline
        r.status, r.error, r.end_s = Status.CANCELLED, "capacity deadline", None
    for r in records[35:]:  # and these never went out
        r.sent_s = None
    found = failures(records, ["steady"])
    assert found is not None and found.rule == "errors"
    assert found.evidence.startswith("5 of 35 requests failed (14.3%): cancelled 5:")
    assert "cut requests off mid-answer" in found.hypothesis
