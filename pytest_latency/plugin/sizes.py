"""Byte sizes as people write them in flags and ini files: ``64KiB``, ``8 MiB``, ``4096``.

Binary units only (KiB = 1024 bytes): ``64KB`` is refused rather than guessed, since
"KB" means 1000 to some readers and 1024 to others. Imported by the options table, so
it stays a leaf module.
"""

from __future__ import annotations

import re

_SIZE = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)\s*(b|bytes?|kib|mib|gib)?\s*$", re.IGNORECASE)
_UNIT_BYTES = {"b": 1, "byte": 1, "bytes": 1, "kib": 1024, "mib": 1024**2, "gib": 1024**3}
_EXPECTED = "expected a size such as 64KiB, 8MiB or a number of bytes"


def parse_size(value: str, *, maximum: int) -> int:
    """Whole bytes from ``64KiB``, ``1.5MiB``, ``300`` (bytes); at least 1, at most
    ``maximum``; ValueError saying what was expected otherwise."""
    match = _SIZE.match(value)
    if match is None:
        raise ValueError(f"{_EXPECTED}, got {value!r}")
    unit = (match.group(2) or "b").lower()
    count = float(match.group(1)) * _UNIT_BYTES[unit]
    if count != int(count):
        raise ValueError(f"not a whole number of bytes: {value!r}")
    if not 1 <= count <= maximum:
        raise ValueError(f"must be between 1 byte and {maximum // 1024**3} GiB, got {value!r}")
    return int(count)
