"""Generation on a Ray cluster: one plan, actors spread over nodes, one start instant.

Mirrors :mod:`.workers` across machines. The plan is partitioned as there (round robin
in schedule order, so each share keeps the arrival process, thinned); each share goes to
one actor, placed through a ``SPREAD`` placement group (one 1-CPU bundle per actor).
A reference-clock actor sits on the driver's node; every worker measures its clock
offset to it (:mod:`pytest_latency.driver.worker_clocks`), warms up and waits. The driver picks
the start instant on its own clock, and each worker converts it to its own.

Actors return raw records, never summaries: finished ones about once a second
(:data:`COLLECT_INTERVAL_S`), the rest when their drive ends. An actor or node that is
lost leaves a ``cancelled`` record, naming it and its node, for each of its requests not
yet collected. Every wait is bounded; actors and the placement group are always removed.

Ray is imported only when a run asks for it (``pip install pytest-latency[ray]``).
"""

from __future__ import annotations

import contextlib
import logging
import signal
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from pytest_latency.driver.client import DriveResult, RunInterrupted
from pytest_latency.driver.client_load import ClientLoad
from pytest_latency.driver.progress import ProgressListener, ScheduleProgress, reporting
from pytest_latency.driver.ray_actor import GeneratorWorker, ReferenceClock, node_id
from pytest_latency.driver.target import Target
from pytest_latency.driver.worker_clocks import ClockOffset, ClockPing, estimate_offset
from pytest_latency.driver.worker_clocks import GeneratorWorker as Reported
from pytest_latency.driver.workers import lost_record, partition
from pytest_latency.records import RequestRecord
from pytest_latency.workload.plan import Plan
from pytest_latency.workload.sessions import session_allowance_s

logger = logging.getLogger("pytest_latency.driver")

READY_TIMEOUT_S = 120.0  # place the actors, measure clocks, warm up
START_MARGIN_S = 0.5  # the start instant is this far after the last worker was ready
END_GRACE_S = 30.0  # beyond the plan's own bound, for shipping records back
COLLECT_INTERVAL_S = 1.0  # how often finished records are fetched from the actors
CALL_TIMEOUT_S = 10.0  # bound on one small call to an actor
WORKER_NAME = "pytest-latency-worker-{index}"


@dataclass
class _Actor:
    index: int
    part: Plan
    handle: Any
    node: str = "unknown node"
    offset: ClockOffset | None = None
    run_ref: Any = None
    records: dict[int, RequestRecord] = field(default_factory=dict)
    finished: bool = False
    elapsed_s: float = 0.0
    failure: str | None = None
    client: ClientLoad | None = None  # what driving cost the actor (its loop monitor)

    @property
    def name(self) -> str:
        return WORKER_NAME.format(index=self.index)

    @property
    def live(self) -> bool:
        return self.failure is None and not self.finished

    def keep(self, records: list[RequestRecord]) -> None:
        self.records.update((record.id, record) for record in records)

    def lose(self, why: str) -> None:
        self.failure = self.failure or f"Ray actor {self.name} on node {self.node} {why}"


def import_ray() -> Any:
    try:
        import ray
    except ImportError:
        raise RuntimeError("--latency-ray needs Ray: pip install 'pytest-latency[ray]'") from None
    return ray


@contextlib.contextmanager
def connected(ray: Any, address: str) -> Iterator[None]:
    """Connect to the cluster (unless already connected); keep our signal handlers.

    ``ray.init`` installs its own SIGTERM (and SIGINT) handlers in a driver; those would
    end the process without the records (see :mod:`pytest_latency.plugin.interrupts`).
    """
    ours = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    connect = not ray.is_initialized()
    if connect:
        try:
            ray.init(address=address, log_to_driver=False, logging_level=logging.WARNING)
        finally:
            for sig, handler in ours.items():
                if handler is not None:
                    signal.signal(sig, handler)
    try:
        yield
    finally:
        if connect:
            ray.shutdown()
            for sig, handler in ours.items():
                if handler is not None:
                    signal.signal(sig, handler)


def run_ray_workers(
    plan: Plan,
    target: Target,
    address: str,
    workers: int | None = None,
    progress: ProgressListener | None = None,
) -> DriveResult:
    """Drive ``plan`` from Ray actors (``workers``, default one per available CPU).

    Ctrl-C (or SIGTERM) raises :class:`RunInterrupted` with every record: the collected
    ones as they were, the rest ``cancelled``.
    """
    ray = import_ray()
    run = _ScaledRun()
    with connected(ray, address):
        try:
            try:
                _run(ray, plan, target, workers, run, progress)
            finally:
                _stop(ray, run.pool, run.extras)
        except KeyboardInterrupt as exc:
            raise RunInterrupted(_merge(plan, run.pool, run.t0, interrupted=True)) from exc
    return _merge(plan, run.pool, run.t0)


