"""Which run of one file is which run of another, as ``--latency-baseline`` matches them.

Runs are paired by key (``baseline_key``: a spec's ``id:``, or its file relative to the
project root plus the test name). The same test run from another checkout or working
directory may carry the path from another root (``specs/chat.slo.yaml::chat`` and
``c2/specs/chat.slo.yaml::chat``): :func:`pytest_latency.keys.match_key` accepts that
when the test name is the same and one path ends with the other, and only when exactly
one key could be it. ``pytest-latency compare`` says which runs it paired and which it
could not.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from pytest_latency.errors import BaselineKeyError
from pytest_latency.keys import match_key


@dataclass(frozen=True, slots=True)
class Pairing:
    """Keys of A paired with keys of B, and those left over on each side (with why)."""

    pairs: tuple[tuple[str, str], ...]
    only_a: tuple[str, ...]
    only_b: tuple[str, ...]
    ambiguous: tuple[str, ...] = ()  # why an A key was left unpaired though B has candidates


def pair_keys(a_keys: Sequence[str], b_keys: Sequence[str]) -> Pairing:
    """Pair every key of A with B's: the same key first, then the same test from another
    root (one candidate only). A's order is kept."""
    exact = set(a_keys) & set(b_keys)
    free_b = [key for key in b_keys if key not in exact]
    pairs: dict[str, str] = {key: key for key in a_keys if key in exact}
    ambiguous: list[str] = []
    for key in a_keys:
        if key in exact:
            continue
        try:
            found = match_key(key, free_b, "B")
        except BaselineKeyError as error:
            if "several" in str(error):
                ambiguous.append(f"{key}: {error}")
            continue
        pairs[key] = found
        free_b.remove(found)
    return Pairing(
        tuple((key, pairs[key]) for key in a_keys if key in pairs),
        tuple(key for key in a_keys if key not in pairs),
        tuple(key for key in b_keys if key not in pairs.values()),
        tuple(ambiguous),
    )
