"""A run's numbers by a peer tool's own definitions: vLLM ``bench serve`` and AIPerf.

Users put our numbers beside the peers'; the same word means different things there
(docs/metrics.md "Our metrics and the peers'"). These functions recompute a run's
records the way each peer does, as far as the records allow, so ``pytest-latency
compare --as vllm|aiperf RUN.json`` prints numbers comparable with the peer's report.

vLLM, ``vllm/benchmarks/serve.py::calculate_metrics`` and
``vllm/benchmarks/lib/endpoint_request_func.py`` (read December 2026):

* the clock starts just before the POST: our ``sent_s``, not the planned send time;
* TTFT: first chunk with non-empty ``choices``; ITL: every gap between such chunks,
  **pooled over all requests**; E2EL (``latency``): to the last such chunk;
* TPOT per request: ``(latency - ttft) / (output_len - 1)`` for ``output_len > 1``;
* only successful requests; mean ``np.mean``, median ``np.median``, percentiles
  ``np.percentile`` (linear interpolation), printed in ms;
* throughput: completed, output tokens and input + output tokens over the benchmark's
  duration (its start to the last request's end; ours: time zero to the last end).

AIPerf, ``docs/metrics_reference.md`` (read December 2026):

* TTFT ``responses[0] - start``; TTFO: first non-reasoning token; request latency
  ``responses[-1] - start`` (our ``end_s``);
* ITL per request ``(request_latency - ttft) / (OSL - 1)`` (vLLM's TPOT), OSL = output
  plus reasoning tokens; ICL: the gaps between chunks (a distribution);
* output token throughput per user ``1 / ITL``;
* throughput over ``max response timestamp - min request timestamp``.

What our records cannot reproduce: vLLM counts a role-only first chunk (sent by some
servers before any token) and a finish chunk with an empty delta as chunks; we time
content only. The differences are a chunk each and are stated in the docs.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np

from pytest_latency.records import RequestRecord

Peer = Literal["vllm", "aiperf"]
PEERS: tuple[str, ...] = ("vllm", "aiperf")


@dataclass(frozen=True, slots=True)
class PeerStatistic:
    """One line of a peer's report: a distribution's statistics, or a single value."""

    name: str  # the peer's own name for it
    unit: str  # "ms", "req/s", "tok/s", "tok/s/user"
    values: dict[str, float]  # statistic name (as the peer prints it) -> value; NaN: none
    n: int  # values the statistic is over (requests, or gaps for pooled ITL and ICL)


def _last_chunk_s(record: RequestRecord) -> float | None:
    """When the last content chunk arrived: the first plus every gap."""
    if record.first_token_s is None:
        return None
    return record.first_token_s + float(np.sum(record.itl_s))


def _distribution(
    name: str,
    values: Sequence[float],
    statistics: dict[str, Callable[[np.ndarray], float]],
    unit: str = "ms",
    scale: float = 1000.0,
) -> PeerStatistic:
    """Statistics of ``values`` (seconds, printed in ms unless ``unit`` says otherwise)."""
    array = np.asarray(values, dtype=np.float64) * scale
    found = {
        key: (reduce(array) if array.size else float("nan")) for key, reduce in statistics.items()
    }
    return PeerStatistic(name, unit, found, int(array.size))


_VLLM_STATISTICS: dict[str, Callable[[np.ndarray], float]] = {
    "Mean": lambda a: float(np.mean(a)),
    "Median": lambda a: float(np.median(a)),
    "P99": lambda a: float(np.percentile(a, 99)),
}
_AIPERF_STATISTICS: dict[str, Callable[[np.ndarray], float]] = {
    "avg": lambda a: float(np.mean(a)),
    "min": lambda a: float(np.min(a)),
    "max": lambda a: float(np.max(a)),
    "p99": lambda a: float(np.percentile(a, 99)),
    "p90": lambda a: float(np.percentile(a, 90)),
    "p50": lambda a: float(np.percentile(a, 50)),
    "std": lambda a: float(np.std(a)),
}


def _rate(name: str, unit: str, amount: float, duration_s: float, n: int) -> PeerStatistic:
    value = amount / duration_s if duration_s > 0 else float("nan")
    return PeerStatistic(name, unit, {"": value}, n)


def vllm_statistics(records: Sequence[RequestRecord]) -> list[PeerStatistic]:
    """What ``vllm bench serve`` prints for these requests (see the module docstring)."""
    done = [r for r in records if r.ok and r.sent_s is not None and r.first_token_s is not None]
    ttfts: list[float] = []
    tpots: list[float] = []
    itls: list[float] = []
    e2els: list[float] = []
    output = total_input = 0
    for record in done:
        assert record.sent_s is not None and record.first_token_s is not None
        ttft = record.first_token_s - record.sent_s
        latency = (_last_chunk_s(record) or record.first_token_s) - record.sent_s
        tokens = record.output_tokens or 1  # vLLM: 1 when neither usage nor tokenizer
        ttfts.append(ttft)
        e2els.append(latency)
        itls.extend(float(gap) for gap in record.itl_s)
        if tokens > 1:
            tpots.append((latency - ttft) / (tokens - 1))
        output += tokens
        total_input += record.prompt_tokens or record.input_tokens
    ends = [r.end_s for r in records if r.end_s is not None]
    duration = max(ends, default=0.0)  # from time zero, as vLLM times from its start
    return [
        _rate("Request throughput", "req/s", len(done), duration, len(done)),
        _rate("Output token throughput", "tok/s", output, duration, len(done)),
        _rate("Total Token throughput", "tok/s", output + total_input, duration, len(done)),
        _distribution("TTFT", ttfts, _VLLM_STATISTICS),
        _distribution("TPOT", tpots, _VLLM_STATISTICS),
        _distribution("ITL", itls, _VLLM_STATISTICS),
        _distribution("E2EL", e2els, _VLLM_STATISTICS),
    ]


def aiperf_statistics(records: Sequence[RequestRecord]) -> list[PeerStatistic]:
    """What AIPerf reports for these requests (see the module docstring)."""
    done = [
        r
        for r in records
        if r.ok and r.sent_s is not None and r.first_token_s is not None and r.end_s is not None
    ]
    ttfts: list[float] = []
    ttfos: list[float] = []
    itls: list[float] = []
    icls: list[float] = []
    latencies: list[float] = []
    per_user: list[float] = []
    osl_total = 0
    for record in done:
        assert record.sent_s is not None and record.first_token_s is not None
        assert record.end_s is not None
        ttft = record.first_token_s - record.sent_s
        latency = record.end_s - record.sent_s
        ttfts.append(ttft)
        latencies.append(latency)
        if record.ttfo_s is not None:  # ttfo_s counts from the planned send
            ttfos.append(record.ttfo_s + record.intended_s - record.sent_s)
        icls.extend(float(gap) for gap in record.itl_s)
        osl = record.output_tokens or 0  # usage.completion_tokens includes reasoning
        osl_total += osl
        if osl > 1 and len(record.itl_s) >= 1:
            itl = (latency - ttft) / (osl - 1)
            itls.append(itl)
            if itl > 0:
                per_user.append(1.0 / itl)
    sent = [r.sent_s for r in done if r.sent_s is not None]
    ends = [r.end_s for r in done if r.end_s is not None]
    duration = max(ends) - min(sent) if done else 0.0
    return [
        _distribution("Time to First Token", ttfts, _AIPERF_STATISTICS),
        _distribution("Time to First Output Token", ttfos, _AIPERF_STATISTICS),
        _distribution("Request Latency", latencies, _AIPERF_STATISTICS),
        _distribution("Inter Token Latency", itls, _AIPERF_STATISTICS),
        _distribution("Inter Chunk Latency", icls, _AIPERF_STATISTICS),
        _distribution(
            "Output Token Throughput Per User", per_user, _AIPERF_STATISTICS, "tok/s/user", 1.0
        ),
        _rate("Output Token Throughput", "tok/s", osl_total, duration, len(done)),
        _rate("Request Throughput", "req/s", len(done), duration, len(done)),
    ]


def peer_statistics(peer: str, records: Sequence[RequestRecord]) -> list[PeerStatistic]:
    """The statistics ``peer`` (``vllm`` or ``aiperf``) would report; ValueError otherwise."""
    if peer == "vllm":
        return vllm_statistics(records)
    if peer == "aiperf":
        return aiperf_statistics(records)
    raise ValueError(f"unknown peer {peer!r}; one of {', '.join(PEERS)}")
