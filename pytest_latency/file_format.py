"""The ``pytest-latency/1`` document: its envelope, and how it is laid out as bytes.

A document is ``{"schema", "plugin_version", "runs": [...]}`` (docs/json.md); what a run
and its requests hold is :mod:`pytest_latency.records`' part. Indented JSON, except each
run's ``requests``: one compact line per request, so a large file stays small and usable
with ``grep``. A file whose name ends in ``.gz`` is gzipped; reading recognises gzip by
its first bytes, whatever the name. The readers of a JSON object's fields check each
value against its field's type. Imports nothing of ours but the errors.
"""

from __future__ import annotations

import functools
import gzip
import importlib.metadata
import json
import math
import secrets
from collections.abc import Callable, Iterable, Mapping
from enum import StrEnum
from pathlib import Path
from types import UnionType
from typing import Any, Literal, Union, get_args, get_origin

from pytest_latency.errors import RunFileError

RUN_SCHEMA = "pytest-latency/1"
# Baselines written before one format served both (read, never written).
_LEGACY_BASELINE_SCHEMA = "pytest-latency-baseline/1"
_GZIP_MAGIC = b"\x1f\x8b"


def read_run_objects(path: Path) -> list[object]:
    """The ``runs`` of a ``pytest-latency/1`` file (gzipped or not) in file order, each as
    the JSON value it is (:func:`pytest_latency.records.read_runs` checks them).

    RunFileError names the file and what is wrong with it.
    """
    try:
        document = decode(path.read_bytes())
    except FileNotFoundError:
        raise RunFileError(f"{path}: no such file") from None
    except (OSError, ValueError) as error:
        raise RunFileError(f"{path}: not a readable JSON file ({error})") from None
    if not isinstance(document, dict) or document.get("schema") not in (
        RUN_SCHEMA,
        _LEGACY_BASELINE_SCHEMA,
    ):
        raise RunFileError(f"{path}: not a pytest-latency file (schema {RUN_SCHEMA} expected)")
    runs = document.get("runs")
    if isinstance(runs, dict):  # the legacy baseline layout: runs keyed by test
        runs = [{"test": key, **value} for key, value in runs.items() if isinstance(value, dict)]
    if not isinstance(runs, list):
        raise RunFileError(f"{path}: 'runs' must be a list")
    return runs


def write_runs(path: Path, runs: Iterable[Mapping[str, Any]]) -> None:
    """Write a ``pytest-latency/1`` document atomically; the folder is created if missing.

    Each request is one line (a 10,000-request run stays readable with ``grep`` and
    small); a name ending in ``.gz`` is gzipped. OSError or ValueError (a non-finite
    number) leave any earlier file as it was.
    """
    document = {"schema": RUN_SCHEMA, "plugin_version": plugin_version(), "runs": list(runs)}
    data = encode(document, gzipped=path.name.endswith(".gz"))
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_bytes(data)
    tmp.replace(path)


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


# Reads one field of a JSON object: (row, name, required) -> its value, or None when it is
# absent (or null) and not required; ValueError naming the field when it is the wrong type.
FieldReader = Callable[[Mapping[str, Any], str, bool], Any]


def read_integer(row: Mapping[str, Any], name: str, required: bool) -> int | None:
    value = row.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, int) or isinstance(value, bool):
        raise ValueError(f"{name} must be an integer, got {value!r}")
    return value


def read_number(row: Mapping[str, Any], name: str, required: bool) -> float | None:
    value = row.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, int | float) or isinstance(value, bool) or not math.isfinite(value):
        raise ValueError(f"{name} must be a finite number, got {value!r}")
    return float(value)


def read_text(row: Mapping[str, Any], name: str, required: bool) -> str | None:
    value = row.get(name)
    if value is None and not required:
        return None
    if not isinstance(value, str):
        raise ValueError(f"{name} must be a string, got {value!r}")
    return value


def read_integer_list(row: Mapping[str, Any], name: str, required: bool) -> list[int] | None:
    value = row.get(name)
    if value is None and not required:
        return None
    # A set of the items' types, not a check per item (as for the gaps: rows are many).
    if not isinstance(value, list) or not {type(item) for item in value} <= {int}:
        raise ValueError(f"{name} must be a list of integers, got {value!r:.80}")
    return value


_READ_BY_TYPE: dict[object, FieldReader] = {
    int: read_integer,
    float: read_number,
    str: read_text,
    list[int]: read_integer_list,
}


def field_reader(hint: object, where: str) -> FieldReader:
    """The reader of a field of type ``hint``: an int, float, str, list of ints, ``Literal``
    of strings or ``StrEnum``, or ``X | None`` of one (whose None the ``required`` flag decides).
    TypeError naming ``where`` for any other type: a field JSON cannot be checked into."""
    if get_origin(hint) in (Union, UnionType):
        (hint,) = (arg for arg in get_args(hint) if arg is not type(None))
    if get_origin(hint) is Literal:
        return _one_of(get_args(hint), " or ".join(get_args(hint)))
    if isinstance(hint, type) and issubclass(hint, StrEnum):
        return _one_of(tuple(hint), f"one of {', '.join(hint)}", convert=hint)
    read = _READ_BY_TYPE.get(hint)
    if read is None:
        raise TypeError(f"{where}: no JSON reader for {hint!r}")
    return read


def _one_of(
    allowed: tuple[str, ...], described: str, convert: Callable[[str], Any] = str
) -> FieldReader:
    def read(row: Mapping[str, Any], name: str, required: bool) -> Any:
        value = row.get(name)
        if value is None and not required:
            return None
        if value not in allowed:
            raise ValueError(f"{name} must be {described}, got {value!r}")
        return convert(value)

    return read
