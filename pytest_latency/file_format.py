"""The ``pytest-latency/1`` document: its envelope, and how it is laid out as bytes.

A document is ``{"schema", "plugin_version", "runs": [...]}`` (docs/json.md); what a run
and its requests hold is :mod:`pytest_latency.records`' part. Indented JSON, except each
run's ``requests``: one compact line per request, so a large file stays small and usable
with ``grep``. A file whose name ends in ``.gz`` is gzipped; reading recognises gzip by
its first bytes, whatever the name. The readers of a JSON object's fields check each
value against its field's type.

A saved file may be hostile or broken: reading caps its size (:data:`MAX_FILE_BYTES`,
raw and decompressed, decompressed in bounded steps), and a truncated gzip, a bad
compressed stream, invalid UTF-8 or JSON nested thousands deep is a
:class:`~pytest_latency.errors.RunFileError`, never a crash. Writing goes through a
temporary file of a unique name (``mkstemp``) in the target's folder, then a rename.
"""

from __future__ import annotations

import contextlib
import functools
import gzip
import importlib.metadata
import json
import math
import os
import secrets
import tempfile
import zlib
from collections.abc import Callable, Iterable, Iterator, Mapping
from enum import StrEnum
from pathlib import Path
from types import UnionType
from typing import IO, Any, Literal, Union, get_args, get_origin

from pytest_latency.errors import RunFileError
from pytest_latency.inflate import GZIP_WBITS, BoundedInflater, InflateLimitError

RUN_SCHEMA = "pytest-latency/1"
# Baselines written before one format served both (read, never written).
_LEGACY_BASELINE_SCHEMA = "pytest-latency-baseline/1"
_GZIP_MAGIC = b"\x1f\x8b"
#: The largest run file read, raw or decompressed (a 10,000-request run is about 5 MB).
MAX_FILE_BYTES = 256 * 1024 * 1024
_UNREADABLE = (OSError, ValueError, EOFError, zlib.error, RecursionError, MemoryError)


def read_run_objects(path: Path) -> list[object]:
    """The ``runs`` of a ``pytest-latency/1`` file (gzipped or not) in file order, each as
    the JSON value it is (:func:`pytest_latency.records.read_runs` checks them).

    RunFileError names the file and what is wrong with it.
    """
    problem: str | None = None
    try:
        if path.stat().st_size > MAX_FILE_BYTES:
            raise ValueError(f"larger than {MAX_FILE_BYTES >> 20} MiB")
        document = decode(path.read_bytes())
    except FileNotFoundError:
        problem = "no such file"
    except _UNREADABLE as error:  # raised outside: no traceback chain holding the data
        problem = f"not a readable JSON file ({type(error).__name__}: {str(error)[:200]})"
    if problem is not None:
        raise RunFileError(f"{path}: {problem}")
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
    small); a name ending in ``.gz`` is gzipped; a non-finite number is written as null.
    OSError leaves any earlier file as it was.
    """
    document = {"schema": RUN_SCHEMA, "plugin_version": plugin_version(), "runs": list(runs)}
    data = encode(document, gzipped=path.name.endswith(".gz"))
    write_atomically(path, data)


def write_atomically(path: Path, data: bytes) -> None:
    """``data`` to ``path`` through a temporary file, then a rename (see :func:`replacing`)."""
    with replacing(path, "wb") as handle:
        handle.write(data)


@contextlib.contextmanager
def replacing(path: Path, mode: Literal["w", "wb"] = "w") -> Iterator[IO[Any]]:
    """A file handle whose content replaces ``path`` when the block ends without error.

    The temporary file beside it has a unique name (``mkstemp``: never a fixed name that
    another writer or a planted link could own); the folder is created if missing. Text
    mode is UTF-8 with newlines written as given."""
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        if mode == "wb":
            with os.fdopen(handle, "wb") as binary:
                yield binary
        else:
            with os.fdopen(handle, "w", encoding="utf-8", newline="") as text:
                yield text
        os.replace(name, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(name)
        raise


def encode(document: Mapping[str, Any], *, gzipped: bool = False) -> bytes:
    """The document's bytes, strict JSON: a non-finite number (JSON has none) is written
    as ``null``, so one bad value never costs the whole file."""
    try:
        text = _dumps(document)
    except ValueError:  # rare: only then is the document walked
        text = _dumps(finite_or_null(document))
    data = text.encode("utf-8")
    return gzip.compress(data, mtime=0) if gzipped else data


def finite_or_null(value: Any) -> Any:
    """``value`` with every non-finite float (inf, nan) replaced by None, at any depth."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, Mapping):
        return {key: finite_or_null(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [finite_or_null(item) for item in value]
    return value


def decode(data: bytes, max_bytes: int = MAX_FILE_BYTES) -> Any:
    """The JSON value in ``data``, gzipped or not, at most ``max_bytes`` decompressed.

    ValueError (a cap, bad UTF-8 or JSON), EOFError (a truncated gzip), zlib.error or
    RecursionError (JSON nested too deep) when unreadable."""
    if data.startswith(_GZIP_MAGIC):
        data = _gunzip(data, max_bytes)
    return json.loads(data.decode("utf-8"))


def _gunzip(data: bytes, max_bytes: int) -> bytes:
    """Every gzip member of ``data``, decompressed in bounded steps."""
    pieces: list[bytes] = []
    total = 0
    while data:
        inflater = BoundedInflater(GZIP_WBITS, max_bytes - total)
        try:
            pieces += inflater.feed(data)
            pieces += inflater.finish()
        except InflateLimitError:
            pieces.clear()
            raise ValueError(f"decompresses to more than {max_bytes >> 20} MiB") from None
        if not inflater.eof:
            pieces.clear()
            raise EOFError("truncated gzip data")
        total = sum(map(len, pieces))
        data = inflater.unused_data.lstrip(b"\0")  # another member, or zero padding
    return b"".join(pieces)


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


def same_file(a: Path, b: Path) -> bool:
    """Whether two paths name one file: the same resolved path (links followed), or the
    same existing file under two names (a hard link)."""
    if a.resolve() == b.resolve():
        return True
    try:
        return os.path.samefile(a, b)
    except OSError:  # one does not exist (yet): only the resolved paths can tell
        return False


def clashing_paths(
    inputs: Iterable[tuple[str, Path | None]], outputs: Iterable[tuple[str, Path | None]]
) -> str | None:
    """Why these outputs cannot be written: one names an input's file or another
    output's; None when every output has a file of its own. Each pair is (flag, path)."""
    given_inputs = [(flag, path) for flag, path in inputs if path is not None]
    seen: list[tuple[str, Path]] = []
    for flag, path in outputs:
        if path is None:
            continue
        for other_flag, other in given_inputs:
            if same_file(path, other):
                return f"{flag} {path} would replace the input {other_flag} {other}"
        for other_flag, other in seen:
            if same_file(path, other):
                return f"{other_flag} and {flag} name the same file {path}"
        seen.append((flag, path))
    return None


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
