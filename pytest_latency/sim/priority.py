"""Priority scheduling and per-class admission of the reference server (docs/sim.md).

``scheduling: priority`` models vLLM's ``--scheduling-policy priority``: the waiting
request with the lowest ``priority`` value goes first (ties by arrival), and when a
replica's slots are all taken while a waiting request has a strictly lower value than
a running one, the running request with the highest value (the latest arrival among
equals) is preempted as vLLM preempts: it goes back to the queue and, when admitted
again, recomputes its prompt and the tokens it had generated (vLLM's recompute
preemption) before its stream continues. Its client sees a pause, not an error.

``class_shares: premium=70,batch=30``: a request naming its class in the class header
is refused with 429 (and ``Retry-After``) when its class already holds its share of
the server's slots plus queue, as gateways that enforce fair shares do.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import TypeVar

T = TypeVar("T")
Rank = Callable[[T], tuple[int, float, int]]  # (priority, arrival, id): lower goes first


def next_waiting(queue: deque[T], scheduling: str, rank: Rank[T]) -> T:
    """The next request to admit: the queue's head (fcfs) or its best by ``rank``."""
    if scheduling != "priority":
        return queue.popleft()
    best = min(queue, key=rank)
    queue.remove(best)
    return best


def to_preempt(running: list[T], slots: int, queue: deque[T], rank: Rank[T]) -> list[T]:
    """Running requests a waiting one outranks by priority (strictly), worst first, while
    the slots are all taken: removed from ``running``; the caller re-queues them."""
    chosen: list[T] = []
    waiting = sorted(queue, key=rank)
    while waiting and running and len(running) >= slots:
        best, worst = waiting[0], max(running, key=rank)
        if rank(best)[0] >= rank(worst)[0]:
            break
        running.remove(worst)
        chosen.append(worst)
        waiting.pop(0)  # that slot is the best waiting one's now
    return chosen


def over_share(service_class: str, shares: dict[str, float], live: int, capacity: int) -> bool:
    """Whether a new request of ``service_class`` would pass its share: ``live`` of its
    requests already queued or running, of ``capacity`` slots plus queue places."""
    share = shares.get(service_class)
    return share is not None and live + 1 > share * capacity
