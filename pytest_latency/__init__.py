"""pytest-latency: test LLM serving endpoints against latency objectives.

Public API. Everything else is private and may change without notice.
"""

from __future__ import annotations

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
