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
    from pytest_latency.analysis.result import LatencyResult
    from pytest_latency.analysis.verdict import ObjectiveResult, Verdict
    from pytest_latency.errors import (
        LatencyComparisonWarning,
        LatencyError,
        LatencyInconclusiveWarning,
        LatencyInfrastructureError,
        LatencyObjectiveError,
        LatencyRunInvalid,
        LatencyUndecidableWarning,
        RunFileError,
        ServerNotReady,
        ServerStartError,
        SpecError,
        UndecidablePlan,
    )
    from pytest_latency.plugin.fixtures import LatencyFixture
    from pytest_latency.plugin.paired import PairedComparison
    from pytest_latency.records import RequestRecord, Status
    from pytest_latency.servers.base import ServerInfo
    from pytest_latency.spec.model import (
        Objective,
        Phase,
        Prefix,
        Retry,
        ServerSpec,
        ServiceClass,
        Sessions,
        Workload,
        burst,
        objective,
        steady,
    )
    from pytest_latency.spec.prompts import prompt_dataset
    from pytest_latency.spec.trace import trace_phase

__version__ = "0.1.0"

__all__ = (
    "LatencyComparisonWarning",
    "LatencyError",
    "LatencyFixture",
    "LatencyInconclusiveWarning",
    "LatencyInfrastructureError",
    "LatencyObjectiveError",
    "LatencyResult",
    "LatencyRunInvalid",
    "LatencyUndecidableWarning",
    "Objective",
    "ObjectiveResult",
    "PairedComparison",
    "Phase",
    "Prefix",
    "RequestRecord",
    "Retry",
    "RunFileError",
    "ServerInfo",
    "ServerNotReady",
    "ServerSpec",
    "ServerStartError",
    "ServiceClass",
    "Sessions",
    "SpecError",
    "Status",
    "UndecidablePlan",
    "Verdict",
    "Workload",
    "__version__",
    "burst",
    "objective",
    "prompt_dataset",
    "quantile_bounds",
    "steady",
    "trace_phase",
)

# Where each public name lives (kept in step with the TYPE_CHECKING imports above).
_HOMES: dict[str, str] = {
    "quantile_bounds": "pytest_latency.analysis.percentiles",
    "ObjectiveResult": "pytest_latency.analysis.verdict",
    "Verdict": "pytest_latency.analysis.verdict",
    **dict.fromkeys(
        (
            "LatencyComparisonWarning",
            "LatencyError",
            "LatencyInconclusiveWarning",
            "LatencyInfrastructureError",
            "LatencyObjectiveError",
            "LatencyRunInvalid",
            "LatencyUndecidableWarning",
            "RunFileError",
            "ServerNotReady",
            "ServerStartError",
            "SpecError",
            "UndecidablePlan",
        ),
        "pytest_latency.errors",
    ),
    "LatencyFixture": "pytest_latency.plugin.fixtures",
    "PairedComparison": "pytest_latency.plugin.paired",
    "RequestRecord": "pytest_latency.records",
    "Status": "pytest_latency.records",
    "LatencyResult": "pytest_latency.analysis.result",
    "ServerInfo": "pytest_latency.servers.base",
    **dict.fromkeys(
        ("Objective", "Phase", "Prefix", "Retry", "ServerSpec", "ServiceClass", "Sessions"),
        "pytest_latency.spec.model",
    ),
    **dict.fromkeys(("Workload", "burst"), "pytest_latency.spec.model"),
    "objective": "pytest_latency.spec.model",
    "steady": "pytest_latency.spec.model",
    "prompt_dataset": "pytest_latency.spec.prompts",
    "trace_phase": "pytest_latency.spec.trace",
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
