"""Baseline keys: which stored run a new run is compared with, whatever pytest's rootdir.

A run's key is its test file relative to the **project root**, then pytest's test name
(``tests/chat.slo.yaml::chat``, ``tests/test_chat.py::TestChat::test_steady[8]``), or an
explicit id: a spec's top-level ``id:``, ``latency.run(..., id="checkout")``. Later runs
of one key in one session get ``#2``, ``#3``...

The project root is, in order: the folder of pytest's configuration file (when the test
file lies under it); else the nearest folder above the test file holding one of
:data:`PROJECT_MARKERS`; else pytest's rootdir. Pytest's rootdir alone moves with the
command line (a path-like argument such as ``--latency-baseline ../x/base.json`` can make
a parent folder the rootdir); these do not.

Files saved before keys were project-relative hold test ids relative to the rootdir of
that session. :func:`match_key` accepts one of those when it names the same test and its
path is a suffix of the key's path (or the other way round), and only when exactly one
stored key does. This module imports nothing heavy and no pytest.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pytest_latency.errors import BaselineKeyError

PROJECT_MARKERS = ("pyproject.toml", "setup.cfg", "tox.ini", "pytest.ini", "setup.py", ".git")
_SEPARATOR = "::"
REPEAT_MARK = "#"


def project_root(test_file: Path, inipath: Path | None, rootpath: Path) -> Path:
    """The folder baseline keys are relative to (see the module docstring)."""
    test_file = test_file.resolve()
    if inipath is not None and test_file.is_relative_to(inipath.resolve().parent):
        return inipath.resolve().parent
    for folder in test_file.parents:
        if any((folder / marker).exists() for marker in PROJECT_MARKERS):
            return folder
    return rootpath.resolve()


def key_for_test(root: Path, test_file: Path, nodeid: str, explicit_id: str | None = None) -> str:
    """A test's key: ``explicit_id``, else its file relative to ``root`` and its name.

    The name is the part of pytest's node id after the file (class, function, parameters,
    or a spec file's test name), which does not depend on the rootdir.
    """
    if explicit_id is not None:
        return check_id(explicit_id)
    name = nodeid.split(_SEPARATOR, 1)[1] if _SEPARATOR in nodeid else test_file.name
    try:
        where = test_file.resolve().relative_to(root).as_posix()
    except ValueError:  # outside the project (a file given by absolute path): its node id
        return nodeid
    return f"{where}{_SEPARATOR}{name}"


def check_id(value: object) -> str:
    """An explicit baseline id: non-empty text without ``#`` (repeats are numbered with it)."""
    if not isinstance(value, str) or not value.strip() or value != value.strip():
        raise ValueError(f"an id must be non-empty text without surrounding spaces, got {value!r}")
    if REPEAT_MARK in value:
        raise ValueError(f"an id must not contain {REPEAT_MARK!r} (it numbers repeats): {value!r}")
    return value


def numbered(keys: Iterable[str]) -> list[str]:
    """Each key as stored: the key, with ``#2``, ``#3``... for its later occurrences."""
    seen: dict[str, int] = {}
    result = []
    for key in keys:
        seen[key] = seen.get(key, 0) + 1
        result.append(key if seen[key] == 1 else f"{key}{REPEAT_MARK}{seen[key]}")
    return result


def _split(key: str) -> tuple[str, str] | None:
    if _SEPARATOR not in key:
        return None
    path, name = key.split(_SEPARATOR, 1)
    return path, name


def _same_test(stored: str, key: str) -> bool:
    """Whether a stored path-style key names ``key``'s test from another rootdir."""
    old, new = _split(stored), _split(key)
    if old is None or new is None or old[1] != new[1]:
        return False
    a, b = old[0], new[0]
    return a == b or a.endswith("/" + b) or b.endswith("/" + a)


def match_key(key: str, stored: Iterable[str], where: str) -> str:
    """The stored key that holds ``key``'s runs; BaselineKeyError naming what ``where`` holds."""
    known = sorted(stored)
    if key in known:
        return key
    candidates = [old for old in known if _same_test(old, key)]
    if len(candidates) == 1:
        return candidates[0]
    if candidates:
        raise BaselineKeyError(
            f"{where} holds several runs that could be {key!r} ({', '.join(candidates)});"
            " save the baseline again, or give the test an explicit id"
        )
    shown = ", ".join(known[:20]) + (f", ... ({len(known)} keys)" if len(known) > 20 else "")
    raise BaselineKeyError(
        f"{where} holds no run for {key!r} (it holds: {shown or 'no runs'}). Keys are the"
        " test file relative to the project root plus the test name, or an explicit id"
        " (a spec's id:, latency.run(..., id=...)); save a baseline that includes this test"
    )
