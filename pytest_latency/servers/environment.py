"""Where a run ran: the run's ``environment`` (docs/environment.md).

The host's facts (CPU model, cores, memory, GPUs) are the machine the plugin runs on,
read once per process: for a server the plugin started (the embedded server or a
container) that is the serving machine; for an existing URL it is the client's. The
server's own version comes from :mod:`.server_version` when the server started; the
image and its id where the plugin started a container.
"""

from __future__ import annotations

import functools
import os
import platform
import shutil
import subprocess
from collections.abc import Callable, Mapping
from typing import Any

from pytest_latency.file_format import plugin_version
from pytest_latency.servers.base import ServerInfo

__all__ = ("describe_environment", "gpus", "host_facts", "parse_gpus")

# One nvidia-smi call; a wedged driver must not hold a run up (it answers in ~50 ms).
NVIDIA_SMI_TIMEOUT_S = 5.0
_GPU_QUERY = "name,memory.total,driver_version"
# Server details copied into ``environment.server`` when the server's start recorded them.
_SERVER_FIELDS = ("version", "build", "version_source", "image", "image_id")


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as cpuinfo:
            for line in cpuinfo:
                name, _, value = line.partition(":")
                if name.strip() in ("model name", "Model", "Hardware") and value.strip():
                    return value.strip()
    except OSError:
        pass
    return None  # platform.processor() would start ``uname -p``: not worth a process


def _memory_bytes() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, ValueError, OSError):
        return None


def _os_text() -> str:
    """``Linux 6.8.0 x86_64``, from ``os.uname`` (``platform.platform`` may start a process)."""
    uname = os.uname()
    return f"{uname.sysname} {uname.release} {uname.machine}"


@functools.cache
def host_facts() -> dict[str, Any]:
    """The host's CPU model, logical cores, memory and operating system."""
    return {
        "cpus": os.cpu_count(),
        "cpu_model": _cpu_model(),
        "memory_bytes": _memory_bytes(),
        "os": _os_text(),
    }


def parse_gpus(text: str) -> list[dict[str, Any]]:
    """``nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader,
    nounits`` output, one GPU a line; lines that do not have the three fields are skipped."""
    found = []
    for line in text.splitlines():
        parts = [part.strip() for part in line.split(",")]
        if len(parts) != 3 or not parts[0]:
            continue
        name, memory, driver = parts
        found.append(
            {
                "name": name,
                "memory_mib": int(memory) if memory.isdigit() else None,
                "driver": driver or None,
            }
        )
    return found


Runner = Callable[..., "subprocess.CompletedProcess[str]"]


def gpus(run: Runner = subprocess.run) -> list[dict[str, Any]]:
    """The host's NVIDIA GPUs from ``nvidia-smi``; empty where it is absent or fails."""
    command = shutil.which("nvidia-smi")
    if command is None:
        return []
    try:
        done = run(
            [command, f"--query-gpu={_GPU_QUERY}", "--format=csv,noheader,nounits"],
            capture_output=True, text=True, timeout=NVIDIA_SMI_TIMEOUT_S, check=False,
        )  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return []
    return parse_gpus(done.stdout) if done.returncode == 0 else []


@functools.cache
def _host_gpus() -> tuple[dict[str, Any], ...]:
    return tuple(gpus())


def describe_environment(server: ServerInfo) -> dict[str, Any]:
    """The run's ``environment``: plugin, Python, host, GPUs, server and model."""
    details: Mapping[str, object] = server.details
    return {
        "plugin_version": plugin_version(),
        "python": platform.python_version(),
        "python_implementation": platform.python_implementation(),
        "host": dict(host_facts()),
        "gpus": [dict(gpu) for gpu in _host_gpus()],
        "server": {
            "kind": server.kind,
            **{name: details.get(name) for name in _SERVER_FIELDS},
        },
        "model": server.model,
    }
