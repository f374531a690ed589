"""Which service class each planned request belongs to (workload ``classes:``).

Each request (each conversation, with ``sessions:``: a user stays in one class) draws
its class by share from the seed's own random stream, so adding classes changes no
arrival, length or prompt of the plan, and the same seed gives the same classes.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import numpy as np

from pytest_latency.spec.model import Workload
from pytest_latency.workload.plan import PlannedRequest

_CLASS_STREAM = 7  # the seed's random stream for classes (workload/__init__.py has 0-6)


def assign_classes(requests: Sequence[PlannedRequest], workload: Workload) -> list[PlannedRequest]:
    """``requests`` with their ``service_class``; unchanged without classes."""
    if not workload.classes:
        return list(requests)
    rng = np.random.default_rng([workload.seed, _CLASS_STREAM])
    names = [service_class.name for service_class in workload.classes]
    shares = np.array([service_class.share for service_class in workload.classes])
    chosen: dict[tuple[str, int], str] = {}
    assigned = []
    for request in requests:
        owner = ("session", request.session) if request.session is not None else ("id", request.id)
        if owner not in chosen:
            chosen[owner] = names[int(rng.choice(len(names), p=shares / shares.sum()))]
        assigned.append(dataclasses.replace(request, service_class=chosen[owner]))
    return assigned
