"""The GPU servers' containers as their 2026 sources need them (issue 27).

Each test names the server source file the profile follows; no GPU or Docker here.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from pytest_latency.servers import ServerStartError, profiles
from pytest_latency.servers.container import ContainerSpec, Listen

RECEIVER = "http://127.0.0.1:4318/v1/traces"
SPAN_ENV = {"OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_SERVICE_NAME", "OTEL_BSP_SCHEDULE_DELAY"}


def spec_for(kind: str, **fields: object) -> ContainerSpec:
    from pytest_latency.spec.model import ServerSpec

    return profiles.PROFILES[kind](ServerSpec(kind=kind, **fields))  # type: ignore[arg-type]


def flag(spec: ContainerSpec, name: str) -> str:
    return spec.command[spec.command.index(name) + 1]


# TGI: launcher/src/main.rs and router/src/server.rs bind --prometheus-port (9000).
def test_tgi_on_host_networking_gets_a_free_prometheus_port_of_its_own() -> None:
    spec = spec_for("tgi", model="m")
    port = int(flag(spec, "--prometheus-port"))
    assert 0 < port < 65536 and port != spec.listen.port and port != 9000
    assert spec.fallback is not None  # an image from before the flag refuses it
    assert "--prometheus-port" not in spec.fallback.spec.command
    assert spec.fallback.spec.listen == spec.listen
    assert spec.fallback.applies("error: unexpected argument '--prometheus-port' found")
    assert not spec.fallback.applies("failed to build prometheus recorder")


def test_tgi_on_a_bridge_network_keeps_its_default_prometheus_port() -> None:
    spec = spec_for("tgi", model="m", options={"network": "bridge"})
    assert "--prometheus-port" not in spec.command and spec.fallback is None


# vLLM: vllm/tracing/otel.py (BatchSpanProcessor with SDK defaults) and
# vllm/config/observability.py ("OpenTelemetry is not available" without the packages).
VLLM_REFUSAL = (
    "pydantic_core._pydantic_core.ValidationError: 1 validation error for "
    "ObservabilityConfig\n  Value error, OpenTelemetry is not available. Unable to "
    "configure 'otlp_traces_endpoint'. Ensure OpenTelemetry packages are installed."
)


def test_vllm_batches_its_spans_for_half_a_second_not_five() -> None:
    spec = spec_for("vllm", model="m", options={"otlp_traces_endpoint": RECEIVER})
    assert spec.environment["OTEL_BSP_SCHEDULE_DELAY"] == "500"  # milliseconds
    assert spec.environment["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] == "http/protobuf"
    assert flag(spec, "--otlp-traces-endpoint") == RECEIVER and spec.exports_spans


def test_vllm_without_opentelemetry_starts_again_without_the_endpoint() -> None:
    spec = spec_for(
        "vllm", model="m",
        options={"otlp_traces_endpoint": RECEIVER, "env": {"VLLM_LOGGING_LEVEL": "DEBUG"}},
    )  # fmt: skip
    assert spec.fallback is not None and spec.fallback.applies(VLLM_REFUSAL)
    again = spec.fallback.spec
    assert "--otlp-traces-endpoint" not in again.command and not again.exports_spans
    assert not SPAN_ENV & set(again.environment)
    assert again.environment["VLLM_LOGGING_LEVEL"] == "DEBUG"  # the user's env stays
    assert again.listen == spec.listen and again.command[:5] == spec.command[:5]
    assert again.fallback is None
    assert "OpenTelemetry" in spec.fallback.reason


def test_vllm_without_an_endpoint_has_nothing_to_fall_back_from() -> None:
    spec = spec_for("vllm", model="m")
    assert spec.fallback is None and not SPAN_ENV & set(spec.environment)


# SGLang: python/sglang/srt/observability/trace.py (exporter by
# OTEL_EXPORTER_OTLP_TRACES_PROTOCOL; http/protobuf posts to the URL as given).
def test_sglang_exports_straight_to_our_receiver_over_http_protobuf() -> None:
    spec = spec_for("sglang", model="m", options={"otlp_traces_endpoint": RECEIVER})
    assert "--enable-trace" in spec.command
    assert flag(spec, "--otlp-traces-endpoint") == RECEIVER  # the full /v1/traces URL
    assert spec.environment["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] == "http/protobuf"
    assert spec.environment["SGLANG_OTLP_EXPORTER_SCHEDULE_DELAY_MILLIS"] == "500"
    assert spec.exports_spans
    assert spec.fallback is not None
    assert spec.fallback.applies("RuntimeError: opentelemetry package is not installed!!!")
    assert "--enable-trace" not in spec.fallback.spec.command
    assert not spec.fallback.spec.exports_spans


def test_sglang_to_a_users_grpc_collector_does_not_wait_for_our_receiver() -> None:
    spec = spec_for(
        "sglang", model="m",
        options={"otlp_traces_endpoint": RECEIVER, "otlp_grpc_endpoint": "collector:4317"},
    )  # fmt: skip
    assert flag(spec, "--otlp-traces-endpoint") == "collector:4317"
    assert "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL" not in spec.environment  # gRPC, its default
    assert not spec.exports_spans


def test_sglang_on_a_bridge_network_exports_nothing_to_an_unreachable_loopback() -> None:
    spec = spec_for(
        "sglang", model="m", options={"network": "bridge", "otlp_traces_endpoint": RECEIVER}
    )
    assert "--enable-trace" not in spec.command and not spec.exports_spans


# llama.cpp: tools/server/server.cpp gives each slot n_ctx / n_parallel (no --kv-unified).
@pytest.mark.parametrize(
    ("fields", "total"),
    [
        ({}, 4 * 2048),  # CPU default: 2,048 a slot, as the 8,192 total was before
        ({"gpus": "all", "model": "/m.gguf"}, 4 * 8192),
        ({"gpus": "all", "model": "/m.gguf", "options": {"parallel": 4, "ctx_size": 8192}},
         32768),
        ({"options": {"parallel": 2, "ctx_size": 4096}}, 8192),
    ],
)  # fmt: skip
def test_llamacpp_context_is_sized_per_slot(fields: dict[str, object], total: int) -> None:
    spec = spec_for("llamacpp", **fields)
    parallel = int(flag(spec, "--parallel"))
    assert int(flag(spec, "--ctx-size")) == total
    assert total // parallel >= 2048  # what each slot holds


# The fallback mechanism itself, without Docker.
class FakeStarts:
    def __init__(self, failures: list[str]) -> None:
        self.failures = failures
        self.started: list[ContainerSpec] = []
        self.removed: list[ContainerSpec] = []

    @contextmanager
    def __call__(self, spec: ContainerSpec) -> Iterator[object]:
        self.started.append(spec)
        try:
            if self.failures:
                raise ServerStartError(f"vllm server did not start: {self.failures.pop(0)}")
            yield _Running(spec)
        finally:
            self.removed.append(spec)


class _Running:
    def __init__(self, spec: ContainerSpec) -> None:
        self.spec = spec


def test_a_refused_flag_starts_the_fallback_and_records_why(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    starts = FakeStarts([VLLM_REFUSAL])
    monkeypatch.setattr(profiles, "run_container", starts)
    spec = spec_for("vllm", model="m", options={"otlp_traces_endpoint": RECEIVER})
    assert spec.fallback is not None
    with profiles.run_with_fallbacks(spec) as (running, reasons):
        assert running.spec is spec.fallback.spec
        assert reasons == (spec.fallback.reason,)
        assert starts.removed == [spec]  # the refused container is gone before the next
    assert starts.started == [spec, spec.fallback.spec] == starts.removed


def test_other_start_failures_are_not_retried(monkeypatch: pytest.MonkeyPatch) -> None:
    starts = FakeStarts(["CUDA out of memory"])
    monkeypatch.setattr(profiles, "run_container", starts)
    spec = spec_for("vllm", model="m", options={"otlp_traces_endpoint": RECEIVER})
    with (
        pytest.raises(ServerStartError, match="CUDA out of memory"),
        profiles.run_with_fallbacks(spec),
    ):
        pass
    assert starts.started == [spec]


def test_a_fallback_that_fails_too_is_the_error(monkeypatch: pytest.MonkeyPatch) -> None:
    starts = FakeStarts([VLLM_REFUSAL, "exited with code 1"])
    monkeypatch.setattr(profiles, "run_container", starts)
    spec = spec_for("vllm", model="m", options={"otlp_traces_endpoint": RECEIVER})
    with (
        pytest.raises(ServerStartError, match="exited with code 1"),
        profiles.run_with_fallbacks(spec),
    ):
        pass
    assert len(starts.started) == 2 == len(starts.removed)


def test_listen_is_kept_in_every_fallback() -> None:
    for kind in ("tgi", "vllm", "sglang"):
        options = {} if kind == "tgi" else {"otlp_traces_endpoint": RECEIVER}
        spec = spec_for(kind, model="m", options=options)
        assert spec.fallback is not None, kind
        assert isinstance(spec.fallback.spec.listen, Listen)
        assert spec.fallback.spec.listen == spec.listen, kind
