"""The driver's entry points: :func:`drive` (async) and :func:`run_plan` (sync, workers).

Kept apart from :mod:`.client` (one run in this process) and :mod:`.workers` (a run split
across processes, built on :mod:`.client`), so neither imports the other's caller.
"""

from __future__ import annotations

import httpx

from pytest_latency.driver.client import DriveResult, Run, RunAborted, RunInterrupted
from pytest_latency.driver.loop import drive_to_end
from pytest_latency.driver.progress import ProgressListener, reporting
from pytest_latency.driver.target import Target
from pytest_latency.driver.tracecontext import ClientSpans
from pytest_latency.driver.workers import run_workers
from pytest_latency.workload.plan import Plan


async def drive(
    plan: Plan,
    target: Target,
    *,
    client: httpx.AsyncClient | None = None,
    spans: ClientSpans | None = None,
) -> DriveResult:
    """Offer ``plan`` to ``target`` open loop; one record per planned request.

    A caller's ``client`` is used as it is (and not closed); by default the driver makes
    its own (:func:`.target.make_client`) or uses the hot path. Cancelling the run
    re-raises after every unfinished record was marked ``cancelled``; use
    :class:`.client.Run` to keep the records then.
    """
    return await Run(plan, target, spans).drive(client)


def run_plan(
    plan: Plan,
    target: Target,
    spans: ClientSpans | None = None,
    *,
    workers: int = 1,
    progress: ProgressListener | None = None,
    ray_address: str | None = None,
    ray_workers: int | None = None,
) -> DriveResult:
    """Synchronous :func:`drive`. Ctrl-C raises :class:`RunInterrupted` with the records;
    anything else raised mid-run (a test's timeout from a signal handler) raises
    :class:`RunAborted` with the records and the cause.

    ``spans`` carries the client spans (and their exporter); by default spans are made
    for trace context only and not exported. ``workers > 1`` splits the plan across that
    many processes (:mod:`.workers`); their spans carry trace context but are not exported.
    ``progress`` hears sent/completed counts from a thread of its own (:mod:`.progress`).
    ``ray_address`` drives from Ray actors instead (:mod:`.ray_workers`; ``ray_workers``
    of them, default one per CPU the cluster has free).
    """
    if ray_address is not None:
        if plan.workload.max_concurrency is not None:
            raise ValueError("max_concurrency caps one process: it cannot run on Ray workers")
        from pytest_latency.driver.ray_workers import run_ray_workers  # Ray only when asked

        return run_ray_workers(plan, target, ray_address, ray_workers, progress)
    if workers > 1 and plan.workload.max_concurrency is None:  # one cap needs one process
        return run_workers(plan, target, workers, progress)
    run = Run(plan, target, spans)
    try:
        with reporting(run.progress, progress):
            drive_to_end(run)
    except KeyboardInterrupt as exc:
        raise RunInterrupted(run.result()) from exc
    except BaseException as exc:  # pytest's Failed is one; the records must survive it
        raise RunAborted(run.result(), exc) from exc
    return run.result()
