"""Hugging Face Text Generation Inference on GPUs.

TGI exports OTLP over gRPC only; our receiver is OTLP/HTTP, so its spans need a
Collector in between (docs/tracing.md). Its ``/metrics`` are scraped either way.
"""

from __future__ import annotations

from pytest_latency.servers.container import (
    ContainerSpec,
    listen_for,
    network_option,
)
from pytest_latency.servers.hf_cache import gpu_server, require_model
from pytest_latency.servers.kinds import ServerKind
from pytest_latency.spec.model import ServerSpec

DEFAULT_IMAGE = "ghcr.io/huggingface/text-generation-inference:latest"
DEFAULT_PORT = 80
OPTIONS = frozenset({"model_cache", "otlp_grpc_endpoint", "max_concurrent_requests"})


def container_spec(spec: ServerSpec) -> ContainerSpec:
    network = network_option(spec)
    listen = listen_for(network, DEFAULT_PORT)
    model = require_model(spec)
    command = ["--model-id", model, "--hostname", listen.host, "--port", str(listen.port)]
    if "max_concurrent_requests" in spec.options:
        command += ["--max-concurrent-requests", str(spec.options["max_concurrent_requests"])]
    if "otlp_grpc_endpoint" in spec.options:
        command += ["--otlp-endpoint", str(spec.options["otlp_grpc_endpoint"])]
    return gpu_server(
        spec,
        image=DEFAULT_IMAGE,
        command=command,
        listen=listen,
        network=network,
        cache_path="/data",
        shm_size="1g",  # NCCL needs shared memory beyond Docker's 64 MB default
    )


KIND = ServerKind("tgi", container_spec, OPTIONS)  # gRPC-only spans: not to our receiver
