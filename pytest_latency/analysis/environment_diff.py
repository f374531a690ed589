"""Warnings when two runs ran in different places (``pytest-latency compare``).

A baseline from one GPU and a candidate from another, another server version or
another model are not the same experiment: the numbers still compare, with a warning
that says what differed. Runs saved before ``environment`` existed are not warned about
(unknown is not different).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ("environment_differences",)


def _gpus(environment: Mapping[str, Any]) -> tuple[str, ...] | None:
    gpus = environment.get("gpus")
    if not isinstance(gpus, Sequence):
        return None
    return tuple(sorted(str(gpu.get("name")) for gpu in gpus if isinstance(gpu, Mapping)))


def _server_version(environment: Mapping[str, Any]) -> str | None:
    server = environment.get("server")
    version = server.get("version") if isinstance(server, Mapping) else None
    return str(version) if version is not None else None


def _model(environment: Mapping[str, Any], run: Mapping[str, Any]) -> str | None:
    model = environment.get("model")
    if model is None and isinstance(run.get("server"), Mapping):
        model = run["server"].get("model")
    return str(model) if model else None


def _gpu_names(gpus: tuple[str, ...]) -> str:
    return ", ".join(gpus) if gpus else "no GPU"


def environment_differences(a: Mapping[str, Any], b: Mapping[str, Any]) -> list[str]:
    """What differs between run documents ``a`` and ``b``: GPUs, server version, model."""
    a_env, b_env = a.get("environment"), b.get("environment")
    if not isinstance(a_env, Mapping) or not isinstance(b_env, Mapping):
        return []
    warnings = []
    a_gpus, b_gpus = _gpus(a_env), _gpus(b_env)
    if a_gpus is not None and b_gpus is not None and a_gpus != b_gpus:
        warnings.append(f"different GPUs: A {_gpu_names(a_gpus)}; B {_gpu_names(b_gpus)}")
    a_version, b_version = _server_version(a_env), _server_version(b_env)
    if a_version != b_version:
        warnings.append(
            f"different server versions: A {a_version or 'unknown'}; B {b_version or 'unknown'}"
        )
    a_model, b_model = _model(a_env, a), _model(b_env, b)
    if a_model != b_model:
        warnings.append(f"different models: A {a_model or 'unknown'}; B {b_model or 'unknown'}")
    return warnings
