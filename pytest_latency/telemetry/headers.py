"""Server timings that arrive with the response instead of as spans.

- ``Server-Timing`` (W3C Server Timing): a gateway of your own can send
  ``Server-Timing: queue;dur=12.3, prefill;dur=40, decode;dur=900`` (milliseconds).
  Recognised metric names: ``queue``, ``prefill``, ``decode``, ``ttft``, ``e2e``
  (or ``total``), ``inference``. Others are ignored.
- llama.cpp's ``timings`` object (last streamed chunk): ``prompt_ms`` is prompt
  processing *after the slot was taken* and ``predicted_ms`` generation, so they map to
  prefill and decode; llama.cpp reports no queue wait (``ttft - prompt_ms`` is wait
  plus overhead, not a measured queue wait, and is not computed here).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from pytest_latency.telemetry.timings import ServerTimings

__all__ = ("parse_llamacpp_timings", "parse_server_timing")

_SERVER_TIMING_FIELDS: Mapping[str, str] = {
    "queue": "queue_wait_s",
    "prefill": "prefill_s",
    "decode": "decode_s",
    "ttft": "server_ttft_s",
    "e2e": "server_e2e_s",
    "total": "server_e2e_s",
    "inference": "inference_s",
}


def parse_server_timing(header: str, trace_id: str) -> ServerTimings | None:
    """Timings from a ``Server-Timing`` header value (several headers: join with ``,``).

    The first ``dur`` for a name wins; malformed entries are skipped. ``None`` when no
    recognised metric carries a duration.
    """
    values: dict[str, Any] = {}
    for entry in _split_outside_quotes(header, ","):
        params = _split_outside_quotes(entry, ";")
        if not params:
            continue
        field = _SERVER_TIMING_FIELDS.get(params[0].strip().lower())
        if field is None or field in values:
            continue
        duration = _duration_param(params[1:])
        if duration is not None:
            values[field] = duration / 1000.0
    if not values:
        return None
    return ServerTimings(trace_id=trace_id, source="server-timing", **values)


def parse_llamacpp_timings(timings: Mapping[str, object], trace_id: str) -> ServerTimings | None:
    """Timings from llama.cpp's ``timings`` object; ``None`` when it has none we use.

    ``prompt_tokens`` is ``prompt_n + cache_n`` (tokens processed plus reused from the
    cache), ``completion_tokens`` is ``predicted_n``.
    """
    prompt_ms = _non_negative(timings.get("prompt_ms"))
    predicted_ms = _non_negative(timings.get("predicted_ms"))
    prompt_n = _count(timings.get("prompt_n"))
    cache_n = _count(timings.get("cache_n"))
    result = ServerTimings(
        trace_id=trace_id,
        source="llamacpp:timings",
        prefill_s=None if prompt_ms is None else prompt_ms / 1000.0,
        decode_s=None if predicted_ms is None else predicted_ms / 1000.0,
        prompt_tokens=None if prompt_n is None else prompt_n + (cache_n or 0),
        completion_tokens=_count(timings.get("predicted_n")),
    )
    return None if result.is_empty else result


def _duration_param(params: list[str]) -> float | None:
    for param in params:
        name, sep, value = param.partition("=")
        if sep and name.strip().lower() == "dur":
            return _non_negative(value.strip().strip('"'))
    return None


def _split_outside_quotes(text: str, sep: str) -> list[str]:
    parts: list[str] = []
    current: list[str] = []
    quoted = escaped = False
    for char in text:
        if escaped:
            escaped = False
        elif quoted and char == "\\":
            escaped = True
        elif char == '"':
            quoted = not quoted
        elif char == sep and not quoted:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(char)
    parts.append("".join(current).strip())
    return [part for part in parts if part]


def _non_negative(value: object) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def _count(value: object) -> int | None:
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if value >= 0 else None
    if isinstance(value, float) and value.is_integer() and value >= 0:
        return int(value)
    return None
