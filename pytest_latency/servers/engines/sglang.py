"""SGLang's server on GPUs, with Prometheus metrics enabled.

SGLang exports traces over OTLP/gRPC; like TGI it needs a Collector to reach the
plugin's OTLP/HTTP receiver (docs/tracing.md).
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

DEFAULT_IMAGE = "lmsysorg/sglang:latest"
DEFAULT_PORT = 30000
OPTIONS = frozenset({"model_cache", "otlp_grpc_endpoint"})


def container_spec(spec: ServerSpec) -> ContainerSpec:
    network = network_option(spec)
    listen = listen_for(network, DEFAULT_PORT)
    command = [
        "python3", "-m", "sglang.launch_server",
        "--model-path", require_model(spec),
        "--host", listen.host,
        "--port", str(listen.port),
        "--enable-metrics",
    ]  # fmt: skip
    if "otlp_grpc_endpoint" in spec.options:
        endpoint = str(spec.options["otlp_grpc_endpoint"])
        command += ["--enable-trace", "--otlp-traces-endpoint", endpoint]
    return gpu_server(
        spec,
        image=DEFAULT_IMAGE,
        command=command,
        listen=listen,
        network=network,
        cache_path="/root/.cache/huggingface",
        ipc_mode="host",
    )


KIND = ServerKind("sglang", container_spec, OPTIONS)  # gRPC-only spans: not to our receiver
