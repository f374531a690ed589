"""What one response may cost the client, and the constants both transports share.

A hostile or broken server must not be able to grow the client's memory without bound or
hold a run open forever: the head, each SSE line and the whole body of one response are
bounded, and every request has a finite deadline.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

MAX_ERROR_BODY_BYTES = 4096  # of a non-2xx body, read for its error message
REJECTED_STATUSES = frozenset({429, 503})  # admission control said no


@dataclass(frozen=True, slots=True)
class ResponseLimits:
    """Per-response bounds; a response over any of them is a ``protocol_error``."""

    max_head_bytes: int = 64 * 1024  # status line and headers, interim responses included
    max_line_bytes: int = 1024 * 1024  # one SSE line, and one event's joined data lines
    max_body_bytes: int = 64 * 1024 * 1024  # the (decoded) body

    def __post_init__(self) -> None:
        for name in ("max_head_bytes", "max_line_bytes", "max_body_bytes"):
            value = getattr(self, name)
            if not isinstance(value, int) or value <= 0:
                raise ValueError(f"{name} must be a positive int, got {value!r}")


def size_text(count: int) -> str:
    """``1 MiB``, ``64 KiB``, ``300 bytes``: limits as people write them."""
    for unit, size in (("MiB", 1024 * 1024), ("KiB", 1024)):
        if count >= size and count % size == 0:
            return f"{count // size} {unit}"
    return f"{count} bytes"


def check_deadline(timeout_s: float) -> None:
    """Every request deadline is finite: a run must end by itself."""
    if not (math.isfinite(timeout_s) and timeout_s > 0):
        raise ValueError(f"the request timeout must be finite and > 0, got {timeout_s!r}")
