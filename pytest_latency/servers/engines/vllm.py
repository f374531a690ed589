"""vLLM's OpenAI server (``vllm serve``) on GPUs.

Spans go to the plugin's OTLP/HTTP receiver (``--otlp-traces-endpoint`` with the
``http/protobuf`` protocol, which takes the full ``/v1/traces`` URL), so every request
joins its ``llm_request`` span: queue, prefill and decode time by trace id.
"""

from __future__ import annotations

from pytest_latency.servers.container import (
    ContainerSpec,
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


def container_spec(spec: ServerSpec) -> ContainerSpec:
    network = network_option(spec)
    listen = listen_for(network, DEFAULT_PORT)
    # The image's entrypoint is `vllm serve`: the model is the first argument.
    command = [require_model(spec), "--host", listen.host, "--port", str(listen.port)]
    for option in ("max_num_seqs", "load_format"):
        if option in spec.options:
            command += [f"--{option.replace('_', '-')}", str(spec.options[option])]
    environment = {}
    endpoint = span_endpoint(spec, network)
    if endpoint is not None:
        command += ["--otlp-traces-endpoint", endpoint]
        environment["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] = "http/protobuf"
        environment["OTEL_SERVICE_NAME"] = "vllm"
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
