"""Every file pytest-latency writes matches docs/schema/pytest-latency-1.json.

:func:`assert_valid_run_file` checks one file; the session fixture in conftest.py calls
:func:`invalid_files` on every JSON file the plugin wrote under pytest's temporary
folders (those carrying ``plugin_version``: files the tests write by hand to exercise
readers are theirs to shape).
"""

from __future__ import annotations

import gzip
import json
from functools import cache
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

SCHEMA_PATH = Path(__file__).resolve().parents[2] / "docs" / "schema" / "pytest-latency-1.json"


@cache
def validator() -> Draft202012Validator:
    schema = json.loads(SCHEMA_PATH.read_text())
    Draft202012Validator.check_schema(schema)
    return Draft202012Validator(schema)


def load(path: Path) -> Any:
    data = path.read_bytes()
    if data.startswith(b"\x1f\x8b"):
        data = gzip.decompress(data)
    return json.loads(data)


def problems(document: Any, limit: int = 5) -> list[str]:
    """The first ``limit`` schema violations, each with where in the document it is."""
    found = []
    for top in validator().iter_errors(document):
        error = best_match([top])  # inside a oneOf, the branch that came closest
        where = "/".join(map(str, error.absolute_path)) or "(top)"
        found.append(f"{where}: {error.message[:300]}")
        if len(found) >= limit:
            break
    return found


def assert_valid_run_file(path: Path) -> Any:
    """The document in ``path``, after checking it against the schema."""
    document = load(path)
    found = problems(document)
    assert not found, f"{path} does not match {SCHEMA_PATH.name}:\n  " + "\n  ".join(found)
    return document


def written_by_the_plugin(path: Path) -> Any | None:
    """The document when ``path`` is a file the plugin wrote, else None."""
    try:
        document = load(path)
    except (OSError, ValueError):
        return None
    plugin_written = isinstance(document, dict) and "plugin_version" in document
    return document if plugin_written and document.get("schema") == "pytest-latency/1" else None


def invalid_files(folder: Path) -> list[str]:
    """Every plugin-written JSON file under ``folder`` that breaks the schema, with why."""
    failures = []
    for path in sorted([*folder.rglob("*.json"), *folder.rglob("*.json.gz")]):
        document = written_by_the_plugin(path)
        if document is None:
            continue
        found = problems(document, limit=3)
        if found:
            failures.append(f"{path}:\n    " + "\n    ".join(found))
    return failures
