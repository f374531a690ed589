"""Hugging Face Text Generation Inference on GPUs.

TGI exports OTLP over gRPC only (``router/src/logging.rs``); our receiver is OTLP/HTTP,
so its spans need a Collector in between (docs/tracing.md). Its ``/metrics`` (on the
API port) are scraped either way.

On host networking TGI also binds a Prometheus recorder port at start-up
(``--prometheus-port``, default 9000, ``launcher/src/main.rs`` and
``router/src/server.rs``) and exits ("failed to build prometheus recorder") when
anything holds it: it gets a free port of its own. An image from before that flag
refuses it; it is started again without.
"""

from __future__ import annotations

import dataclasses

from pytest_latency.servers.container import (
    ContainerSpec,
    Fallback,
    Listen,
    Network,
    free_port,
    listen_for,
    network_option,
)
from pytest_latency.servers.hf_cache import gpu_server, require_model
from pytest_latency.servers.kinds import ServerKind
from pytest_latency.spec.model import ServerSpec

DEFAULT_IMAGE = "ghcr.io/huggingface/text-generation-inference:latest"
DEFAULT_PORT = 80
OPTIONS = frozenset({"model_cache", "otlp_grpc_endpoint", "max_concurrent_requests"})
# clap's words for a flag the launcher does not know (clap 4, then clap 3).
OLD_IMAGE_MARKERS = (
    "unexpected argument '--prometheus-port'",
    "Found argument '--prometheus-port'",
)
OLD_IMAGE_REASON = "the image has no --prometheus-port flag: restarted without it"


def container_spec(spec: ServerSpec) -> ContainerSpec:
    network = network_option(spec)
    listen = listen_for(network, DEFAULT_PORT)
    if network != "host":  # its own network namespace: 9000 is free there
        return _build(spec, network, listen, None)
    prometheus_port = free_port()
    while prometheus_port == listen.port:  # two picks of a free port may agree
        prometheus_port = free_port()
    built = _build(spec, network, listen, prometheus_port)
    fallback = Fallback(OLD_IMAGE_MARKERS, OLD_IMAGE_REASON, _build(spec, network, listen, None))
    return dataclasses.replace(built, fallback=fallback)


def _build(
    spec: ServerSpec, network: Network, listen: Listen, prometheus_port: int | None
) -> ContainerSpec:
    model = require_model(spec)
    command = ["--model-id", model, "--hostname", listen.host, "--port", str(listen.port)]
    if prometheus_port is not None:
        command += ["--prometheus-port", str(prometheus_port)]
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
