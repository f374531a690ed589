"""The exact container each server kind would start: image, command, env, devices, volumes."""

from __future__ import annotations

from pathlib import Path

import pytest

from pytest_latency.servers import ServerStartError, profiles
from pytest_latency.servers.container import ContainerSpec, Volume, gpu_request
from pytest_latency.spec.model import ServerSpec, SpecError


def spec_for(kind: str, **fields: object) -> ContainerSpec:
    return profiles.PROFILES[kind](ServerSpec(kind=kind, **fields))  # type: ignore[arg-type]


def flag(spec: ContainerSpec, name: str) -> str:
    """The value after ``name`` on the command line."""
    return spec.command[spec.command.index(name) + 1]


def test_llamacpp_defaults_to_the_projects_cpu_image_with_its_bundled_model() -> None:
    spec = spec_for("llamacpp")
    assert spec.image == "pytest-latency/llamacpp:local"
    assert flag(spec, "--model") == "/models/tiny-random-llama.gguf"
    assert flag(spec, "--alias") == spec.served_model == "tiny-random-llama"
    assert "--metrics" in spec.command  # requests_deferred is how queueing shows
    assert flag(spec, "--host") == "127.0.0.1"
    assert int(flag(spec, "--port")) == spec.listen.port > 0
    assert flag(spec, "--parallel") == "4"
    assert spec.network == "host"
    assert spec.docker_kwargs() == {"network": "host"}
    assert spec.gpus is None and spec.volumes == ()
    assert spec.health_path == "/health"
    assert not spec.exports_spans


def test_llamacpp_on_gpus_uses_the_cuda_image_and_offloads_every_layer() -> None:
    spec = spec_for("llamacpp", gpus="all", model="/models/qwen.gguf")
    assert spec.image == "ghcr.io/ggml-org/llama.cpp:server-cuda"
    assert flag(spec, "--model") == "/models/qwen.gguf"  # not a host file: inside the image
    assert flag(spec, "--n-gpu-layers") == "999"
    request = spec.docker_kwargs()["device_requests"][0]
    assert request["Count"] == -1 and request["Capabilities"] == [["gpu"]]


def test_llamacpp_mounts_a_host_model_file_read_only(tmp_path: Path) -> None:
    model = tmp_path / "qwen-0.5b-q4.gguf"
    model.write_bytes(b"GGUF")
    spec = spec_for("llamacpp", model=str(model), options={"parallel": 2, "args": ["--seed", "1"]})
    assert spec.volumes == (Volume(str(tmp_path.resolve()), "/models/host", "ro"),)
    assert flag(spec, "--model") == "/models/host/qwen-0.5b-q4.gguf"
    assert spec.served_model == "qwen-0.5b-q4"
    assert flag(spec, "--parallel") == "2"
    assert spec.command[-2:] == ("--seed", "1")


