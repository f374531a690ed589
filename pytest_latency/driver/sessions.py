"""Multi-turn sessions on the driver: each later turn follows the answer to the one before.

The plan holds every turn (workload/sessions.py); the launcher sends only first turns
at their planned instants. A session's later turns are then sent by :func:`run_session`:
turn ``k`` is planned at turn ``k - 1``'s end plus the think time, its record's
``intended_s`` becomes that instant (its latency is measured from there), and it
carries the whole conversation so far: every earlier question and the answers actually
received. A turn that fails ends its session: the turns left are recorded as
``cancelled``, with an error that says which turn failed and how.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Iterable, Sequence

from pytest_latency.driver.pacing import sleep_until
from pytest_latency.records import RequestRecord
from pytest_latency.workload.plan import PlannedRequest

Turn = tuple[PlannedRequest, RequestRecord]
#: (role, text) of each earlier message of the conversation.
Message = tuple[str, str]
#: Sends one turn now: request, record, planned instant (ns), history, answer pieces.
SendTurn = Callable[
    [PlannedRequest, RequestRecord, int, Sequence[Message], list[str]], Awaitable[None]
]
SESSION_ENDED = "session ended: "


def later_turns(turns: Sequence[Turn]) -> dict[int, list[Turn]]:
    """Each session's turns after the first, in turn order: the turns that follow answers.

    Only sessions whose first turn is in ``turns``; other turns (a replayed trace's, a
    worker's share without the start) are sent at their planned instants.
    """
    starts = {request.session for request, _ in turns if request.turn == 0}
    sessions: dict[int, list[Turn]] = {}
    for request, record in turns:
        session = request.session
        if session is not None and session in starts and request.turn:
            sessions.setdefault(session, []).append((request, record))
    for later in sessions.values():
        later.sort(key=lambda turn: turn[0].turn or 0)
    return sessions


def first_sends(turns: Iterable[Turn], later: dict[int, list[Turn]]) -> list[Turn]:
    """What the launcher sends at planned instants: all but the ``later`` turns."""
    following = {id(record) for session in later.values() for _, record in session}
    return [turn for turn in turns if id(turn[1]) not in following]


def _end(remaining: Sequence[Turn], why: str) -> None:
    for _, record in remaining:
        record.error = why  # stays cancelled, saying why it was never sent


def _failure(request: PlannedRequest, record: RequestRecord) -> str:
    detail = f": {record.error}" if record.error else ""
    return f"{SESSION_ENDED}turn {request.turn} ended {record.status.value}{detail}"


async def run_session(
    first: Turn,
    later: Sequence[Turn],
    planned_ns: int,
    think_ns: int,
    t0_ns: int,
    send: SendTurn,
    stop_reason: Callable[[str], str | None],
) -> None:
    """Send ``first`` at ``planned_ns``, then each later turn after the previous answer."""
    request, record = first
    history: list[Message] = []
    answer: list[str] = []
    await send(request, record, planned_ns, tuple(history), answer)
    for index, (next_request, next_record) in enumerate(later):
        if not record.ok:
            _end(later[index:], _failure(request, record))
            return
        history += [("user", request.prompt), ("assistant", "".join(answer).strip())]
        end_ns = t0_ns + round(record.end_s * 1e9) if record.end_s is not None else None
        planned_ns = (end_ns or time.perf_counter_ns()) + think_ns
        next_record.intended_s = (planned_ns - t0_ns) / 1e9
        await sleep_until(planned_ns)
        if (why := stop_reason(next_request.phase)) is not None:  # the phase stopped early
            _end(later[index:], why)
            return
        request, record, answer = next_request, next_record, []
        await send(request, record, planned_ns, tuple(history), answer)
