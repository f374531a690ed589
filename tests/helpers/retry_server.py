"""Scripts for a server that answers 429 to chosen first attempts (the retry tests)."""

from __future__ import annotations

from collections.abc import Callable

from tests.helpers.scripted_server import DONE, Script, ScriptedServer, Step, chat_chunk

OK = Script(steps=(Step(0, chat_chunk(role="assistant")), Step(0.005, chat_chunk("hi") + DONE)))


def rejecting(
    server: ScriptedServer, every: int, headers: tuple[tuple[str, str], ...]
) -> Callable[[int], Script]:
    """429 with ``headers`` to the first attempt of every ``every``-th request (by trace id:
    a retry carries the same ``traceparent``), 200 to everything else."""
    first_seen: dict[str, int] = {}

    def script(_index: int) -> Script:
        exchange = server.exchanges[-1]  # the exchange is logged before its script
        trace = exchange.trace_id
        if not exchange.headers.get("traceparent", "").endswith("-01"):
            return OK  # not a measured request: the plugin's preflight sends it unsampled
        retry = trace in first_seen
        order = first_seen.setdefault(trace, len(first_seen))
        if not retry and order % every == 0:
            return Script(status=429, steps=(Step(0, b'{"error": "over share"}'),), headers=headers)
        return OK

    return script
