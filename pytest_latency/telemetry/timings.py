"""Server-reported per-request durations, joined to client records by W3C trace id.

Every value is a duration the *server* measured on its own clock, in seconds; ``None``
means the server did not report it. Nothing here is derived by subtracting timestamps
from different machines, and nothing is attributed that the server did not attribute:
when a server reports only "inference" (prefill and decode together), ``prefill_s`` and
``decode_s`` stay ``None`` and the undivided value goes to ``inference_s``.
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

__all__ = ("DURATION_FIELDS", "TOKEN_FIELDS", "ServerTimings")

#: The duration fields, in seconds.
DURATION_FIELDS: tuple[str, ...] = (
    "queue_wait_s",
    "prefill_s",
    "decode_s",
    "server_ttft_s",
    "server_e2e_s",
    "inference_s",
)
#: The token-count fields.
TOKEN_FIELDS: tuple[str, ...] = ("prompt_tokens", "completion_tokens")


@dataclass(frozen=True, slots=True)
class ServerTimings:
    """What one server said about one request.

    ``source`` names where the values came from: ``otlp:vllm``, ``otlp:tgi``,
    ``otlp:sglang``, ``otlp:gen_ai`` (any span with ``gen_ai.latency.*`` attributes),
    ``server-timing`` (HTTP ``Server-Timing`` header) or ``llamacpp:timings``. A value
    merged from several sources joins their names with ``+``.

    ``inference_s`` is time in the model, prefill and decode together, for servers that
    do not split it (TGI's ``inference_time``, vLLM's ``time_in_model_inference``).
    """

    trace_id: str
    source: str
    queue_wait_s: float | None = None
    prefill_s: float | None = None
    decode_s: float | None = None
    server_ttft_s: float | None = None
    server_e2e_s: float | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    inference_s: float | None = None

    @property
    def is_empty(self) -> bool:
        """True when no duration and no token count is set."""
        return all(getattr(self, name) is None for name in (*DURATION_FIELDS, *TOKEN_FIELDS))

    def merged(self, other: ServerTimings) -> ServerTimings:
        """Fill this value's ``None`` fields from ``other``; values already set win.

        Raises ``ValueError`` when the trace ids differ. The source becomes
        ``"a+b"`` when ``other`` contributed at least one field under another name.
        """
        if other.trace_id != self.trace_id:
            raise ValueError(f"cannot merge trace {other.trace_id} into {self.trace_id}")
        updates: dict[str, Any] = {}
        for f in fields(self):
            if f.name in ("trace_id", "source"):
                continue
            if getattr(self, f.name) is None and getattr(other, f.name) is not None:
                updates[f.name] = getattr(other, f.name)
        if not updates:
            return self
        updates["source"] = _join_sources(self.source, other.source)
        return replace(self, **updates)

    def as_dict(self) -> dict[str, Any]:
        """A plain dict of every field (for JSON reports)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def _join_sources(first: str, second: str) -> str:
    parts = [p for p in first.split("+") if p]
    for p in second.split("+"):
        if p and p not in parts:
            parts.append(p)
    return "+".join(parts)
