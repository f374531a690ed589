"""pytest-latency: test LLM serving endpoints against latency objectives.

Public API. Everything else is private and may change without notice.

Names load on first access (PEP 562): pytest imports this package for every run that
has the plugin installed, and the analysis behind these names pulls in scipy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pytest_latency.analysis.percentiles import quantile_bounds
    from pytest_latency.analysis.verdict import ObjectiveResult, Verdict
    from pytest_latency.gate import (
        LatencyComparisonWarning,
        LatencyInconclusiveWarning,
        LatencyObjectiveError,
        LatencyRunInvalid,
    )
    from pytest_latency.records import RequestRecord, Status
    from pytest_latency.result import LatencyResult
    from pytest_latency.servers.base import ServerInfo
    from pytest_latency.spec import (
        Objective,
        Phase,
        ServerSpec,
        SpecError,
        Workload,
        burst,
        objective,
        steady,
    )

__version__ = "0.1.0"

__all__ = (
    "LatencyComparisonWarning",
    "LatencyInconclusiveWarning",
    "LatencyObjectiveError",
    "LatencyResult",
    "LatencyRunInvalid",
    "Objective",
    "ObjectiveResult",
    "Phase",
    "RequestRecord",
    "ServerInfo",
    "ServerSpec",
    "SpecError",
    "Status",
    "Verdict",
    "Workload",
    "__version__",
    "burst",
    "objective",
    "quantile_bounds",
    "steady",
)

# Where each public name lives (kept in step with the TYPE_CHECKING imports above).
_HOMES: dict[str, str] = {
    "quantile_bounds": "pytest_latency.analysis.percentiles",
    "ObjectiveResult": "pytest_latency.analysis.verdict",
    "Verdict": "pytest_latency.analysis.verdict",
    "LatencyComparisonWarning": "pytest_latency.gate",
    "LatencyInconclusiveWarning": "pytest_latency.gate",
    "LatencyObjectiveError": "pytest_latency.gate",
    "LatencyRunInvalid": "pytest_latency.gate",
    "RequestRecord": "pytest_latency.records",
    "Status": "pytest_latency.records",
    "LatencyResult": "pytest_latency.result",
    "ServerInfo": "pytest_latency.servers.base",
    **dict.fromkeys(
        ("Objective", "Phase", "ServerSpec", "SpecError", "Workload", "burst", "objective"),
        "pytest_latency.spec",
    ),
    "steady": "pytest_latency.spec",
}


def __getattr__(name: str) -> object:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # later lookups skip this function
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
