"""The run's environment: host facts, GPUs from nvidia-smi when present, the server's version."""

from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path
from typing import Any

import pytest

from pytest_latency.servers.base import ServerInfo
from pytest_latency.servers.environment import describe_environment, gpus, host_facts, parse_gpus

SMI_OUTPUT = "NVIDIA H100 80GB HBM3, 81559, 550.54.15\nNVIDIA H100 80GB HBM3, 81559, 550.54.15\n"


def test_nvidia_smi_lines_become_one_gpu_each() -> None:
    found = parse_gpus(SMI_OUTPUT + "garbage line\n\n")
    assert (
        found == [{"name": "NVIDIA H100 80GB HBM3", "memory_mib": 81559, "driver": "550.54.15"}] * 2
    )


def test_gpus_are_read_from_nvidia_smi_on_the_path(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "nvidia-smi"
    script.write_text("")
    script.chmod(script.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(tmp_path))
    asked: list[list[str]] = []

    def answers(command: list[str], **kwargs: Any) -> subprocess.CompletedProcess[str]:
        asked.append(command)
        out = "NVIDIA A100-SXM4-40GB, 40960, 535.104.05\n"
        return subprocess.CompletedProcess(command, 0, stdout=out, stderr="")

    assert gpus(answers) == [
        {"name": "NVIDIA A100-SXM4-40GB", "memory_mib": 40960, "driver": "535.104.05"}
    ]
    assert asked == [
        [
            str(script),
            "--query-gpu=name,memory.total,driver_version",
            "--format=csv,noheader,nounits",
        ]
    ]


def test_no_nvidia_smi_means_no_gpus(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert gpus() == []


def test_a_failing_or_hanging_nvidia_smi_means_no_gpus(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "nvidia-smi").write_text("")
    (tmp_path / "nvidia-smi").chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))

    def hangs(*args: Any, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        raise subprocess.TimeoutExpired("nvidia-smi", 5.0)

    def fails(*args: Any, **kwargs: Any) -> subprocess.CompletedProcess[str]:
        return subprocess.CompletedProcess(args, 9, stdout=SMI_OUTPUT, stderr="NVML error")

    assert gpus(hangs) == []
    assert gpus(fails) == []


def test_host_facts_name_cores_and_memory() -> None:
    facts = host_facts()
    assert facts["cpus"] == os.cpu_count()
    assert facts["memory_bytes"] is None or facts["memory_bytes"] > 2**20


def test_the_environment_carries_the_contract_fields_and_the_server_version() -> None:
    server = ServerInfo(
        kind="vllm", url="http://127.0.0.1:1", model="m",
        details={"version": "0.32.0", "image": "vllm/vllm-openai:v0.32.0", "image_id": "sha256:ab"},
    )  # fmt: skip
    environment = describe_environment(server)
    assert environment["plugin_version"]
    assert environment["python"].count(".") == 2
    assert environment["host"]["cpus"] == os.cpu_count()
    assert environment["server"]["version"] == "0.32.0"
    assert environment["server"]["image"] == "vllm/vllm-openai:v0.32.0"
    assert environment["model"] == "m"


def test_a_server_that_said_nothing_has_a_null_version() -> None:
    environment = describe_environment(ServerInfo(kind="url", url="http://127.0.0.1:1", model="m"))
    assert environment["server"]["version"] is None
    assert environment["server"]["image"] is None
