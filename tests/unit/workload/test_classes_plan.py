"""Each planned request gets a class by share, from the seed's own stream."""

from __future__ import annotations

import dataclasses
from collections import Counter

from pytest_latency.spec.model import Phase, ServiceClass, Sessions, Workload
from pytest_latency.workload import build_plan

BASE = Workload(phases=(Phase("steady", rate=200, duration_s=10),), seed=3)
CLASSES = (ServiceClass("premium", 0.2, 0), ServiceClass("batch", 0.8, 10))


def test_shares_are_drawn_per_request_and_repeat_with_the_seed() -> None:
    plan = build_plan(dataclasses.replace(BASE, classes=CLASSES))
    counts = Counter(request.service_class for request in plan.requests)
    n = len(plan.requests)  # ~2,000: the premium share is 0.2 +- 0.03 (binomial, 3.4 sigma)
    assert abs(counts["premium"] / n - 0.2) < 0.03 and counts["premium"] + counts["batch"] == n
    again = build_plan(dataclasses.replace(BASE, classes=CLASSES))
    assert [r.service_class for r in again.requests] == [r.service_class for r in plan.requests]
    assert plan.requests[0].blank_record().service_class == plan.requests[0].service_class


def test_classes_change_nothing_else_in_the_plan() -> None:
    plain = build_plan(BASE)
    classed = build_plan(dataclasses.replace(BASE, classes=CLASSES))
    strip = [dataclasses.replace(request, service_class=None) for request in classed.requests]
    assert strip == list(plain.requests)
    assert {request.service_class for request in plain.requests} == {None}


def test_a_conversation_stays_in_one_class() -> None:
    workload = dataclasses.replace(
        BASE, phases=(Phase("steady", rate=5, duration_s=10),),
        sessions=Sessions(turns=(2, 4)), classes=CLASSES,
    )  # fmt: skip
    by_session: dict[int | None, set[str | None]] = {}
    for request in build_plan(workload).requests:
        by_session.setdefault(request.session, set()).add(request.service_class)
    assert len(by_session) > 10 and all(len(classes) == 1 for classes in by_session.values())