@dataclass
class _ScaledRun:
    pool: list[_Actor] = field(default_factory=list)
    extras: list[Any] = field(default_factory=list)  # the placement group, the reference
    t0: int = 0  # time zero on the driver's perf_counter_ns, once chosen


def _run(
    ray: Any,
    plan: Plan,
    target: Target,
    workers: int | None,
    run: _ScaledRun,
    progress: ProgressListener | None,
) -> None:
    """Place, synchronise and start the actors, then collect their records."""
    count = workers or max(1, int(ray.available_resources().get("CPU", 1)))
    parts = partition(plan, count)
    run.extras.append(_placement_group(ray, len(parts)))
    reference = _reference_clock(ray)
    run.extras.append(reference)
    _start_actors(ray, parts, target, run.extras[0], run.pool)
    driver = _driver_offset(ray, reference)
    _prepare(ray, run.pool, reference, driver)
    run.t0 = time.perf_counter_ns() + round(START_MARGIN_S * 1e9)
    for actor in run.pool:
        if actor.live:
            actor.handle.start.remote(run.t0 + driver.offset_ns)  # on the reference clock
    schedule = ScheduleProgress([r.intended_s for r in plan.requests], plan.duration_s)
    schedule.t0_ns = run.t0
    bound_s = START_MARGIN_S + plan.duration_s + plan.workload.timeout_s + END_GRACE_S
    bound_s += session_allowance_s(plan.workload)  # later turns run past the phases
    with reporting(schedule, progress):
        _collect(ray, run.pool, bound_s)


def _placement_group(ray: Any, count: int) -> Any:
    from ray.util.placement_group import placement_group

    total = ray.cluster_resources().get("CPU", 0)
    if count > total:  # would wait for CPUs the cluster does not have
        raise RuntimeError(
            f"{count} generator workers need {count} CPUs (1 each); the Ray cluster has "
            f"{total:g}: lower --latency-ray-workers"
        )
    group = placement_group([{"CPU": 1}] * count, strategy="SPREAD")
    try:
        ray.get(group.ready(), timeout=READY_TIMEOUT_S)
    except ray.exceptions.GetTimeoutError:
        ray.util.remove_placement_group(group)
        offered = ray.available_resources().get("CPU", 0)
        raise RuntimeError(
            f"the Ray cluster could not place {count} generator workers (1 CPU each) within "
            f"{READY_TIMEOUT_S:g}s; it has {offered:g} CPUs free: lower --latency-ray-workers"
        ) from None
    return group


