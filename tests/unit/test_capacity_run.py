"""Live capacity probes against the embedded server: the budget holds, every offered
request keeps one record, and a decided probe stops sending (cancelled, with why)."""

from __future__ import annotations

import time

from pytest_latency.capacity_run import LiveSearch, search_timeline
from pytest_latency.driver import Target
from pytest_latency.records import STOPPED_EARLY, Status
from pytest_latency.sim import SimServer
from pytest_latency.sim.config import SimConfig
from pytest_latency.spec import objective
from pytest_latency.spec_capacity import CapacitySpec, template_workload

SIM = SimConfig(replicas=1, max_batch=32)


def test_the_budget_holds_warm_ups_and_drains_included() -> None:
    spec = CapacitySpec(rates=(5.0, 400.0), probe_s=3.0, budget_s=9.0)
    template = template_workload(spec, seed=3, input_tokens=(20, 20), output_tokens=20)
    criteria = [objective("attainment", ttft="500ms", min="90%")]
    with SimServer(SIM) as server:
        search = LiveSearch(
            spec, template, criteria, Target(server.url, model="sim-tiny"), confidence=0.99
        )
        started = time.monotonic()
        found = search.search()
        took = time.monotonic() - started
    # The deadline cancels a probe that would run over; a little slack for the last
    # records' bookkeeping after the cancel, not for another probe.
    assert found.spent_s <= spec.budget_s + 0.5 and took <= spec.budget_s + 1.0, took
    assert found.probes and len(search.runs) == len(found.probes)
    assert all(probe.cost_s > spec.warmup_s for probe in found.probes)
    for run in search.runs:  # exactly one record per planned request, unsent ones say why
        planned = sum(round(p.rate * p.duration_s) for p in run.workload.phases)
        assert abs(len(run.records) - planned) <= 3 * planned**0.5 + 5
        for record in run.records:
            if record.status is Status.CANCELLED and record.sent_s is None:
                assert record.error is not None and record.error.startswith(STOPPED_EARLY)
    records, phases = search_timeline(search.runs)
    assert [record.id for record in records] == list(range(len(records)))
    assert {record.phase for record in records} <= {phase.name for phase in phases}


def test_a_decided_probe_stops_at_the_first_look() -> None:
    # 400/s against a server of ~45/s with an unbounded queue: it runs away, and the
    # probe fails before its end.
    spec = CapacitySpec(rates=(400.0, 800.0), probe_s=4.0, budget_s=30.0)
    template = template_workload(spec, seed=4, input_tokens=(20, 20), output_tokens=20)
    criteria = [objective("ttft", p=90, max="300ms")]
    with SimServer(SimConfig(replicas=1, max_batch=32, max_queue=100_000)) as server:
        search = LiveSearch(
            spec, template, criteria, Target(server.url, model="sim-tiny"), confidence=0.99
        )
        result = search.probe(400.0, (0.5, 1.0), (0.999, 0.999))
    assert result.outcome == "fail" and result.stopped_early, result
    assert result.drain == "server queue empty"
    cancelled = [r for r in search.runs[0].records if r.error and "probe at 400/s" in r.error]
    assert cancelled and all(r.sent_s is None for r in cancelled)
