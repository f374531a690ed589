"""How many requests a server holds right now (waiting, running), for drains.

From its Prometheus ``/metrics``, except SGLang: its scheduler refreshes those gauges
only when it logs stats, on prefill batches and every ``decode_log_interval`` (40)
decode steps (``srt/observability/scheduler_metrics_mixin.py``), so after the last
request a ``running`` gauge can stay above zero on an idle server and a drain would
wait out its timeout. SGLang's ``GET /v1/loads`` is computed per call
(``{"loads": [{"num_running_reqs", "num_waiting_reqs", ...}]}``, one entry per
data-parallel rank): it is used instead, and without it (older versions) SGLang's
gauges are not trusted at all (no values: the caller falls back to the client's own
view, every request ended).
"""

from __future__ import annotations

import json
import time
from typing import Any

import httpx

from pytest_latency.driver.bounded_read import AnswerUnreadable, read_bounded
from pytest_latency.telemetry.prometheus import detect_kind, parse_exposition

LOADS_PATH = "/v1/loads"


def parse_loads(document: Any) -> dict[str, float] | None:
    """``waiting`` and ``running`` summed over SGLang's ranks; None if not that shape."""
    loads = document.get("loads") if isinstance(document, dict) else None
    if not isinstance(loads, list) or not loads:
        return None
    waiting = running = 0.0
    for rank in loads:
        if not isinstance(rank, dict):
            return None
        try:
            waiting += float(rank["num_waiting_reqs"])
            running += float(rank["num_running_reqs"])
        except (KeyError, TypeError, ValueError):
            return None
    return {"waiting": waiting, "running": running}


def _bounded_get(client: httpx.Client, url: str) -> tuple[int, bytes]:
    """``GET url``: its status and body, read bounded (1 MiB, decoded too, 5 s)."""
    with client.stream("GET", url) as response:
        return response.status_code, read_bounded(response, time.monotonic() + 5.0)


def queue_depth(client: httpx.Client, base_url: str) -> dict[str, float]:
    """The server's ``waiting``/``running`` now (either may be absent; {} when unknown).

    Never raises for a missing, refused or malformed answer.
    """
    base = base_url.rstrip("/")
    try:
        text = _bounded_get(client, f"{base}/metrics")[1].decode("utf-8", errors="replace")
        kind = detect_kind(text)
        values = parse_exposition(text, kind) if kind else {}
    except (httpx.HTTPError, ValueError, AnswerUnreadable):
        return {}
    if kind != "sglang":
        return values
    try:
        status, body = _bounded_get(client, f"{base}{LOADS_PATH}")
        live = parse_loads(json.loads(body)) if status == 200 else None
    except (httpx.HTTPError, ValueError, RecursionError, AnswerUnreadable):
        live = None
    return live if live is not None else {}
