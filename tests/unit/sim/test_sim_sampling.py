"""The embedded server honours the caller's sampled flag as vLLM does (an option).

vLLM's tracer provider keeps the SDK's default parent-based sampler
(``vllm/tracing/otel.py``): a request whose ``traceparent`` ends in ``-00`` gets no span.
"""

from __future__ import annotations

from dataclasses import replace

import httpx
import pytest

from pytest_latency.sim import SimConfig, SimServer
from pytest_latency.telemetry.receiver_thread import ThreadReceiver

FAST = SimConfig(decode_base_s=0.001, decode_per_seq_s=0.0, prefill_base_s=0.0,
                 prefill_per_token_s=0.0)  # fmt: skip
BODY = {"messages": [{"role": "user", "content": "one two"}], "max_tokens": 2, "stream": True}


def send(url: str, trace_ids: dict[str, bool]) -> None:
    """One streamed request per trace id, its traceparent sampled or not."""
    with httpx.Client(base_url=url, trust_env=False, timeout=10) as client:
        for index, (trace_id, sampled) in enumerate(trace_ids.items()):
            flag = "01" if sampled else "00"
            header = f"00-{trace_id}-{index + 1:016x}-{flag}"
            response = client.post(
                "/v1/chat/completions", json=BODY, headers={"traceparent": header}
            )
            assert response.status_code == 200


def received_after_stop(sampling: str, trace_ids: dict[str, bool]) -> set[str]:
    with ThreadReceiver() as receiver:
        config = replace(FAST, otlp_traces_endpoint=receiver.traces_url, otlp_sampling=sampling)
        with SimServer(config) as server:
            send(server.url, trace_ids)
        # Stopping flushed every span the server would ever send.
        return set(receiver.timings(list(trace_ids), grace_s=0.0))


TRACES = {f"{index + 1:032x}": index % 2 == 0 for index in range(6)}


def test_by_default_only_sampled_requests_get_a_span() -> None:
    assert SimConfig().otlp_sampling == "parent"
    got = received_after_stop("parent", TRACES)
    assert got == {trace_id for trace_id, sampled in TRACES.items() if sampled}


def test_sampling_all_exports_unsampled_requests_too() -> None:
    assert received_after_stop("all", TRACES) == set(TRACES)


def test_an_unknown_sampling_is_refused() -> None:
    with pytest.raises(ValueError, match="otlp_sampling"):
        SimConfig(otlp_sampling="ratio")
