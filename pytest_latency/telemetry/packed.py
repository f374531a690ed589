""":class:`ServerTimings` packed into ``bytes`` for the store: invisible to the GC.

A stored ``ServerTimings`` is an object the cyclic garbage collector tracks; tens of
thousands of them (a flood of spans, a long run) made each collection walk them, and
every collection holds the GIL: 10-50 ms stalls of the driving loop while spans arrived.
``bytes`` are never tracked, and a dict of strings to bytes is not either, so the store
costs collections nothing however full it is. Unpacked only when read (the join).
"""

from __future__ import annotations

import math
import struct

from pytest_latency.telemetry.timings import DURATION_FIELDS, TOKEN_FIELDS, ServerTimings

_LAYOUT = struct.Struct(f"<{len(DURATION_FIELDS)}d{len(TOKEN_FIELDS)}q")
_NO_COUNT = -1
_MAX_COUNT = 2**63 - 1


def pack(timings: ServerTimings) -> bytes:
    """The timings' values (None as NaN or -1; a count past int64 as None) and source."""
    durations = [
        math.nan if (v := getattr(timings, name)) is None else v for name in DURATION_FIELDS
    ]
    counts = []
    for name in TOKEN_FIELDS:
        value = getattr(timings, name)
        counts.append(value if value is not None and 0 <= value <= _MAX_COUNT else _NO_COUNT)
    return _LAYOUT.pack(*durations, *counts) + timings.source.encode("utf-8")


def unpack(trace_id: str, data: bytes) -> ServerTimings:
    values = _LAYOUT.unpack_from(data)
    durations = values[: len(DURATION_FIELDS)]
    counts = values[len(DURATION_FIELDS) :]
    fields: dict[str, float | int | None] = {
        name: None if math.isnan(value) else value
        for name, value in zip(DURATION_FIELDS, durations, strict=True)
    }
    fields.update(
        (name, None if value == _NO_COUNT else value)
        for name, value in zip(TOKEN_FIELDS, counts, strict=True)
    )
    source = data[_LAYOUT.size :].decode("utf-8")
    return ServerTimings(trace_id, source, **fields)  # type: ignore[arg-type]
