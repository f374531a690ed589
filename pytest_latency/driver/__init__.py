"""Open-loop streaming driver: offer a plan to an OpenAI-compatible endpoint, record all.

>>> result = run_plan(plan, Target("http://127.0.0.1:8000", model="tiny"))  # doctest: +SKIP
>>> len(result.records) == len(plan.requests)  # doctest: +SKIP
True

Instants in records are seconds on the client's monotonic clock from time zero; TTFT
and e2e are measured from each request's planned send time (docs/metrics.md).
"""

from __future__ import annotations

from pytest_latency.driver.client import DriveResult, Run, RunAborted, RunInterrupted
from pytest_latency.driver.entry import drive, run_plan
from pytest_latency.driver.limits import ResponseLimits
from pytest_latency.driver.target import Target, make_client
from pytest_latency.driver.tracecontext import ClientSpans
from pytest_latency.records import RequestRecord, Status

__all__ = (
    "ClientSpans",
    "DriveResult",
    "RequestRecord",
    "ResponseLimits",
    "Run",
    "RunAborted",
    "RunInterrupted",
    "Status",
    "Target",
    "drive",
    "make_client",
    "run_plan",
)