def test_vllm_profile_is_a_gpu_server_exporting_spans_to_our_receiver(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("HF_TOKEN", "hf_secret_value")
    monkeypatch.delenv("HUGGING_FACE_HUB_TOKEN", raising=False)
    receiver = "http://127.0.0.1:4318/v1/traces"
    spec = spec_for(
        "vllm",
        model="Qwen/Qwen2.5-0.5B-Instruct",
        gpus="all",
        options={"otlp_traces_endpoint": receiver, "model_cache": str(tmp_path)},
    )
    assert spec.image == "vllm/vllm-openai:latest"
    assert spec.command[0] == "Qwen/Qwen2.5-0.5B-Instruct"  # `vllm serve MODEL`
    assert flag(spec, "--host") == "127.0.0.1"
    assert flag(spec, "--otlp-traces-endpoint") == receiver
    assert spec.environment["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"] == "http/protobuf"
    assert spec.exports_spans
    kwargs = spec.docker_kwargs()
    assert kwargs["ipc_mode"] == "host" and kwargs["network"] == "host"
    assert kwargs["device_requests"][0]["Count"] == -1
    assert spec.volumes == (Volume(str(tmp_path.resolve()), "/root/.cache/huggingface", "rw"),)
    # The token travels by name; its value is nowhere in the spec or its description.
    assert spec.secret_environment == ("HF_TOKEN",)
    assert "hf_secret_value" not in repr(spec) and "hf_secret_value" not in spec.describe()
    assert "HF_TOKEN=<from environment>" in spec.describe()
    assert spec.health_path == "/health" and spec.startup_timeout_s >= 600


def test_vllm_in_a_bridge_network_does_not_point_at_an_unreachable_loopback() -> None:
    spec = spec_for(
        "vllm",
        model="m",
        options={"network": "bridge", "otlp_traces_endpoint": "http://127.0.0.1:1/v1/traces"},
    )
    assert flag(spec, "--host") == "0.0.0.0" and flag(spec, "--port") == "8000"
    assert "--otlp-traces-endpoint" not in spec.command and not spec.exports_spans
    assert "network" not in spec.docker_kwargs()


def test_tgi_profile() -> None:
    spec = spec_for("tgi", model="HuggingFaceTB/SmolLM2-135M-Instruct", gpus="0,1")
    assert spec.image == "ghcr.io/huggingface/text-generation-inference:latest"
    assert flag(spec, "--model-id") == "HuggingFaceTB/SmolLM2-135M-Instruct"
    assert flag(spec, "--hostname") == "127.0.0.1"
    assert spec.shm_size == "1g" and spec.docker_kwargs()["shm_size"] == "1g"
    assert spec.docker_kwargs()["device_requests"][0]["DeviceIDs"] == ["0", "1"]
    assert spec.volumes[0].container_path == "/data"


def test_sglang_profile() -> None:
    spec = spec_for("sglang", model="Qwen/Qwen2.5-0.5B-Instruct", gpus="1")  # any one GPU
    assert spec.image == "lmsysorg/sglang:latest"
    assert spec.command[:3] == ("python3", "-m", "sglang.launch_server")
    assert flag(spec, "--model-path") == "Qwen/Qwen2.5-0.5B-Instruct"
    assert "--enable-metrics" in spec.command
    assert spec.docker_kwargs()["device_requests"][0]["Count"] == 1
    assert spec.ipc_mode == "host"


def test_ollama_profile_listens_on_loopback_and_keeps_pulled_models() -> None:
    spec = spec_for("ollama", model="llama3.2:1b", options={"num_parallel": 4, "max_queue": 16})
    assert spec.image == "ollama/ollama:latest"
    assert spec.command == ("serve",)
    assert spec.environment["OLLAMA_HOST"] == f"127.0.0.1:{spec.listen.port}"
    assert spec.environment["OLLAMA_NUM_PARALLEL"] == "4"
    assert spec.environment["OLLAMA_MAX_QUEUE"] == "16"
    assert spec.health_path == "/api/version"
    assert spec.volumes == (Volume("pytest-latency-ollama", "/root/.ollama", "rw"),)
    assert spec.gpus is None


def test_sim_from_its_image_keeps_its_options_as_flags() -> None:
    receiver = "http://127.0.0.1:4318/v1/traces"
    spec = spec_for(
        "sim",
        image="pytest-latency/sim:local",
        options={"replicas": 2, "otlp_traces_endpoint": receiver, "startup_timeout": "90s"},
    )
    assert profiles.runs_in_container(ServerSpec(kind="sim", image="x"))
    assert not profiles.runs_in_container(ServerSpec(kind="sim"))
    assert flag(spec, "--replicas") == "2"
    assert flag(spec, "--otlp-traces-endpoint") == receiver
    assert "--startup-timeout" not in spec.command and spec.startup_timeout_s == 90.0
    assert spec.exports_spans


@pytest.mark.parametrize("kind", ["vllm", "tgi", "sglang", "ollama"])
def test_gpu_servers_need_a_model(kind: str) -> None:
    with pytest.raises(ServerStartError, match="needs a model"):
        spec_for(kind, gpus="all")


def test_an_upstream_llamacpp_image_needs_a_model() -> None:
    with pytest.raises(ServerStartError, match="has no bundled model"):
        spec_for("llamacpp", gpus="all")
    with pytest.raises(ServerStartError, match="has no bundled model"):
        spec_for("llamacpp", image="ghcr.io/ggml-org/llama.cpp:server")


def test_bad_llamacpp_settings_are_start_errors() -> None:
    with pytest.raises(ServerStartError, match="parallel must be a positive integer"):
        spec_for("llamacpp", options={"parallel": "two"})


def test_container_only_options_on_the_embedded_process_are_refused() -> None:
    from pytest_latency.servers import sim

    with pytest.raises(ServerStartError, match="apply to the embedded server's image"):
        sim._command(ServerSpec(kind="sim", options={"env": {"A": "1"}}))
    spec = spec_for("sim", image="pytest-latency/sim:local", options={"env": {"A": "1"}})
    assert spec.environment == {"A": "1"} and "--env" not in spec.command


def test_unknown_options_are_named_with_what_is_accepted() -> None:
    with pytest.raises(ServerStartError, match=r"no option slots; it accepts .*parallel"):
        spec_for("llamacpp", options={"slots": 4})
    with pytest.raises(ServerStartError, match="network must be host or bridge"):
        spec_for("llamacpp", options={"network": "overlay"})


@pytest.mark.parametrize(
    ("gpus", "expected"),
    [
        ("all", {"Count": -1}),
        ("2", {"Count": 2}),
        ("0, 3", {"DeviceIDs": ["0", "3"]}),
        ("device=1", {"DeviceIDs": ["1"]}),
        ("device=0,1", {"DeviceIDs": ["0", "1"]}),
        ("GPU-3b1f-77", {"DeviceIDs": ["GPU-3b1f-77"]}),
    ],
)
def test_gpu_requests(gpus: str, expected: dict[str, object]) -> None:
    request = gpu_request(gpus)
    assert {key: request[key] for key in expected} == expected
    assert request["Capabilities"] == [["gpu"]]


@pytest.mark.parametrize("gpus", ["", "some", "0,,1", "-1", "GPU-", "0", "device="])
def test_bad_gpus_are_a_spec_error(gpus: str) -> None:
    with pytest.raises(SpecError, match="gpus must be all, a count, or device ids"):
        ServerSpec(kind="vllm", gpus=gpus)
