"""An objective with ``class:`` is decided on that class's requests only; the per-class
summary shows the classes side by side."""

from __future__ import annotations

import numpy as np

from pytest_latency.analysis.classes import class_summaries
from pytest_latency.analysis.objectives import in_scope
from pytest_latency.records import RequestRecord, Status
from pytest_latency.spec.model import Phase, ServiceClass, Workload, objective

WORKLOAD = Workload(
    phases=(Phase("spike", rate=10, duration_s=10),),
    classes=(ServiceClass("premium", 0.5, 0), ServiceClass("batch", 0.5, 10)),
)


def records() -> list[RequestRecord]:
    rows = []
    for i in range(40):
        name = "premium" if i % 2 == 0 else "batch"
        ttft = 0.05 if name == "premium" else 2.0 + i * 0.01
        row = RequestRecord(i, "spike", i * 0.1, 10, sent_s=i * 0.1, service_class=name)
        row.first_token_s, row.end_s = row.intended_s + ttft, row.intended_s + ttft + 0.1
        row.status, row.output_tokens, row.itl_s = Status.OK, 4, np.full(3, 0.03)
        rows.append(row)
    rows[1].status, rows[1].first_token_s = Status.REJECTED, None  # one batch request failed
    return rows


def test_a_class_objective_sees_only_its_class() -> None:
    scoped = in_scope(records(), objective("ttft", p=95, max="1s", service_class="premium"))
    assert len(scoped) == 20 and {r.service_class for r in scoped} == {"premium"}
    assert len(in_scope(records(), objective("ttft", p=95, max="1s"))) == 40


def test_the_class_summary_counts_and_percentiles_each_class() -> None:
    gate = objective("attainment", ttft="1s", min="90%", service_class="premium")
    premium, batch = class_summaries(records(), WORKLOAD, [gate])
    assert (premium["offered"], premium["completed"], premium["failed"]) == (20, 20, 0)
    assert (batch["offered"], batch["completed"], batch["failed"]) == (20, 19, 1)
    assert abs(premium["percentiles_s"]["ttft"]["p95"] - 0.05) < 1e-9
    assert batch["percentiles_s"]["ttft"]["p99"] is None  # the failed one is unbounded
    assert premium["goodput"][0]["good"] == 20 and batch["goodput"] == []


def test_the_plan_check_counts_only_the_class_share() -> None:
    import dataclasses

    from pytest_latency.analysis.planning import planned_samples
    from pytest_latency.workload import build_plan

    plan = build_plan(dataclasses.replace(WORKLOAD, classes=(
        ServiceClass("premium", 0.2, 0), ServiceClass("batch", 0.8, 10),
    )))  # fmt: skip
    premium = planned_samples(plan, objective("ttft", p=95, max="1s", service_class="premium"))
    everyone = planned_samples(plan, objective("ttft", p=95, max="1s"))
    assert everyone == len(plan.requests)
    assert premium == sum(1 for r in plan.requests if r.service_class == "premium") < everyone / 2
