"""Ollama: the OpenAI-compatible ``/v1`` API; the model is pulled once it is up.

Ollama has no Prometheus metrics and no tracing; its native API reports durations, but
the run uses ``/v1/chat/completions`` like every other server. ``OLLAMA_NUM_PARALLEL``
and ``OLLAMA_MAX_QUEUE`` (503 when full) shape its queueing.
"""

from __future__ import annotations

import httpx

from pytest_latency.servers.base import ServerStartError
from pytest_latency.servers.container import (
    ContainerSpec,
    RunningContainer,
    Volume,
    extra_args,
    extra_env,
    listen_for,
    network_option,
    startup_timeout,
)
from pytest_latency.servers.kinds import ServerKind
from pytest_latency.spec.model import ServerSpec

DEFAULT_IMAGE = "ollama/ollama:latest"
DEFAULT_PORT = 11434
OPTIONS = frozenset({"num_parallel", "max_queue", "models_volume"})


def container_spec(spec: ServerSpec) -> ContainerSpec:
    if not spec.model:
        raise ServerStartError("server kind 'ollama' needs a model: --latency-model llama3.2:1b")
    network = network_option(spec)
    listen = listen_for(network, DEFAULT_PORT)
    environment = {"OLLAMA_HOST": f"{listen.host}:{listen.port}"}
    if "num_parallel" in spec.options:
        environment["OLLAMA_NUM_PARALLEL"] = str(spec.options["num_parallel"])
    if "max_queue" in spec.options:
        environment["OLLAMA_MAX_QUEUE"] = str(spec.options["max_queue"])
    volume = str(spec.options.get("models_volume", "pytest-latency-ollama"))
    return ContainerSpec(
        kind="ollama",
        image=spec.image or DEFAULT_IMAGE,
        command=("serve", *extra_args(spec)),
        listen=listen,
        served_model=spec.model,
        network=network,
        environment={**environment, **extra_env(spec)},
        gpus=spec.gpus,
        # A named volume: pulled models survive between runs.
        volumes=(Volume(volume, "/root/.ollama", "rw"),),
        health_path="/api/version",  # Ollama has no /health
        startup_timeout_s=startup_timeout(spec, 600.0),
    )


def pull_model(base_url: str, model: str, timeout_s: float) -> None:
    """``POST /api/pull`` and wait for it: a fresh Ollama container has no models."""
    try:
        response = httpx.post(
            f"{base_url}/api/pull",
            json={"model": model, "stream": False},
            timeout=timeout_s,
            trust_env=False,
        )
    except httpx.HTTPError as error:
        raise ServerStartError(f"ollama could not pull {model}: {type(error).__name__}") from error
    if response.status_code != 200:
        raise ServerStartError(
            f"ollama could not pull {model}: HTTP {response.status_code} {response.text[:200]}"
        )


def _pull_served_model(running: RunningContainer) -> None:
    pull_model(running.url, running.spec.served_model or "", running.spec.startup_timeout_s)


KIND = ServerKind("ollama", container_spec, OPTIONS, after_start=_pull_served_model)
