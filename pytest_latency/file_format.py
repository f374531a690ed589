"""How ``pytest-latency/1`` documents are laid out as bytes (docs/json.md).

Indented JSON, except each run's ``requests``: one compact line per request, so a large
file stays small and usable with ``grep``. A file whose name ends in ``.gz`` is gzipped;
reading recognises gzip by its first bytes, whatever the name. Imports nothing of ours.
"""

from __future__ import annotations

import functools
import gzip
import importlib.metadata
import json
import secrets
from collections.abc import Mapping
from typing import Any

_GZIP_MAGIC = b"\x1f\x8b"


def encode(document: Mapping[str, Any], *, gzipped: bool = False) -> bytes:
    """The document's bytes; ValueError for a non-finite number (JSON has none)."""
    data = _dumps(document).encode("utf-8")
    return gzip.compress(data, mtime=0) if gzipped else data


def decode(data: bytes) -> Any:
    """The JSON value in ``data``, gzipped or not; ValueError or OSError if unreadable."""
    if data.startswith(_GZIP_MAGIC):
        data = gzip.decompress(data)
    return json.loads(data.decode("utf-8"))


def _dumps(document: Mapping[str, Any]) -> str:
    """The document indented, except each run's ``requests``: one compact line per row."""
    token = secrets.token_hex(8)  # a placeholder no value in the document can equal
    shells, placeholders = [], []
    for index, run in enumerate(document["runs"]):
        rows = run.get("requests")
        if isinstance(rows, list) and rows:
            placeholder = f"@requests-{token}-{index}"
            run = {**run, "requests": placeholder}
            placeholders.append((json.dumps(placeholder), rows))
        shells.append(run)
    text = json.dumps({**document, "runs": shells}, indent=1, allow_nan=False)
    parts = []
    for placeholder, rows in placeholders:
        before, text = text.split(placeholder, 1)
        lines = ",\n".join(json.dumps(row, separators=(",", ":"), allow_nan=False) for row in rows)
        parts += [before, "[\n", lines, "\n]"]
    return "".join([*parts, text]) + "\n"


@functools.cache
def plugin_version() -> str:
    """The installed pytest-latency's version (``unknown`` when it is not installed)."""
    try:
        return importlib.metadata.version("pytest-latency")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"
