"""The run's ``environment`` as one line for report headers (HTML and Markdown).

Read from the run's JSON object, so a report made later from a saved file says the same;
files written before ``environment`` existed give no line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ("environment_line", "gpu_text")

_GIB = 1024**3


def gpu_text(gpus: object) -> str:
    """``2x NVIDIA H100 80GB HBM3 (driver 550.54)``, ``none`` without GPUs."""
    if not isinstance(gpus, Sequence) or not gpus:
        return "none"
    counts: dict[str, int] = {}
    for gpu in gpus:
        if isinstance(gpu, Mapping):
            driver = gpu.get("driver")
            name = f"{gpu.get('name', '?')}" + (f" (driver {driver})" if driver else "")
            counts[name] = counts.get(name, 0) + 1
    return ", ".join(f"{count}x {name}" for name, count in counts.items()) or "none"


def _host(host: Mapping[str, Any]) -> str:
    cpus = host.get("cpus")
    text = f"{cpus} CPUs" if isinstance(cpus, int) else "CPUs unknown"
    if host.get("cpu_model"):
        text += f" ({host['cpu_model']})"
    memory = host.get("memory_bytes")
    if isinstance(memory, int | float):
        text += f", {memory / _GIB:.1f} GiB"
    return text


def environment_line(environment: object) -> str | None:
    """Plugin, Python, host, GPUs, server version and image; None without an environment."""
    if not isinstance(environment, Mapping):
        return None
    host = environment.get("host")
    server = environment.get("server")
    server = server if isinstance(server, Mapping) else {}
    version = server.get("version") or "version unknown"
    parts = [
        f"pytest-latency {environment.get('plugin_version', '?')}",
        f"Python {environment.get('python', '?')}",
        "host " + (_host(host) if isinstance(host, Mapping) else "unknown"),
        f"GPUs {gpu_text(environment.get('gpus'))}",
        f"server {server.get('kind', '?')} {version}"
        + (f" build {server['build']}" if server.get("build") else ""),
    ]
    if server.get("image"):
        image_id = str(server.get("image_id") or "")
        parts.append(f"image {server['image']}" + (f" ({image_id[:19]})" if image_id else ""))
    return "; ".join(parts)
