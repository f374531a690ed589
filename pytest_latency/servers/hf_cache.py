"""What the Hugging Face-backed GPU servers (vLLM, TGI, SGLang) share: the token, the
model cache, GPUs by default, and a long first start while weights download."""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from pytest_latency.servers.base import ServerStartError
from pytest_latency.servers.container import (
    ContainerSpec,
    Listen,
    Volume,
    extra_args,
    extra_env,
    startup_timeout,
)
from pytest_latency.spec.model import ServerSpec

# Passed by name from the test process's environment, never written into a spec or log.
TOKEN_VARIABLES = ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN")
FIRST_START_S = 1200.0  # the first start downloads the weights


def token_names() -> tuple[str, ...]:
    return tuple(name for name in TOKEN_VARIABLES if os.environ.get(name))


def cache_volume(spec: ServerSpec, container_path: str) -> Volume:
    """The host's model cache (``server.options.model_cache``, default ~/.cache/huggingface)."""
    raw = spec.options.get("model_cache") or os.environ.get("HF_HOME") or "~/.cache/huggingface"
    # Created when the container starts (run_container), not here: specs stay pure.
    return Volume(str(Path(str(raw)).expanduser().resolve()), container_path, "rw")


def require_model(spec: ServerSpec) -> str:
    if not spec.model:
        raise ServerStartError(
            f"server kind {spec.kind!r} needs a model: --latency-model ORG/NAME "
            "(or server: {model: ...} in the spec file)"
        )
    return spec.model


def gpu_server(
    spec: ServerSpec,
    *,
    image: str,
    command: Sequence[str],
    listen: Listen,
    cache_path: str,
    environment: dict[str, str] | None = None,
    **container: Any,
) -> ContainerSpec:
    """A GPU server's container: the kind's command plus what they all share."""
    return ContainerSpec(
        kind=spec.kind,
        image=spec.image or image,
        command=(*command, *extra_args(spec)),
        listen=listen,
        served_model=require_model(spec),
        environment={**(environment or {}), **extra_env(spec)},
        secret_environment=token_names(),
        gpus=spec.gpus or "all",
        volumes=(cache_volume(spec, cache_path),),
        startup_timeout_s=startup_timeout(spec, FIRST_START_S),
        **container,
    )
