"""Container server kinds: pick the profile, start it, describe what runs."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager

from pytest_latency.servers import llamacpp, ollama, sglang, sim, tgi, vllm
from pytest_latency.servers._http import discover_model, probe_version
from pytest_latency.servers.base import ServerInfo
from pytest_latency.servers.container import ContainerSpec, run_container
from pytest_latency.spec import ServerSpec

PROFILES: dict[str, Callable[[ServerSpec], ContainerSpec]] = {
    "llamacpp": llamacpp.container_spec,
    "vllm": vllm.container_spec,
    "tgi": tgi.container_spec,
    "sglang": sglang.container_spec,
    "ollama": ollama.container_spec,
    "sim": sim.container_spec,
}


def runs_in_container(spec: ServerSpec) -> bool:
    """Container kinds always; the embedded server when given an image."""
    return spec.kind in PROFILES and (spec.kind != "sim" or spec.image is not None)


@contextmanager
def start(spec: ServerSpec) -> Iterator[ServerInfo]:
    """Start ``spec``'s container and yield the server it runs, until exit."""
    container_spec = PROFILES[spec.kind](spec)
    with run_container(container_spec) as running:
        if spec.kind == "ollama":
            ollama.pull_model(
                running.url, container_spec.served_model or "", running.spec.startup_timeout_s
            )
        model = container_spec.served_model or discover_model(running.url)
        details: dict[str, object] = {
            "image": container_spec.image,
            "image_id": running.image_id,
            "container": running.container_id[:12],
            "network": container_spec.network,
            "command": list(container_spec.command),
        }
        if container_spec.gpus:
            details["gpus"] = container_spec.gpus
        version = probe_version(running.url)
        if version:
            details["version"] = version
        yield ServerInfo(
            kind=spec.kind,
            url=running.url,
            model=model,
            api=spec.api,
            details=details,
            cold_start_s=running.cold_start_s,
            exports_spans=container_spec.exports_spans,
            exit_problem=running.exit_problem,
        )
