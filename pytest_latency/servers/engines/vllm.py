"""vLLM's OpenAI server (``vllm serve``) on GPUs.

Spans go to the plugin's OTLP/HTTP receiver (``--otlp-traces-endpoint`` with the
``http/protobuf`` protocol, which takes the full ``/v1/traces`` URL), so every request
joins its ``llm_request`` span: queue, prefill and decode time by trace id.

Followed in vLLM's source: ``vllm/tracing/otel.py`` (the exporter by
``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL``; a ``BatchSpanProcessor`` with the SDK's defaults,
so ``OTEL_BSP_SCHEDULE_DELAY`` sets how long finished spans wait, 5 s by default) and
``vllm/config/observability.py`` (without the OpenTelemetry packages, which images
before early 2026 lack, ``--otlp-traces-endpoint`` is refused at start-up: "OpenTelemetry
is not available"). Such an image is started again without the endpoint, the reason
recorded with the server.
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

DEFAULT_IMAGE = "vllm/vllm-openai:latest"
DEFAULT_PORT = 8000
OPTIONS = frozenset({"otlp_traces_endpoint", "model_cache", "max_num_seqs", "load_format"})
# Finished spans leave within half a second instead of the SDK's 5 s: joins wait less.
SPAN_SCHEDULE_DELAY_MS = 500
NO_OTEL_MARKERS = ("OpenTelemetry is not available",)
NO_OTEL_REASON = (
    "the image lacks the OpenTelemetry packages (vLLM refuses --otlp-traces-endpoint "
    "without them): restarted without span export, so no queue waits from spans"
)


def container_spec(spec: ServerSpec) -> ContainerSpec:
    network = network_option(spec)
    listen = listen_for(network, DEFAULT_PORT)
    endpoint = span_endpoint(spec, network)
    built = _build(spec, network, listen, endpoint)
    if endpoint is None:
        return built
    # The same container (same port) without the endpoint, should the image refuse it.
    fallback = Fallback(NO_OTEL_MARKERS, NO_OTEL_REASON, _build(spec, network, listen, None))
    return dataclasses.replace(built, fallback=fallback)


def _build(
    spec: ServerSpec, network: Network, listen: Listen, endpoint: str | None
) -> ContainerSpec:
    # The image's entrypoint is `vllm serve`: the model is the first argument.
    command = [require_model(spec), "--host", listen.host, "--port", str(listen.port)]
    for option in ("max_num_seqs", "load_format"):
        if option in spec.options:
            command += [f"--{option.replace('_', '-')}", str(spec.options[option])]
    environment = {}
    if endpoint is not None:
        command += ["--otlp-traces-endpoint", endpoint]
        environment["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] = "http/protobuf"
        environment["OTEL_SERVICE_NAME"] = "vllm"
        environment["OTEL_BSP_SCHEDULE_DELAY"] = str(SPAN_SCHEDULE_DELAY_MS)
    return gpu_server(
        spec,
        image=DEFAULT_IMAGE,
        command=command,
        listen=listen,
        network=network,
        cache_path="/root/.cache/huggingface",
        environment=environment,
        ipc_mode="host",  # PyTorch workers share tensors through /dev/shm
        exports_spans=endpoint is not None,
    )


# vLLM exports OTLP/HTTP: the session points it at the plugin's receiver.
KIND = ServerKind("vllm", container_spec, OPTIONS, exports_spans=True)
