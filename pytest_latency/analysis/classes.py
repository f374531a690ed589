"""Service classes side by side (workload ``classes:``, docs/service-classes.md).

Per class: how many requests it offered, completed and failed, its TTFT and e2e
percentiles counted as verdicts count them (failed requests unbounded), and its goodput
for each attainment objective that applies to it (unscoped, or scoped to that class).
Objectives with ``class: NAME`` decide each class on its own; this summary shows the
classes together, so "premium held while batch absorbed the spike" is one glance.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from pytest_latency.analysis.attainment import phase_goodput
from pytest_latency.analysis.samples import metric_samples, sent_records
from pytest_latency.records import RequestRecord
from pytest_latency.spec.model import Objective, Workload

CLASS_PERCENTILES = (50.0, 95.0, 99.0)
CLASS_METRICS = ("ttft", "e2e")


def _percentiles(records: Sequence[RequestRecord], metric: str) -> dict[str, float | None]:
    values = metric_samples(records, metric)
    if values.size == 0:
        return {f"p{p:g}": None for p in CLASS_PERCENTILES}
    found = np.percentile(values, CLASS_PERCENTILES, method="inverted_cdf")
    return {
        f"p{p:g}": float(v) if np.isfinite(v) else None
        for p, v in zip(CLASS_PERCENTILES, found, strict=True)
    }


def class_summaries(
    records: Sequence[RequestRecord], workload: Workload, objectives: Sequence[Objective]
) -> list[dict[str, Any]]:
    """One entry per workload class (none without classes), in the workload's order."""
    rows = []
    for service_class in workload.classes:
        mine = [r for r in records if r.service_class == service_class.name]
        sent = sent_records(mine)
        applying = [o for o in objectives if o.service_class in (None, service_class.name)]
        rows.append(
            {
                "name": service_class.name,
                "share": service_class.share * 100,
                "priority": service_class.priority,
                "offered": len(mine),
                "completed": sum(1 for r in sent if r.ok),
                "failed": sum(1 for r in sent if not r.ok),
                "retried": sum(1 for r in sent if r.attempts > 1),
                "percentiles_s": {m: _percentiles(sent, m) for m in CLASS_METRICS},
                "goodput": [
                    row.to_json() for row in phase_goodput(sent, applying, workload.duration_s)
                ],
            }
        )
    return rows


def class_lines(rows: Sequence[dict[str, Any]]) -> list[str]:
    """The terminal's lines: one per class."""
    lines = []
    for row in rows:
        ttft = row["percentiles_s"]["ttft"]
        shown = ", ".join(
            f"{name} {'unbounded' if value is None else f'{value * 1e3:.0f}ms'}"
            for name, value in ttft.items()
        )
        lines.append(
            f"class {row['name']} ({row['share']:g}%, priority {row['priority']}):"
            f" {row['offered']} offered, {row['completed']} completed, {row['failed']} failed;"
            f" ttft {shown}"
        )
    return lines
