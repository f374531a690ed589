"""W3C trace context for outgoing requests: one small seam.

Every request carries a ``traceparent`` header so server spans can be joined to the
client record by trace id. A later issue replaces this with OpenTelemetry client
spans; only :func:`new_traceparent` needs to change.
"""

from __future__ import annotations

import os

_ZERO_TRACE = "0" * 32
_ZERO_SPAN = "0" * 16


def new_traceparent() -> tuple[str, str]:
    """A fresh random ``(trace_id, traceparent)``; the trace id is 32 lowercase hex digits.

    The header is ``00-<trace id>-<span id>-01`` (version 00, sampled). All-zero ids are
    invalid in W3C trace context and are redrawn.
    """
    while True:
        raw = os.urandom(24).hex()
        trace_id, span_id = raw[:32], raw[32:]
        if trace_id != _ZERO_TRACE and span_id != _ZERO_SPAN:
            return trace_id, f"00-{trace_id}-{span_id}-01"
