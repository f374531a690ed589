"""Closed-loop (``arrival: concurrent``) users: each sends its next request when the
previous one ended, plus its think time, until the phase ends.

There are no planned send times: a request's ``intended_s`` is the instant its user
became free (the previous response's end plus the think time; the phase start for the
first), so TTFT and e2e count from there. A slow server slows the users down instead
of queueing more requests, which hides queueing from the client (coordinated omission,
docs/workloads.md "Fixed concurrency"). Requests of the plan's pool that a user never
sent (the phase ended first) are not offered: they have no record.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Iterable, Sequence

from pytest_latency.driver.pacing import sleep_until
from pytest_latency.records import RequestRecord
from pytest_latency.workload.plan import PlannedRequest

logger = logging.getLogger("pytest_latency.driver")
Turn = tuple[PlannedRequest, RequestRecord]
#: Sends one request now: request, record, its planned instant (perf_counter ns).
SendNow = Callable[[PlannedRequest, RequestRecord, int], Awaitable[None]]


def users_of(turns: Iterable[Turn]) -> dict[int, list[Turn]]:
    """Each closed-loop user's requests in id order (open-loop requests are left out)."""
    users: dict[int, list[Turn]] = {}
    for request, record in sorted(turns, key=lambda turn: turn[0].id):
        if request.user is not None:
            users.setdefault(request.user, []).append((request, record))
    return users


async def run_user(
    turns: Sequence[Turn],
    window_ns: tuple[int, int],
    think_ns: int,
    t0_ns: int,
    send: SendNow,
    stop_reason: Callable[[str], str | None],
) -> None:
    """One user: from the phase start (``window_ns[0]``), send, wait for the answer and
    the think time, and again, while the phase lasts and no stop rule ended it."""
    start_ns, end_ns = window_ns
    free_ns = start_ns
    for request, record in turns:
        await sleep_until(free_ns)
        if time.perf_counter_ns() >= end_ns or stop_reason(request.phase) is not None:
            return
        record.intended_s = (free_ns - t0_ns) / 1e9
        await send(request, record, free_ns)
        ended_ns = t0_ns + round(record.end_s * 1e9) if record.end_s is not None else None
        free_ns = (ended_ns or time.perf_counter_ns()) + think_ns
    if free_ns < end_ns:
        logger.warning(
            "a user of phase %s sent all %d requests the plan held for it before the phase"
            " ended (requests under 50 ms each): its throughput is a lower bound",
            turns[0][0].phase if turns else "?",
            len(turns),
        )


def offered(records: Iterable[RequestRecord], pool_ids: frozenset[int]) -> list[RequestRecord]:
    """The records of requests that were offered: all but the closed-loop pool's unsent."""
    return [r for r in records if r.sent_s is not None or r.id not in pool_ids]
