"""A request of a service class sends its class's headers and vLLM's priority field."""

from __future__ import annotations

import dataclasses

from pytest_latency.driver import Target, run_plan
from pytest_latency.spec.model import ServiceClass
from tests.helpers.retry_server import OK
from tests.helpers.scripted_server import ScriptedServer, plan_at

CLASSES = (
    ServiceClass("premium", 0.5, 0, (("X-Priority", "high"),)),
    ServiceClass("batch", 0.5, None, (("x-tenant", "nightly"),)),
)


def test_each_request_carries_its_class_headers_priority_and_record_class(
    server: ScriptedServer,
) -> None:
    server.route("m", OK)
    plan = plan_at([0.0, 0.01, 0.02, 0.03])
    workload = dataclasses.replace(plan.workload, classes=CLASSES)
    names = ["premium", "batch", "premium", "batch"]
    requests = tuple(
        dataclasses.replace(request, service_class=name)
        for request, name in zip(plan.requests, names, strict=True)
    )
    plan = dataclasses.replace(plan, workload=workload, requests=requests)
    records = {r.trace_id: r for r in run_plan(plan, Target(server.url, "m")).records}
    assert len(server.exchanges) == 4
    for exchange in server.exchanges:
        record = records[exchange.trace_id]
        assert record.ok
        if record.service_class == "premium":
            assert exchange.headers["x-priority"] == "high"
            assert exchange.body["priority"] == 0
        else:
            assert exchange.headers["x-tenant"] == "nightly"
            assert "priority" not in exchange.body and "x-priority" not in exchange.headers
