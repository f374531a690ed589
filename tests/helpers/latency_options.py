"""LatencyOptions as tests need them: every field at a quiet default, overridable."""

from __future__ import annotations

from pytest_latency.plugin.options import LatencyOptions
from pytest_latency.spec.model import ServerSpec


def options(**fields: object) -> LatencyOptions:
    defaults: dict[str, object] = {
        "server": ServerSpec(),
        "server_explicit": False,
        "model": None,
        "json_path": None,
        "html_path": None,
        "otlp_receiver": None,
        "otlp_endpoint": None,
        "otlp_grace_s": 1.0,
        "metrics_interval_s": 0.0,
        "max_lag_s": 0.05,
        "trace_url": None,
        "baseline": None,
        "save_baseline": None,
        "seed": None,
        "workers": 1,
        "image": None,
        "gpus": None,
        "inconclusive": "warn",
        "record_content": False,
    }
    return LatencyOptions(**{**defaults, **fields})  # type: ignore[arg-type]
