"""Data files a spec points at (traces, prompt datasets): read line by line, errors at file:line.

A data file's error names the data file, the line and the key, like a spec file's:
``trace.jsonl:12: input_length: must be a whole number >= 1, got -3``. Files are read as
a stream and hashed on the way (the digest goes into the workload's fingerprint, so a
changed file never matches an old baseline), so a large file costs only what is kept.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

from pytest_latency.errors import SpecError

MAX_TOKENS = 1_000_000  # input or output tokens of one request (docs/specs.md "Limits")


class DataFileError(SpecError):
    """A trace or dataset file is invalid: ``path:line: key: problem``."""

    def __init__(self, path: Path, line: int, key: str, problem: str) -> None:
        self.path, self.line, self.key, self.problem = path, line, key, problem
        super().__init__(f"{path}:{line}: {key}: {problem}")


class DigestingReader:
    """The lines of a UTF-8 text file, numbered from 1; ``sha256`` once read to the end."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._hash = hashlib.sha256()

    def lines(self) -> Iterator[tuple[int, str]]:
        try:
            with self.path.open("rb") as stream:
                for number, raw in enumerate(stream, start=1):
                    self._hash.update(raw)
                    try:
                        yield number, raw.decode("utf-8")
                    except UnicodeDecodeError:
                        raise DataFileError(self.path, number, "(file)", "not UTF-8") from None
        except FileNotFoundError:
            raise DataFileError(self.path, 1, "(file)", "no such file") from None
        except IsADirectoryError:
            raise DataFileError(self.path, 1, "(file)", "is a folder, not a file") from None
        except OSError as error:
            raise DataFileError(self.path, 1, "(file)", f"cannot read ({error})") from None

    @property
    def sha256(self) -> str:
        return self._hash.hexdigest()


def json_line(path: Path, number: int, text: str) -> dict[str, object]:
    """One JSON Lines record, which must be an object."""
    try:
        value = json.loads(text)
    except ValueError as error:
        raise DataFileError(path, number, "(json)", f"not valid JSON ({error})") from None
    if not isinstance(value, dict):
        raise DataFileError(path, number, "(json)", "expected a JSON object on each line")
    return value


def whole_number(
    path: Path, number: int, key: str, value: object, low: int = 0, high: int | None = None
) -> int:
    """A whole number in ``[low, high]`` (JSON 3.0 counts as 3; true/false do not)."""
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise DataFileError(path, number, key, f"must be a whole number >= {low}, got {value!r}")
    if high is not None and value > high:
        raise DataFileError(path, number, key, f"must be at most {high:,}, got {value:,}")
    return value