def _reference_clock(ray: Any) -> Any:
    """The reference clock on the driver's node (on the head node for a ray:// client)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    options: dict[str, Any] = {"num_cpus": 0, "max_restarts": 0}
    if not ray.util.client.ray.is_connected():
        options["scheduling_strategy"] = NodeAffinitySchedulingStrategy(node_id(), soft=False)
    return ray.remote(ReferenceClock).options(**options).remote()


def _start_actors(
    ray: Any, parts: list[Plan], target: Target, group: Any, pool: list[_Actor]
) -> None:
    from ray.util.scheduling_strategies import PlacementGroupSchedulingStrategy

    remote = ray.remote(GeneratorWorker)
    for index, part in enumerate(parts):
        name = WORKER_NAME.format(index=index)
        handle = remote.options(
            name=name,
            num_cpus=1,
            max_restarts=0,
            max_task_retries=0,
            scheduling_strategy=PlacementGroupSchedulingStrategy(
                placement_group=group, placement_group_bundle_index=index
            ),
        ).remote(name, part, target)
        pool.append(_Actor(index, part, handle))


def _driver_offset(ray: Any, reference: Any) -> ClockOffset:
    """The driver's offset to the reference: exactly 0 on its node (one CLOCK_MONOTONIC),
    else (a ray:// client) measured by pings like a worker's."""
    if not ray.util.client.ray.is_connected():
        return ClockOffset(0, 0)
    pings = []
    for _ in range(40):
        sent = time.perf_counter_ns()
        reference_ns = ray.get(reference.now_ns.remote(), timeout=CALL_TIMEOUT_S)
        pings.append(ClockPing(sent, int(reference_ns), time.perf_counter_ns()))
    return estimate_offset(pings)


def _prepare(ray: Any, pool: list[_Actor], reference: Any, driver: ClockOffset) -> None:
    """Nodes, clock offsets, warm-up: each actor that fails any of it is lost."""
    deadline = time.monotonic() + READY_TIMEOUT_S
    steps: tuple[tuple[str, Callable[[_Actor], Any]], ...] = (
        ("node", lambda actor: actor.handle.node.remote()),
        ("clock", lambda actor: actor.handle.measure_clock.remote(reference)),
        ("ready", _drive),
    )
    for step, call in steps:
        refs = {call(actor): actor for actor in pool if actor.failure is None}
        for ref, actor in refs.items():
            try:
                value = ray.get(ref, timeout=max(0.1, deadline - time.monotonic()))
            except ray.exceptions.GetTimeoutError:
                actor.lose(f"not ready within {READY_TIMEOUT_S:g}s ({step})")
                continue
            except ray.exceptions.RayError as error:
                actor.lose(f"failed while getting ready ({step}): {_first_line(error)}")
                continue
            if step == "node":
                actor.node = str(value)
            elif step == "clock":
                actor.offset = value.relative_to(driver)


def _drive(actor: _Actor) -> Any:
    actor.run_ref = actor.handle.drive.remote()
    return actor.handle.wait_ready.remote()


def _collect(ray: Any, pool: list[_Actor], bound_s: float) -> None:
    """Until every drive ended (or ``bound_s`` passed): finished records about once a second."""
    deadline = time.monotonic() + bound_s
    while time.monotonic() < deadline:
        running = {actor.run_ref: actor for actor in pool if actor.live}
        if not running:
            return
        ended, _ = ray.wait(list(running), num_returns=len(running), timeout=COLLECT_INTERVAL_S)
        for ref in ended:
            _finish(ray, running.pop(ref), ref)
        _poll(ray, list(running.values()))
    for actor in pool:
        if actor.live:
            actor.lose(f"did not finish within {bound_s:g}s")


def _finish(ray: Any, actor: _Actor, ref: Any) -> None:
    try:
        result = ray.get(ref, timeout=CALL_TIMEOUT_S)
    except ray.exceptions.RayError as error:
        actor.lose(f"was lost: {_first_line(error)}")
        return
    actor.keep(result.records)
    actor.elapsed_s = result.elapsed_s
    actor.client = result.client
    actor.finished = True


def _poll(ray: Any, actors: list[_Actor]) -> None:
    refs = {actor.handle.collect.remote(): actor for actor in actors}
    for ref, actor in refs.items():
        try:
            actor.keep(ray.get(ref, timeout=CALL_TIMEOUT_S))
        except ray.exceptions.GetTimeoutError:
            continue  # busy: the next round gets them
        except ray.exceptions.RayError as error:
            actor.lose(f"was lost: {_first_line(error)}")


def _stop(ray: Any, pool: list[_Actor], extras: list[Any]) -> None:
    """Fetch what live actors hold (bounded), then remove every actor and the group."""
    refs = {actor.handle.stop.remote(): actor for actor in pool if actor.live}
    for ref, actor in refs.items():
        with contextlib.suppress(ray.exceptions.RayError):
            actor.keep(ray.get(ref, timeout=CALL_TIMEOUT_S))
    for handle in [actor.handle for actor in pool] + extras[1:]:
        with contextlib.suppress(Exception):
            ray.kill(handle, no_restart=True)
    if extras:
        with contextlib.suppress(Exception):
            ray.util.remove_placement_group(extras[0])


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    return f"{type(error).__name__}: {text[0] if text else ''}".strip()


def _merge(plan: Plan, pool: list[_Actor], t0: int, interrupted: bool = False) -> DriveResult:
    """Every planned request's record; ``lost`` counts those of a lost actor (not the
    ones an interrupted run never got back)."""
    records: dict[int, RequestRecord] = {}
    reported: list[Reported] = []
    for actor in pool:
        reason = actor.failure or (
            "run interrupted" if interrupted else f"Ray actor {actor.name} sent no record"
        )
        missing = 0
        for request in actor.part.requests:
            record = actor.records.get(request.id)
            if record is None and request.user is not None:
                continue  # a closed loop's pool request its user never sent: not offered
            if record is None:
                record, missing = lost_record(request, reason), missing + 1
            records[request.id] = record
        lost = missing if actor.failure else 0
        if missing:
            logger.warning("%s: %d requests recorded as cancelled", reason, missing)
        offset = actor.offset or ClockOffset(0, 0)
        reported.append(
            Reported(
                worker=actor.name,
                node=actor.node,
                clock_offset_s=offset.offset_ns / 1e9,
                clock_uncertainty_s=offset.uncertainty_ns / 1e9,
                requests=len(actor.part.requests),
                lost=lost,
            )
        )
    for request in plan.requests:  # a plan with no actor at all (never expected)
        if request.user is None:
            records.setdefault(request.id, lost_record(request, "no Ray actor"))
    now = time.perf_counter_ns()
    started_at = time.time() - (now - t0) / 1e9 if t0 else time.time()
    elapsed = max((actor.elapsed_s for actor in pool), default=0.0)
    if t0 and not elapsed:
        elapsed = (now - t0) / 1e9
    ordered = [records[key] for key in sorted(records)]
    # As with local workers, the busiest actor's load is the run's (generator.client).
    client = ClientLoad.worst([actor.client for actor in pool])
    return DriveResult(ordered, started_at, elapsed, t0, workers=reported, client=client)
