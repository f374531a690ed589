"""llama.cpp's ``llama-server``: the real model server that runs on CPU in CI.

The default image is the project's (``pytest-latency images build llamacpp`` builds it from
the llama-cpp-python sdist, with a tiny random-weight model baked in). The upstream
``ghcr.io/ggml-org/llama.cpp:server`` images have the same entrypoint, so
``--latency-image`` can name them; with ``--latency-gpus`` the CUDA image is the
default and every layer is offloaded (``-ngl``). A host ``.gguf`` path given as the
model is mounted read-only.

``llama-server`` splits ``--ctx-size`` between its ``--parallel`` slots (without
``--kv-unified``, each slot gets ``n_ctx / n_parallel`` tokens; ``tools/server/server.cpp``),
and rejects a prompt longer than its slot. So the ``ctx_size`` option is the context of
one slot, and the server gets ``ctx_size * parallel``: 2,048 tokens a slot on CPU (the
bundled tiny model), 8,192 on GPUs.
"""

from __future__ import annotations

from pathlib import Path

from pytest_latency.servers.base import ServerStartError
from pytest_latency.servers.container import (
    ContainerSpec,
    Volume,
    extra_args,
    extra_env,
    listen_for,
    network_option,
    startup_timeout,
)
from pytest_latency.servers.kinds import ServerKind
from pytest_latency.spec.model import ServerSpec

DEFAULT_IMAGE = "pytest-latency/llamacpp:local"
DEFAULT_GPU_IMAGE = "ghcr.io/ggml-org/llama.cpp:server-cuda"
BUNDLED_MODEL = "/models/tiny-random-llama.gguf"
DEFAULT_PORT = 8080
HOST_MODEL_DIR = "/models/host"
OPTIONS = frozenset({"parallel", "threads", "ctx_size"})
DEFAULTS = {"parallel": 4, "threads": 1, "ctx_size": 2048}  # ctx_size: per slot
GPU_SLOT_CTX = 8192  # per slot on GPUs, where real models take real prompts


def _settings(spec: ServerSpec) -> dict[str, int]:
    settings = {}
    defaults = {**DEFAULTS, "ctx_size": GPU_SLOT_CTX} if spec.gpus else DEFAULTS
    for name, default in defaults.items():
        value = spec.options.get(name, default)
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            raise ServerStartError(
                f"server option {name} must be a positive integer, got {value!r}"
            )
        settings[name] = value
    return settings


def _model(spec: ServerSpec, image: str) -> tuple[str, tuple[Volume, ...]]:
    """The model path inside the container, and the mount that puts it there."""
    if spec.model:
        host_file = Path(spec.model).expanduser()
        if host_file.is_file():
            volume = Volume(str(host_file.parent.resolve()), HOST_MODEL_DIR, "ro")
            return f"{HOST_MODEL_DIR}/{host_file.name}", (volume,)
        return spec.model, ()  # a path inside the image
    if image != DEFAULT_IMAGE:
        raise ServerStartError(
            f"llama.cpp image {image} has no bundled model: pass a .gguf file with "
            "--latency-model (or server: {model: ...})"
        )
    return BUNDLED_MODEL, ()


def container_spec(spec: ServerSpec) -> ContainerSpec:
    settings = _settings(spec)
    network = network_option(spec)
    listen = listen_for(network, DEFAULT_PORT)
    image = spec.image or (DEFAULT_GPU_IMAGE if spec.gpus else DEFAULT_IMAGE)
    model_path, volumes = _model(spec, image)
    alias = Path(model_path).stem
    command = [
        "--model", model_path,
        "--alias", alias,
        "--host", listen.host,
        "--port", str(listen.port),
        "--metrics",  # /metrics: requests_processing, requests_deferred, token counters
        "--parallel", str(settings["parallel"]),
        "--threads", str(settings["threads"]),
        # The server splits its context between the slots: give each slot ctx_size.
        "--ctx-size", str(settings["ctx_size"] * settings["parallel"]),
    ]  # fmt: skip
    if spec.gpus:
        command += ["--n-gpu-layers", "999"]
    return ContainerSpec(
        kind="llamacpp",
        image=image,
        command=(*command, *extra_args(spec)),
        listen=listen,
        served_model=alias,
        network=network,
        environment=extra_env(spec),
        gpus=spec.gpus,
        volumes=volumes,
        startup_timeout_s=startup_timeout(spec, 120.0),
    )


KIND = ServerKind("llamacpp", container_spec, OPTIONS)
