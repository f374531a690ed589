"""SGLang's server on GPUs, with Prometheus metrics enabled and spans to our receiver.

SGLang exports OTLP straight to a URL and continues the caller's ``traceparent``
(``python/sglang/srt/observability/trace.py``: ``--enable-trace
--otlp-traces-endpoint``; the protocol from ``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL``,
gRPC by default, ``http/protobuf`` posting to the full ``/v1/traces`` URL; the batch
delay from ``SGLANG_OTLP_EXPORTER_SCHEDULE_DELAY_MILLIS``). So, like vLLM, it sends its
spans to the plugin's OTLP/HTTP receiver, no Collector needed. Without the
OpenTelemetry packages it refuses to start with tracing on ("opentelemetry package is
not installed"); it is started again without, the reason recorded. An
``otlp_grpc_endpoint`` option (a Collector of your own) replaces our receiver.
"""

from __future__ import annotations

import dataclasses

from pytest_latency.servers.container import (
    ContainerSpec,
    Fallback,
    Listen,
    Network,
    listen_for,
    network_option,
    span_endpoint,
)
from pytest_latency.servers.hf_cache import gpu_server, require_model
from pytest_latency.servers.kinds import ServerKind
from pytest_latency.spec.model import ServerSpec

DEFAULT_IMAGE = "lmsysorg/sglang:latest"
DEFAULT_PORT = 30000
OPTIONS = frozenset({"model_cache", "otlp_grpc_endpoint"})
SPAN_SCHEDULE_DELAY_MS = 500
NO_OTEL_MARKERS = ("opentelemetry package is not installed",)
NO_OTEL_REASON = (
    "the image lacks the OpenTelemetry packages (SGLang refuses --enable-trace without "
    "them): restarted without span export, so no queue waits from spans"
)


def container_spec(spec: ServerSpec) -> ContainerSpec:
    network = network_option(spec)
    listen = listen_for(network, DEFAULT_PORT)
    if "otlp_grpc_endpoint" in spec.options:  # the user's own Collector, over gRPC
        return _build(spec, network, listen, str(spec.options["otlp_grpc_endpoint"]), False)
    endpoint = span_endpoint(spec, network)
    if endpoint is None:
        return _build(spec, network, listen, None, False)
    built = _build(spec, network, listen, endpoint, True)
    fallback = Fallback(NO_OTEL_MARKERS, NO_OTEL_REASON, _build(spec, network, listen, None, False))
    return dataclasses.replace(built, fallback=fallback)


def _build(
    spec: ServerSpec, network: Network, listen: Listen, endpoint: str | None, http: bool
) -> ContainerSpec:
    command = [
        "python3", "-m", "sglang.launch_server",
        "--model-path", require_model(spec),
        "--host", listen.host,
        "--port", str(listen.port),
        "--enable-metrics",
    ]  # fmt: skip
    environment = {}
    if endpoint is not None:
        command += ["--enable-trace", "--otlp-traces-endpoint", endpoint]
    if http:
        environment["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] = "http/protobuf"
        environment["SGLANG_OTLP_EXPORTER_SCHEDULE_DELAY_MILLIS"] = str(SPAN_SCHEDULE_DELAY_MS)
    return gpu_server(
        spec,
        image=DEFAULT_IMAGE,
        command=command,
        listen=listen,
        network=network,
        cache_path="/root/.cache/huggingface",
        environment=environment,
        ipc_mode="host",
        exports_spans=http,
    )


# SGLang exports OTLP/HTTP protobuf: the session points it at the plugin's receiver.
KIND = ServerKind("sglang", container_spec, OPTIONS, exports_spans=True)
